"""End-to-end rates of a default catch run, and the start time of the ``gradlab`` command.

The run is :func:`experiments.muzero.train.train` with the default :class:`MuZeroConfig` (unless
told otherwise), task ``catch``, variant ``none``, placement ``pseudocode``, consumed for a fixed
number of training steps. Rates are taken between the end of step ``skip`` (start-up, warm-up
self-play and compilation are behind) and the last step consumed, from the rows' own
``time/elapsed_s`` and ``env/steps``; evaluations falling in that window are included, as in a
real run.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

__all__ = ["RunRates", "cli_start_seconds", "run_rates"]


@dataclasses.dataclass(frozen=True)
class RunRates:
    """Rates of one training run between two of its steps."""

    env_steps_per_s: float  # self-play environment steps (all environments) per second
    train_steps_per_s: float  # learner updates per second
    first_steps_s: float  # seconds to the end of step ``skip``: start-up, warm-up, compilation
    steps: int  # training steps consumed
    projected_run_s: float  # first_steps_s + (training_steps - skip) / train_steps_per_s


def run_rates(*, steps: int, skip: int, seed: int, unroll_steps: int | None = None) -> RunRates:
    """Consumes ``steps`` rows of a default catch run; rates between step ``skip`` and the end.

    Args:
      steps: training steps to consume, > ``skip``.
      skip: steps excluded from the rates (start-up and compilation), >= 1.
      seed: the run's seed.
      unroll_steps: K, if not the default (``--quick`` keeps compilation short).
    """
    from experiments.gradients import get_placement, make_variant
    from experiments.muzero import MuZeroConfig
    from experiments.muzero.train import train
    from experiments.tasks import TaskConfig

    if not 1 <= skip < steps:
        raise ValueError(f"need 1 <= skip < steps, got skip={skip}, steps={steps}")
    config = MuZeroConfig() if unroll_steps is None else MuZeroConfig(unroll_steps=unroll_steps)
    rows = train(config, TaskConfig(), make_variant("none"), get_placement("pseudocode"), seed=seed)
    marks = {}
    for row in rows:
        step = int(row["step"])
        if step in (skip, steps):
            marks[step] = (row["time/elapsed_s"], row["env/steps"])
        if step >= steps:
            break
    (t0, env0), (t1, env1) = marks[skip], marks[steps]
    train_rate = (steps - skip) / (t1 - t0)
    return RunRates(
        env_steps_per_s=(env1 - env0) / (t1 - t0),
        train_steps_per_s=train_rate,
        first_steps_s=t0,
        steps=steps,
        projected_run_s=t0 + (config.training_steps - skip) / train_rate,
    )


def _gradlab_command() -> list[str]:
    script = shutil.which("gradlab")
    if script is not None:
        return [script]
    return [sys.executable, "-c", "from cli.main import app; app()"]


def cli_start_seconds(
    args: Sequence[str],
    *,
    repeats: int,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Best of ``repeats`` wall times of ``gradlab <args>`` in a fresh process (exit code 0)."""
    command = [*_gradlab_command(), *args]
    best = float("inf")
    for _ in range(repeats):
        start = clock()
        subprocess.run(command, check=True, capture_output=True)
        best = min(best, clock() - start)
    return best
