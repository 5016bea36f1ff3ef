"""``gradlab bench``: every figure of the Performance section, measured side by side in one process.

Four comparisons, each a ratio of two rates measured in the same rounds (see ``_timing``):

* (a) training samples/s of the compiled K-step train step vs the same step eager, and vs the
  paper pseudocode's loop over samples (``train_step``);
* (b) search simulations/s: the whole search as one compiled graph vs the NumPy batched search
  (target >= 2x, and >= 100k simulations/s absolute), and the batched search vs one environment
  at a time (``search``);
* (c) achieved GFLOP/s of the compiled train step (analytic Dense FLOPs, ``flops``) vs a large
  compiled matmul, timed in the same rounds as (a);
* (d) environment steps/s and training steps/s of a default catch run (``end_to_end``), with the
  projected time of the whole run; and the start time of ``gradlab --help`` / ``gradlab list``.

And rates without a ratio: at the MinAtar preset's sizes, the compiled train step (samples/s,
ms/step, GFLOP/s with the conv counted) and the compiled search (simulations/s), timed in the
same rounds (``minatar``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from experiments.base.cpu import describe
from experiments.base.process import cores
from experiments.bench.measures import BenchReport, BenchSettings, Rate, Ratio, Timing

if TYPE_CHECKING:
    from experiments.bench.end_to_end import RunRates
    from experiments.muzero import Learner, Networks

__all__ = [
    "COMPILED_SEARCH_TARGET",
    "RATIOS",
    "BenchReport",
    "BenchSettings",
    "Rate",
    "Ratio",
    "Timing",
    "TrainStepRates",
    "run_bench",
    "run_rates",
    "search_rates",
    "timings",
    "train_step_rates",
]

COMPILED_SEARCH_TARGET = 1e5
"""Simulations/s the compiled search should reach at B=64, 50 simulations (the full bench), about
half of what google-deepmind/mctx's fully compiled JAX ``muzero_policy`` reached on the same work
(docs/performance.md gives the figure)."""


RATIOS = (
    ("compiled_vs_eager", "train/compiled", "train/eager", 50.0, "train step"),
    (
        "compiled_vs_pseudocode_loop",
        "train/compiled",
        "train/pseudocode_loop",
        2000.0,
        "train step",
    ),
    ("compiled_vs_batched", "search/compiled", "search/batched", 2.0, "search"),
    ("batched_vs_one_at_a_time", "search/batched", "search/one_at_a_time", 20.0, "search"),
    (
        "train_step_vs_matmul",
        "flops/train_step",
        "flops/matmul",
        0.10,
        "fraction of practical peak",
    ),
)
"""The bench's ratios: ``(name, numerator rate, denominator rate, target, what)``."""


def run_bench(
    settings: BenchSettings, *, progress: Callable[[str], None] = lambda message: None
) -> BenchReport:
    """Runs every measurement of the bench (minutes for the defaults, ~half a minute quick).

    In order: the train step (:func:`train_step_rates`), the search (:func:`search_rates`), a
    default catch run (:func:`run_rates`), MinAtar's sizes (:func:`~experiments.bench.minatar.
    minatar_rates`), the start times (:func:`timings`); then the ratios of :data:`RATIOS`.
    """
    import tensorflow as tf

    from experiments.bench import end_to_end, minatar

    s = settings
    progress("train step: compiling, then compiled vs eager vs pseudocode loop vs matmul")
    train = train_step_rates(s)
    rates = dict(train.rates)
    progress("search: compiled graph vs NumPy batched vs one environment at a time")
    rates.update(search_rates(s, train.learner.networks))
    progress(f"default catch run: {s.run_steps} training steps")
    run = end_to_end.run_rates(
        steps=s.run_steps, skip=s.run_skip, seed=s.seed, unroll_steps=s.run_unroll_steps
    )
    rates.update(run_rates(s, run))
    progress("minatar: compiled train step and compiled search at the preset's sizes")
    minatar_rates, minatar_sizes = minatar.minatar_rates(s)
    rates.update(minatar_rates)
    progress("gradlab start time")
    times = timings(s, run)
    ratios = [_ratio(rates, *spec) for spec in RATIOS]
    devices = tf.config.list_physical_devices("GPU")
    device = devices[0].name if devices else f"CPU: {describe()}, {cores()} cores"
    return BenchReport(s, rates, ratios, times, device, train.flops, minatar_sizes)


