"""One MuZero training run as a generator of per-step metrics (the runner's entry point).

Seeding lives here only: one ``np.random.default_rng(seed)`` spawns independent generators for the
self-play environments, the evaluation environments, the network initialisers, acting and
replay sampling. Nothing uses global random state.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator

import numpy as np

from experiments.gradients import Placement, Variant
from experiments.muzero.agents import Agent, AgentCache
from experiments.muzero.config import MuZeroConfig
from experiments.muzero.learner import Learner
from experiments.muzero.networks import Networks
from experiments.muzero.replay import ReplayBuffer
from experiments.muzero.runtime.batches import Batches
from experiments.muzero.runtime.compiled_call import copies_available
from experiments.muzero.runtime.deferred import DeferredEvaluations
from experiments.muzero.selfplay import Inference, SelfPlay, evaluate
from experiments.muzero.support import resolve_support_sizes
from experiments.tasks import TaskConfig, make_env

__all__ = ["train"]


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 2**31 - 1))


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
    sizes = resolve_support_sizes(task, config.network, discount=config.discount)
    network_config = dataclasses.replace(
        config.network, value_support_size=sizes.value, reward_support_size=sizes.reward
    )
    start = time.perf_counter()
    root = np.random.default_rng(seed)
    env_seed, eval_seed, net_seed = (_seed(root) for _ in range(3))
    act_rng, sample_rng, eval_rng = root.spawn(3)

    env = make_env(task, config.num_envs, seed=env_seed)
    eval_env = make_env(task, config.eval_episodes, seed=eval_seed)

    def networks() -> Networks:
        return Networks(
            network_config,
            observation_size=env.observation_size,
            num_actions=env.num_actions,
            seed=net_seed,
            kernel_constraint=variant.kernel_constraint,
            observation_shape=env.observation_shape,
        )

    def build(nets: Networks) -> Agent:
        learner = Learner(nets, config=config, variant=variant, placement=placement)
        # The search plans with the model as trained: the variant's forward transform, if any,
        # sits in its recurrent inference where the learner's unroll puts it.
        inference = Inference(
            nets, variant=variant, placement=placement, jit_compile=config.jit_compile
        )
        return Agent(learner, inference)

    if cache is None:
        agent = build(networks())
    else:
        key = (
            repr(config),
            repr(task),
            variant.name,
            tuple(sorted(variant.params.items())),
            placement.name,
        )
        agent = cache.agent(key, networks, build)
    learner, inference = agent.learner, agent.inference
    replay = ReplayBuffer(
        capacity=config.replay_capacity,
        observation_size=env.observation_size,
        num_actions=env.num_actions,
    )
    actor = SelfPlay(env, inference, replay, config=config, rng=act_rng)

    returns: list[float] = []
    while len(replay) < config.batch_size or actor.env_steps < config.warmup_steps * env.num_envs:
        returns += actor.step(0)

    def sample(buffer: ReplayBuffer, rng: np.random.Generator):
        return buffer.sample(
            config.batch_size,
            unroll_steps=config.unroll_steps,
            td_steps=config.td_steps,
            discount=config.discount,
            rng=rng,
        )

    batches = Batches(
        replay, sample=sample, tensors=learner.batch_tensors, rng=sample_rng, ahead=overlap
    )

    # Evaluations ahead plan with a copy of their step's weights, so training goes on meanwhile,
    # where this TensorFlow allows it (runtime.compiled_call); else in line (the same numbers).
    ahead = overlap and copies_available()
    copy = inference.weight_copy() if ahead else None

    def evaluation() -> float:
        return evaluate(inference, eval_env, config=config, rng=eval_rng, weights=copy)

    evaluations = DeferredEvaluations(
        evaluation, prepare=None if copy is None else copy.refresh, ahead=ahead
    )

    def stamped(row: dict[str, float]) -> dict[str, float]:
        row["time/elapsed_s"] = time.perf_counter() - start
        return row

    try:
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
            for ready in evaluations.ready():
                yield stamped(ready)
        for ready in evaluations.drain():
            yield stamped(ready)
    finally:
        batches.close()
        evaluations.close()
