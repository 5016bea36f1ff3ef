"""MinAtar's sizes: the compiled train step and the compiled search of a MinAtar run, side by side.

The sizes are the MinAtar preset's, composed as a run composes them (``conf`` with
:data:`PRESET_OVERRIDES`: ``conf/task/minatar.yaml`` through ``conf/task/breakout.yaml``, the
default regime), never written here; the observation shape and the number of actions are the
real environment's (MinAtar breakout), so the representation is the conv torso of
:mod:`experiments.muzero.networks`. Networks, learner and search are built as
``experiments.muzero.train`` builds them (support sizes resolved, variant ``none``):

* train: the compiled K-step train step (``Learner.update_tensors``) on a random batch
  (:func:`~experiments.bench.train_step.random_batch`) of the preset's K and B (or
  ``BenchSettings.minatar_batch_size``: ``--quick`` takes a smaller one);
* search: one self-play move (:func:`~experiments.muzero.selfplay.act` with the compiled search:
  initial inference, all simulations of all trees and the action choice in one compiled call,
  Dirichlet noise, temperature 1) of the preset's ``num_envs`` games from their first boards,
  with the preset's ``num_simulations``.

Both are timed in the same rounds (``_timing``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from experiments.bench import flops
from experiments.bench._timing import Case, interleaved_rates, median
from experiments.bench.measures import BenchSettings, Rate
from experiments.bench.train_step import random_batch
from experiments.config import RunConfig
from experiments.gradients import get_placement, make_variant
from experiments.muzero.learner import Learner
from experiments.muzero.networks import Networks
from experiments.muzero.selfplay import Inference, act
from experiments.muzero.support import resolve_support_sizes
from experiments.tasks import make_env

__all__ = ["PRESET_OVERRIDES", "RATES", "MinAtarSizes", "minatar_rates", "preset"]

PRESET_OVERRIDES = ("task=breakout", "logger=none")
"""The composition the sizes come from: the MinAtar preset's breakout."""

RATES = (
    "minatar/train_compiled",
    "minatar/train_step_ms",
    "minatar/flops_train_step",
    "minatar/search_compiled",
)
"""The rates :func:`minatar_rates` returns, in order."""


@dataclasses.dataclass(frozen=True)
class MinAtarSizes:
    """What the MinAtar rows measured (``minatar`` of the bench's JSON).

    Attributes:
      game: the MinAtar game (``task.id``).
      observation_shape: one board, ``(height, width, channels)``.
      num_actions: A.
      batch_size: B of the train step (the preset's unless overridden).
      unroll_steps: K.
      hidden_size, width: the networks' sizes.
      value_support_size, reward_support_size: the resolved supports.
      search_batch: trees per search (the preset's ``num_envs``).
      num_simulations: simulations per tree.
      train_step_flops: analytic FLOPs of one train step (``flops``, Conv2D included).
    """

    game: str
    observation_shape: tuple[int, ...]
    num_actions: int
    batch_size: int
    unroll_steps: int
    hidden_size: int
    width: int
    value_support_size: int
    reward_support_size: int
    search_batch: int
    num_simulations: int
    train_step_flops: int


def preset() -> RunConfig:
    """The run config of :data:`PRESET_OVERRIDES`, composed from ``conf`` as a run's."""
    from experiments.config import register_schema, to_run_config
    from experiments.jobs.job import MUZERO
    from experiments.launch.hydra_app import CONF_DIR
    from experiments.launch.plan import compose

    register_schema(MUZERO.muzero_schema)
    return to_run_config(compose(CONF_DIR, list(PRESET_OVERRIDES)))


def minatar_rates(settings: BenchSettings) -> tuple[dict[str, Rate], MinAtarSizes]:
    """Times the compiled train step and the compiled search at MinAtar's sizes side by side.

    Returns:
      ``({name: rate} for the names of :data:`RATES`, the sizes measured)``.
    """
    s = settings
    run = preset()
    config = run.muzero
    supports = resolve_support_sizes(run.task, config.network, discount=config.discount)
    config = dataclasses.replace(
        config,
        network=dataclasses.replace(
            config.network, value_support_size=supports.value, reward_support_size=supports.reward
        ),
        batch_size=s.minatar_batch_size or config.batch_size,
    )
    env = make_env(run.task, config.num_envs, seed=s.seed)
    obs, actions = env.observation_size, env.num_actions
    nets = Networks(
        config.network,
        observation_size=obs,
        num_actions=actions,
        seed=s.seed,
        observation_shape=env.observation_shape,
    )
    learner = Learner(
        nets, config=config, variant=make_variant("none"), placement=get_placement("pseudocode")
    )
    B, K = config.batch_size, config.unroll_steps
    batch = random_batch(
        np.random.default_rng(s.seed),
        batch_size=B,
        unroll_steps=K,
        observation_size=obs,
        num_actions=actions,
    )
    tensors = {k: tf.constant(v) for k, v in learner.batch_tensors(batch).items()}
    inference = Inference(nets, jit_compile=config.jit_compile)
    boards = env.reset()
    rng = np.random.default_rng(s.seed)

    def train() -> float:
        loss = 0.0
        for _ in range(s.minatar_train_calls):
            loss = learner.update_tensors(tensors)["loss/total"]  # waits for the step
        return loss

    def search() -> object:
        move = None
        for _ in range(s.minatar_search_calls):  # NumPy results: each call waits for its search
            move = act(inference, boards, config=config, temperature=1.0, noise=True, rng=rng)
        return move

    simulations = len(boards) * config.num_simulations
    measured = interleaved_rates(
        [
            Case("train", train, s.minatar_train_calls * B),
            Case("search", search, s.minatar_search_calls * simulations),
        ],
        repeats=s.repeats,
    )
    step_flops = flops.train_step_flops(
        nets.representation, nets.dynamics, nets.prediction, batch_size=B, unroll_steps=K
    )
    sizes = MinAtarSizes(
        game=run.task.id,
        observation_shape=tuple(env.observation_shape),
        num_actions=actions,
        batch_size=B,
        unroll_steps=K,
        hidden_size=config.network.hidden_size,
        width=config.network.width,
        value_support_size=supports.value,
        reward_support_size=supports.reward,
        search_batch=len(boards),
        num_simulations=config.num_simulations,
        train_step_flops=step_flops,
    )
    shape = "x".join(str(d) for d in sizes.observation_shape)
    where = f"MinAtar {sizes.game} ({shape}, A={actions})"
    net = f"H={sizes.hidden_size}, width={sizes.width}, B={B}, K={K}"
    samples = measured["train"]
    runs: dict[str, tuple[list[float], str, str]] = {
        "minatar/train_compiled": (samples, "samples/s", f"{where}: compiled train step, {net}"),
        "minatar/train_step_ms": (
            [1e3 * B / r for r in samples],
            "ms/step",
            "the same steps, milliseconds each (median of the rounds' means)",
        ),
        "minatar/flops_train_step": (
            [r * step_flops / B / 1e9 for r in samples],
            "GFLOP/s",
            f"the same steps, {step_flops / 1e6:.1f} MFLOP/step (Dense + Conv2D fwd+bwd, analytic)",
        ),
        "minatar/search_compiled": (
            measured["search"],
            "simulations/s",
            f"{where}: one self-play move of B={sizes.search_batch} trees, "
            f"{sizes.num_simulations} simulations, in one compiled call",
        ),
    }
    rates = {
        name: Rate(name, median(values), unit, tuple(values), what)
        for name, (values, unit, what) in runs.items()
    }
    return rates, sizes