@dataclasses.dataclass(frozen=True)
class TrainStepRates:
    """What :func:`train_step_rates` measured.

    Attributes:
      rates: ``train/compiled``, ``train/eager``, ``train/pseudocode_loop``, ``flops/train_step``
        and ``flops/matmul``, in that order.
      learner: the learner timed (its networks are the search's).
      flops: analytic FLOPs of one train step.
    """

    rates: dict[str, Rate]
    learner: Learner
    flops: int


def train_step_rates(s: BenchSettings) -> TrainStepRates:
    """(a) and (c): the compiled train step vs the same step eager vs the pseudocode's loop over
    samples vs a large compiled matmul, timed in the same rounds on one random batch."""
    import numpy as np
    import tensorflow as tf

    from experiments.bench import flops, train_step
    from experiments.bench._timing import Case, interleaved_rates
    from experiments.tasks import TaskConfig, make_env

    env = make_env(TaskConfig(), 1, seed=s.seed)
    sizes = {"observation_size": env.observation_size, "num_actions": env.num_actions}
    learner = train_step.make_learner(
        hidden_size=s.hidden_size,
        width=s.width,
        batch_size=s.batch_size,
        unroll_steps=s.unroll_steps,
        seed=s.seed,
        **sizes,
    )
    batch = train_step.random_batch(
        np.random.default_rng(s.seed), batch_size=s.batch_size, unroll_steps=s.unroll_steps, **sizes
    )
    tensors = {k: tf.constant(v) for k, v in learner.batch_tensors(batch).items()}
    compiled = functools.partial(_steps, learner.update_tensors, tensors, s.compiled_calls)
    eager = functools.partial(_steps, learner.update_eager, tensors, s.eager_calls)
    matmul_run, matmul_flops = flops.matmul_case(s.matmul_size, calls=s.matmul_calls, seed=s.seed)
    pseudocode = train_step.pseudocode_step
    cases = [
        Case("compiled", compiled, s.compiled_calls * s.batch_size),
        Case("eager", eager, s.eager_calls * s.batch_size),
        Case(
            "loop",
            functools.partial(pseudocode, learner, tensors, num_samples=s.loop_samples),
            s.loop_samples,
            warm=functools.partial(pseudocode, learner, tensors, num_samples=1),
        ),
        Case("matmul", matmul_run, matmul_flops),
    ]
    measured = interleaved_rates(cases, repeats=s.repeats)
    nets = learner.networks
    step_flops = flops.train_step_flops(
        nets.representation,
        nets.dynamics,
        nets.prediction,
        batch_size=s.batch_size,
        unroll_steps=s.unroll_steps,
    )
    shape = f"H={s.hidden_size}, width={s.width}, B={s.batch_size}, K={s.unroll_steps}"
    loop = f"eager loop over {s.loop_samples} samples, one tape, one optimizer step"
    per_step = f"compiled step, {step_flops / 1e6:.1f} MFLOP/step (Dense fwd+bwd, analytic)"
    matmul = f"compiled float32 [{s.matmul_size}]^2 matmul"
    rates = [
        _rate(
            "train/compiled",
            measured["compiled"],
            "samples/s",
            f"tf.function(jit_compile), {shape}",
        ),
        _rate("train/eager", measured["eager"], "samples/s", f"same Python step, eager, {shape}"),
        _rate("train/pseudocode_loop", measured["loop"], "samples/s", loop),
        _rate(
            "flops/train_step",
            measured["compiled"],
            "GFLOP/s",
            per_step,
            scale=step_flops / s.batch_size / 1e9,
        ),
        _rate("flops/matmul", measured["matmul"], "GFLOP/s", matmul, scale=1e-9),
    ]
    return TrainStepRates({r.name: r for r in rates}, learner, step_flops)


