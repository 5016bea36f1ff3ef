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
import functools

import numpy as np
import tensorflow as tf

from experiments.bench import flops
from experiments.bench._timing import Case, interleaved_rates, median
from experiments.bench.measures import BenchSettings, Rate
from experiments.bench.train_step import random_batch
from experiments.config import RunConfig
from experiments.gradients import get_placement, make_variant
from experiments.muzero import (
    Inference,
    Learner,
    MuZeroConfig,
    Networks,
    StepInputs,
    SupportSizes,
    act,
    resolve_support_sizes,
)
from experiments.tasks import make_env

__all__ = [
    "PRESET_OVERRIDES",
    "RATES",
    "MinAtarSizes",
    "measured_sizes",
    "minatar_rates",
    "preset",
    "rates_of",
    "sized_config",
]

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
    from experiments.jobs import MUZERO
    from experiments.launch import CONF_DIR, compose

    register_schema(MUZERO.muzero_schema)
    return to_run_config(compose(CONF_DIR, list(PRESET_OVERRIDES)))


def minatar_rates(settings: BenchSettings) -> tuple[dict[str, Rate], MinAtarSizes]:
    """Times the compiled train step and the compiled search at MinAtar's sizes side by side.

    Steps: the preset's config sized (:func:`sized_config`), its environment, networks and
    learner, a random batch; the train steps and the searches timed in the same rounds; the
    sizes measured (:func:`measured_sizes`) and the rates from them (:func:`rates_of`).

    Returns:
      ``({name: rate} for the names of :data:`RATES`, the sizes measured)``.
    """
    s = settings
    run = preset()
    config, supports = sized_config(run, batch_size=s.minatar_batch_size)
    env = make_env(run.task, config.num_envs, seed=s.seed)
    nets = Networks(
        config.network,
        observation_size=env.observation_size,
        num_actions=env.num_actions,
        seed=s.seed,
        observation_shape=env.observation_shape,
    )
    learner = Learner(
        nets, config=config, variant=make_variant("none"), placement=get_placement("pseudocode")
    )
    batch = random_batch(
        np.random.default_rng(s.seed),
        batch_size=config.batch_size,
        unroll_steps=config.unroll_steps,
        observation_size=env.observation_size,
        num_actions=env.num_actions,
    )
    tensors = {k: tf.constant(v) for k, v in learner.batch_tensors(batch).items()}
    inference = Inference(nets, jit_compile=config.jit_compile)
    boards = env.reset()
    search = functools.partial(
        _searches, inference, boards, config=config, rng=np.random.default_rng(s.seed)
    )
    simulations = len(boards) * config.num_simulations
    measured = interleaved_rates(
        [
            Case(
                "train",
                functools.partial(_train_steps, learner, tensors, calls=s.minatar_train_calls),
                s.minatar_train_calls * config.batch_size,
            ),
            Case(
                "search",
                functools.partial(search, calls=s.minatar_search_calls),
                s.minatar_search_calls * simulations,
            ),
        ],
        repeats=s.repeats,
    )
    sizes = measured_sizes(run, config, supports, nets, search_batch=len(boards))
    return rates_of(measured, sizes), sizes


def sized_config(run: RunConfig, *, batch_size: int | None) -> tuple[MuZeroConfig, SupportSizes]:
    """``run.muzero`` with its support sizes resolved for ``run.task`` and ``batch_size`` (None:
    the preset's); and the supports."""
    config = run.muzero
    supports = resolve_support_sizes(run.task, config.network, discount=config.discount)
    config = dataclasses.replace(
        config,
        network=dataclasses.replace(
            config.network, value_support_size=supports.value, reward_support_size=supports.reward
        ),
        batch_size=batch_size or config.batch_size,
    )
    return config, supports


def measured_sizes(
    run: RunConfig,
    config: MuZeroConfig,
    supports: SupportSizes,
    nets: Networks,
    *,
    search_batch: int,
) -> MinAtarSizes:
    """The sizes of what was timed, the train step's analytic FLOPs included."""
    B, K = config.batch_size, config.unroll_steps
    step_flops = flops.train_step_flops(
        nets.representation, nets.dynamics, nets.prediction, batch_size=B, unroll_steps=K
    )
    return MinAtarSizes(
        game=run.task.id,
        observation_shape=tuple(nets.observation_shape),
        num_actions=nets.num_actions,
        batch_size=B,
        unroll_steps=K,
        hidden_size=config.network.hidden_size,
        width=config.network.width,
        value_support_size=supports.value,
        reward_support_size=supports.reward,
        search_batch=search_batch,
        num_simulations=config.num_simulations,
        train_step_flops=step_flops,
    )


def rates_of(measured: dict[str, list[float]], sizes: MinAtarSizes) -> dict[str, Rate]:
    """The rates of :data:`RATES` from the rounds ``measured`` (``train``: samples/s,
    ``search``: simulations/s) at ``sizes``."""
    B, step_flops = sizes.batch_size, sizes.train_step_flops
    shape = "x".join(str(d) for d in sizes.observation_shape)
    where = f"MinAtar {sizes.game} ({shape}, A={sizes.num_actions})"
    net = f"H={sizes.hidden_size}, width={sizes.width}, B={B}, K={sizes.unroll_steps}"
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
    return {
        name: Rate(name, median(values), unit, tuple(values), what)
        for name, (values, unit, what) in runs.items()
    }


def _train_steps(learner: Learner, tensors: StepInputs, *, calls: int) -> float:
    """``calls`` compiled train steps; the last loss (each waits for its step)."""
    loss = 0.0
    for _ in range(calls):
        loss = learner.update_tensors(tensors)["loss/total"]
    return loss


def _searches(
    inference: Inference,
    boards: np.ndarray,
    *,
    config: MuZeroConfig,
    rng: np.random.Generator,
    calls: int,
) -> object:
    """``calls`` self-play moves of ``boards`` (NumPy results: each call waits for its search)."""
    move = None
    for _ in range(calls):
        move = act(inference, boards, config=config, temperature=1.0, noise=True, rng=rng)
    return move
