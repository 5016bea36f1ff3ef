"""One MuZero training run as a generator of per-step metrics (the runner's entry point).

Seeding lives here only: :class:`RunSeeds` draws, from one ``np.random.default_rng(seed)``,
independent seeds and generators for the self-play environments, the evaluation environments,
the network initialisers, acting, replay sampling and evaluation. Nothing uses global random
state. :func:`train` is its steps in order: the networks' sizes, the seeds, the environments,
the agent (new or kept), the replay's warm-up, then the training loop (:func:`_training_steps`).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Iterator

import numpy as np

from experiments.gradients import Placement, Variant
from experiments.muzero.agents import Agent, AgentCache
from experiments.muzero.config import MuZeroConfig, NetworkConfig
from experiments.muzero.learner import Learner
from experiments.muzero.networks import Networks
from experiments.muzero.replay import Batch, ReplayBuffer
from experiments.muzero.runtime.batches import Batches
from experiments.muzero.runtime.compiled_call import copies_available
from experiments.muzero.runtime.deferred import DeferredEvaluations
from experiments.muzero.runtime.graph_store import GraphStore
from experiments.muzero.selfplay import Inference, SelfPlay, evaluate
from experiments.muzero.support import resolve_support_sizes
from experiments.tasks import TaskConfig, VectorEnv, make_env

__all__ = ["RunSeeds", "train"]


@dataclasses.dataclass(frozen=True)
class RunSeeds:
    """The independent random streams of one run, all drawn from its one seed.

    Attributes:
      env, evaluation_env, networks: integer seeds of the self-play environments, the evaluation
        environments and the network initialisers.
      acting, sampling, evaluating: generators of self-play's search and action choice, of replay
        sampling, and of evaluation's search.
    """

    env: int
    evaluation_env: int
    networks: int
    acting: np.random.Generator
    sampling: np.random.Generator
    evaluating: np.random.Generator

    @classmethod
    def from_seed(cls, seed: int) -> RunSeeds:
        """Three integer seeds drawn from ``np.random.default_rng(seed)``, then three spawned
        generators, in that order (the order fixes every number of a run)."""
        root = np.random.default_rng(seed)
        env, evaluation_env, networks = (int(root.integers(0, 2**31 - 1)) for _ in range(3))
        acting, sampling, evaluating = root.spawn(3)
        return cls(env, evaluation_env, networks, acting, sampling, evaluating)


def train(
    config: MuZeroConfig,
    task: TaskConfig,
    variant: Variant,
    placement: Placement,
    *,
    seed: int,
    cache: AgentCache | None = None,
    overlap: bool = True,
) -> Iterator[dict[str, float]]:
    """Trains MuZero on ``task`` with ``variant`` at ``placement``; yields one dict per step.

    Every ``config.selfplay_interval`` updates, all self-play environments make one batched move
    (``config.warmup_steps`` moves before the first update). Keys of each row: ``step``,
    ``loss/*``, ``grad/*`` (``grad/hidden_depth_{k}`` for k = 0..K), ``hidden/norm_depth_{k}``,
    ``nonfinite``, ``env/steps``, ``time/elapsed_s``; ``selfplay/return`` when episodes ended
    since the previous row; ``eval/return`` every ``config.eval_every`` steps and at the last.

    Rewards (so returns and targets) are the task's times ``task.reward_scale``. Support sizes
    left ``None`` are sized from the task, and explicit ones that do not cover it are refused
    (:func:`~experiments.muzero.support.resolve_support_sizes`, ``ConfigError``).

    ``cache``: where the agent (networks, compiled train step and search) is kept for the next
    run of the same configuration in this process, which restarts it for its seed instead of
    tracing and compiling again (:class:`~experiments.muzero.agents.AgentCache`); the numbers
    are the same either way.

    ``overlap``: work that does not feed the next training step runs on worker threads beside
    it: the next step's batch is sampled while a step trains, when no self-play move lies
    between (:class:`~experiments.muzero.runtime.batches.Batches`), and an evaluation plans with
    a copy of its step's weights while training goes on, its row yielded when it is done
    (:class:`~experiments.muzero.runtime.deferred.DeferredEvaluations`). The same rows either
    way, in the same order; faster where a core is free (fewer runs than cores), no slower where
    none is (one run per core, as ``gradlab sweep`` runs them; docs/performance.md).

    The caller may stop iterating at any time; nothing needs cleaning up.
    """
    start = time.perf_counter()
    network_config = _network_config(config, task)
    seeds = RunSeeds.from_seed(seed)
    env = make_env(task, config.num_envs, seed=seeds.env)
    eval_env = make_env(task, config.eval_episodes, seed=seeds.evaluation_env)
    networks = functools.partial(
        _networks, network_config, env=env, variant=variant, seed=seeds.networks
    )
    build = functools.partial(_agent, config=config, variant=variant, placement=placement)
    if cache is None:
        agent = build(networks())
    else:
        key = _cache_key(config, task, variant, placement)
        if cache.graphs is not None and _builtin(variant):
            build = functools.partial(build, graphs=cache.graphs, identity=repr(key))
        agent = cache.agent(key, networks, build)
    replay = ReplayBuffer(
        capacity=config.replay_capacity,
        observation_size=env.observation_size,
        num_actions=env.num_actions,
    )
    actor = SelfPlay(env, agent.inference, replay, config=config, rng=seeds.acting)
    returns = _warm_up(actor, replay, config=config)
    batches = Batches(
        replay,
        sample=functools.partial(_sample, config=config),
        tensors=agent.learner.batch_tensors,
        rng=seeds.sampling,
        ahead=overlap,
    )
    evaluations = _evaluations(
        agent.inference, eval_env, config=config, rng=seeds.evaluating, overlap=overlap
    )
    try:
        rows = _training_steps(config, agent.learner, actor, batches, evaluations, returns)
        for row in rows:
            row["time/elapsed_s"] = time.perf_counter() - start
            yield row
    finally:
        batches.close()
        evaluations.close()


def _network_config(config: MuZeroConfig, task: TaskConfig) -> NetworkConfig:
    """``config.network`` with its support sizes resolved for ``task``."""
    sizes = resolve_support_sizes(task, config.network, discount=config.discount)
    return dataclasses.replace(
        config.network, value_support_size=sizes.value, reward_support_size=sizes.reward
    )


def _networks(
    network_config: NetworkConfig, *, env: VectorEnv, variant: Variant, seed: int
) -> Networks:
    """New networks for ``env``'s observations and actions, initialised from ``seed``."""
    return Networks(
        network_config,
        observation_size=env.observation_size,
        num_actions=env.num_actions,
        seed=seed,
        kernel_constraint=variant.kernel_constraint,
        observation_shape=env.observation_shape,
    )


def _agent(
    nets: Networks,
    *,
    config: MuZeroConfig,
    variant: Variant,
    placement: Placement,
    graphs: GraphStore | None = None,
    identity: str | None = None,
) -> Agent:
    """The learner and the search model around ``nets``; the learner's traced step and the
    searches' traced graphs kept in ``graphs`` under ``identity`` (the agent key's repr) where
    given."""
    learner = Learner(
        nets,
        config=config,
        variant=variant,
        placement=placement,
        graphs=graphs,
        identity=identity,
    )
    # The search plans with the model as trained: the variant's forward transform, if any,
    # sits in its recurrent inference where the learner's unroll puts it.
    inference = Inference(
        nets,
        variant=variant,
        placement=placement,
        jit_compile=config.jit_compile,
        graphs=graphs,
        identity=identity,
    )
    return Agent(learner, inference)


def _cache_key(
    config: MuZeroConfig, task: TaskConfig, variant: Variant, placement: Placement
) -> tuple:
    """What an :class:`~experiments.muzero.agents.AgentCache` keeps an agent by: everything its
    compiled functions depend on, and not the seed."""
    params = tuple(sorted(variant.params.items()))
    return (repr(config), repr(task), variant.name, params, placement.name)


def _builtin(variant: Variant) -> bool:
    """Whether ``variant``'s code is gradlab's own (a registry entry, not a plug-in's): only
    then does a stored graph's key cover it (:func:`~experiments.muzero.runtime.graph_store.
    source_fingerprint` reads the ``experiments`` package alone)."""
    from experiments.gradients import VARIANTS

    return variant.name in VARIANTS.builtins and VARIANTS.plugin(variant.name) is None


def _warm_up(actor: SelfPlay, replay: ReplayBuffer, *, config: MuZeroConfig) -> list[float]:
    """Self-play moves before the first update (a batch's worth of positions in the replay and
    ``config.warmup_steps`` moves of every environment); returns the episodes' returns."""
    returns: list[float] = []
    num_envs = actor.env.num_envs
    while len(replay) < config.batch_size or actor.env_steps < config.warmup_steps * num_envs:
        returns += actor.step(0)
    return returns


def _sample(buffer: ReplayBuffer, rng: np.random.Generator, *, config: MuZeroConfig) -> Batch:
    """One training batch of ``config``'s size, unroll and targets from ``buffer``."""
    return buffer.sample(
        config.batch_size,
        unroll_steps=config.unroll_steps,
        td_steps=config.td_steps,
        discount=config.discount,
        rng=rng,
    )


def _evaluations(
    inference: Inference,
    eval_env: VectorEnv,
    *,
    config: MuZeroConfig,
    rng: np.random.Generator,
    overlap: bool,
) -> DeferredEvaluations:
    """The run's evaluations. Ahead of training they plan with a copy of their step's weights,
    so training goes on meanwhile, where this TensorFlow allows it (``runtime.compiled_call``);
    else in line (the same numbers)."""
    ahead = overlap and copies_available()
    copy = inference.weight_copy() if ahead else None
    evaluation = functools.partial(
        evaluate, inference, eval_env, config=config, rng=rng, weights=copy
    )
    return DeferredEvaluations(
        evaluation, prepare=None if copy is None else copy.refresh, ahead=ahead
    )


def _training_steps(
    config: MuZeroConfig,
    learner: Learner,
    actor: SelfPlay,
    batches: Batches,
    evaluations: DeferredEvaluations,
    returns: list[float],
) -> Iterator[dict[str, float]]:
    """The training loop: self-play moves, one update per step, evaluations; yields each step's
    row (without its time) once its evaluation, if any, is done. ``returns``: the warm-up's."""
    for step in range(1, config.training_steps + 1):
        if (step - 1) % config.selfplay_interval == 0:
            returns += actor.step(step)
        # The following step's batch may be sampled while this one trains unless self-play
        # moves (and so changes the replay) before it.
        following = step < config.training_steps and step % config.selfplay_interval != 0
        batch = batches.next(prepare_following=following)
        row: dict[str, float] = {"step": float(step), **learner.update_tensors(batch)}
        if returns:
            row["selfplay/return"] = float(np.mean(returns))
            returns = []
        if step % config.eval_every == 0 or step == config.training_steps:
            evaluations.add(row, evaluate=True)
        else:
            evaluations.add(row)
        row["env/steps"] = float(actor.env_steps)
        yield from evaluations.ready()
    yield from evaluations.drain()
