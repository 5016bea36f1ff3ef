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

import math
from collections.abc import Callable

from experiments.base.process import cores
from experiments.bench.measures import BenchReport, BenchSettings, Rate, Ratio, Timing

__all__ = [
    "COMPILED_SEARCH_TARGET",
    "BenchReport",
    "BenchSettings",
    "Rate",
    "Ratio",
    "Timing",
    "run_bench",
]

COMPILED_SEARCH_TARGET = 1e5
"""Simulations/s the compiled search should reach at B=64, 50 simulations (the full bench), about
half of what google-deepmind/mctx's fully compiled JAX ``muzero_policy`` reached on the same work
(docs/performance.md gives the figure)."""


def _ratio(rates: dict[str, Rate], name: str, top: str, bottom: str, target: float, what: str):
    value = rates[top].value / rates[bottom].value
    if not math.isfinite(value) or value <= 0:
        raise RuntimeError(f"ratio {name} = {value} is not a positive finite number")
    return Ratio(name, top, bottom, value, target, what)


def run_bench(
    settings: BenchSettings, *, progress: Callable[[str], None] = lambda message: None
) -> BenchReport:
    """Runs every measurement of the bench (minutes for the defaults, ~half a minute quick)."""
    import numpy as np
    import tensorflow as tf

    from experiments.bench import end_to_end, flops, minatar, search, train_step
    from experiments.bench._timing import Case, interleaved_rates, median
    from experiments.tasks import TaskConfig, make_env

    s = settings
    env = make_env(TaskConfig(), 1, seed=s.seed)
    sizes = {"observation_size": env.observation_size, "num_actions": env.num_actions}
    rates: dict[str, Rate] = {}

    def add(
        name: str,
        runs: list[float],
        unit: str,
        what: str,
        scale: float = 1.0,
        target_min: float | None = None,
    ) -> None:
        runs = [r * scale for r in runs]
        rates[name] = Rate(name, median(runs), unit, tuple(runs), what, target_min)

    progress("train step: compiling, then compiled vs eager vs pseudocode loop vs matmul")
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

    def steps(update: Callable, calls: int) -> Callable[[], float]:
        def run() -> float:
            loss = 0.0
            for _ in range(calls):
                loss = float(update(tensors)["loss/total"])  # waits for the step
            return loss

        return run

    matmul_run, matmul_flops = flops.matmul_case(s.matmul_size, calls=s.matmul_calls, seed=s.seed)
    cases = [
        Case(
            "compiled",
            steps(learner.update_tensors, s.compiled_calls),
            s.compiled_calls * s.batch_size,
        ),
        Case("eager", steps(learner._update_weights, s.eager_calls), s.eager_calls * s.batch_size),
        Case(
            "loop",
            lambda: train_step.pseudocode_step(learner, tensors, num_samples=s.loop_samples),
            s.loop_samples,
            warm=lambda: train_step.pseudocode_step(learner, tensors, num_samples=1),
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
    add("train/compiled", measured["compiled"], "samples/s", f"tf.function(jit_compile), {shape}")
    add("train/eager", measured["eager"], "samples/s", f"same Python step, eager, {shape}")
    add(
        "train/pseudocode_loop",
        measured["loop"],
        "samples/s",
        f"eager loop over {s.loop_samples} samples, one tape, one optimizer step",
    )
    add(
        "flops/train_step",
        measured["compiled"],
        "GFLOP/s",
        f"compiled step, {step_flops / 1e6:.1f} MFLOP/step (Dense fwd+bwd, analytic)",
        scale=step_flops / s.batch_size / 1e9,
    )
    add(
        "flops/matmul",
        measured["matmul"],
        "GFLOP/s",
        f"compiled float32 [{s.matmul_size}]^2 matmul",
        scale=1e-9,
    )

    progress("search: compiled graph vs NumPy batched vs one environment at a time")
    blocks = search.search_cases(
        nets,
        observation_size=sizes["observation_size"],
        batch_size=s.search_batch,
        num_simulations=s.num_simulations,
        single_searches=s.single_searches,
        seed=s.seed,
    )
    measured = interleaved_rates(
        [Case(name, run, work) for name, (run, work) in blocks.items()], repeats=s.repeats
    )
    trees = f"B={s.search_batch} trees, {s.num_simulations} simulations"
    add(
        "search/compiled",
        measured["compiled"],
        "simulations/s",
        f"{trees}: initial inference, search and action in one compiled call",
        # the target is set for the full bench's sizes only
        target_min=COMPILED_SEARCH_TARGET
        if (s.search_batch, s.num_simulations) == (64, 50)
        else None,
    )
    add(
        "search/batched",
        measured["batched"],
        "simulations/s",
        f"{trees}, NumPy trees, one model call each",
    )
    add(
        "search/one_at_a_time",
        measured["one_at_a_time"],
        "simulations/s",
        f"{s.single_searches} searches of B=1, same compiled model",
    )

    progress(f"default catch run: {s.run_steps} training steps")
    run = end_to_end.run_rates(
        steps=s.run_steps, skip=s.run_skip, seed=s.seed, unroll_steps=s.run_unroll_steps
    )
    window = f"default catch run, steps {s.run_skip}..{s.run_steps}"
    rates["run/env_steps"] = Rate(
        "run/env_steps", run.env_steps_per_s, "env steps/s", (run.env_steps_per_s,), window
    )
    rates["run/train_steps"] = Rate(
        "run/train_steps", run.train_steps_per_s, "steps/s", (run.train_steps_per_s,), window
    )

    progress("minatar: compiled train step and compiled search at the preset's sizes")
    minatar_rates, minatar_sizes = minatar.minatar_rates(s)
    rates.update(minatar_rates)

    progress("gradlab start time")
    timings = [
        Timing(
            "run/first_steps",
            run.first_steps_s,
            None,
            f"start-up, warm-up self-play, compilation, {s.run_skip} steps",
        ),
        Timing(
            "run/projected",
            run.projected_run_s,
            60.0,
            "a whole default catch run (measured if run_steps is all of it, else projected)",
        ),
        Timing(
            "cli/help",
            end_to_end.cli_start_seconds(["--help"], repeats=s.cli_repeats),
            1.0,
            f"gradlab --help, fresh process, best of {s.cli_repeats}",
        ),
        Timing(
            "cli/list",
            end_to_end.cli_start_seconds(["list"], repeats=s.cli_repeats),
            1.0,
            f"gradlab list, fresh process, best of {s.cli_repeats}",
        ),
    ]
    ratios = [
        _ratio(rates, *spec)
        for spec in (
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
    ]
    devices = tf.config.list_physical_devices("GPU")
    device = devices[0].name if devices else f"CPU ({cores()} cores)"
    return BenchReport(s, rates, ratios, timings, device, step_flops, minatar_sizes)