def search_rates(s: BenchSettings, networks: Networks) -> dict[str, Rate]:
    """(b): the compiled search vs the NumPy batched search vs one environment at a time, with
    ``networks``, timed in the same rounds."""
    from experiments.bench import search
    from experiments.bench._timing import Case, interleaved_rates

    blocks = search.search_cases(
        networks,
        observation_size=networks.observation_size,
        batch_size=s.search_batch,
        num_simulations=s.num_simulations,
        single_searches=s.single_searches,
        seed=s.seed,
    )
    measured = interleaved_rates(
        [Case(name, run, work) for name, (run, work) in blocks.items()], repeats=s.repeats
    )
    trees = f"B={s.search_batch} trees, {s.num_simulations} simulations"
    # the target is set for the full bench's sizes only
    full = (s.search_batch, s.num_simulations) == (64, 50)
    rates = [
        _rate(
            "search/compiled",
            measured["compiled"],
            "simulations/s",
            f"{trees}: initial inference, search and action in one compiled call",
            target_min=COMPILED_SEARCH_TARGET if full else None,
        ),
        _rate(
            "search/batched",
            measured["batched"],
            "simulations/s",
            f"{trees}, NumPy trees, one model call each",
        ),
        _rate(
            "search/one_at_a_time",
            measured["one_at_a_time"],
            "simulations/s",
            f"{s.single_searches} searches of B=1, same compiled model",
        ),
    ]
    return {r.name: r for r in rates}


def run_rates(s: BenchSettings, run: RunRates) -> dict[str, Rate]:
    """(d): the environment and training steps/s of the default catch run ``run``."""
    window = f"default catch run, steps {s.run_skip}..{s.run_steps}"
    env = run.env_steps_per_s
    steps = run.train_steps_per_s
    return {
        "run/env_steps": Rate("run/env_steps", env, "env steps/s", (env,), window),
        "run/train_steps": Rate("run/train_steps", steps, "steps/s", (steps,), window),
    }


def timings(s: BenchSettings, run: RunRates) -> list[Timing]:
    """(d): the catch run's first steps and whole time, and ``gradlab``'s start times (each in
    a fresh process, the best of ``s.cli_repeats``)."""
    from experiments.bench.end_to_end import cli_start_seconds

    first = f"start-up, warm-up self-play, compilation, {s.run_skip} steps"
    whole = "a whole default catch run (measured if run_steps is all of it, else projected)"
    best = f"fresh process, best of {s.cli_repeats}"
    return [
        Timing("run/first_steps", run.first_steps_s, None, first),
        Timing("run/projected", run.projected_run_s, 60.0, whole),
        Timing(
            "cli/help",
            cli_start_seconds(["--help"], repeats=s.cli_repeats),
            1.0,
            f"gradlab --help, {best}",
        ),
        Timing(
            "cli/list",
            cli_start_seconds(["list"], repeats=s.cli_repeats),
            1.0,
            f"gradlab list, {best}",
        ),
    ]


def _steps(update: Callable[[Any], Any], tensors: Any, calls: int) -> float:
    """``calls`` train steps of ``update`` on ``tensors``; the last loss (each waits for its
    step)."""
    loss = 0.0
    for _ in range(calls):
        loss = float(update(tensors)["loss/total"])
    return loss


def _rate(
    name: str,
    runs: list[float],
    unit: str,
    what: str,
    *,
    scale: float = 1.0,
    target_min: float | None = None,
) -> Rate:
    """A rate from the rounds' ``runs`` times ``scale``, their median its value."""
    from experiments.bench._timing import median

    runs = [r * scale for r in runs]
    return Rate(name, median(runs), unit, tuple(runs), what, target_min)


def _ratio(rates: dict[str, Rate], name: str, top: str, bottom: str, target: float, what: str):
    value = rates[top].value / rates[bottom].value
    if not math.isfinite(value) or value <= 0:
        raise RuntimeError(f"ratio {name} = {value} is not a positive finite number")
    return Ratio(name, top, bottom, value, target, what)
