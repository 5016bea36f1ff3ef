"""Intention-to-treat return curves: every run counts at every evaluation step.

A diverged run stops training, so it has no evaluation after its divergence. Dropping it there
would let a variant's mean climb as its runs die (the survivors are the runs that were doing well).
Instead, from its diverging step on (evaluation steps ``>= diverged_step``), a diverged run
contributes the **random-policy return** of its task, the return of a run that has learned
nothing: the rule is fixed before any curve is drawn and is stated in each figure's caption
(``docs/figures.md``). Before its divergence it contributes its own evaluations. So a curve's n
is the same at every step: its number of runs.

The random-policy return comes from the task registry (``task_facts(name).random_return`` in
``experiments.tasks.registry``: ``catch``, ``cartpole``, a MinAtar game), times the run's
``task.reward_scale``, or is given explicitly (then also times the run's reward scale).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.base.errors import ConfigError
from experiments.jobs import read_summary
from experiments.report.runs.results import config_task_id

__all__ = ["itt_matrix", "random_return", "run_random_return"]


def random_return(
    task: str | None, *, reward_scale: float = 1.0, explicit: float | None = None
) -> float:
    """The return a diverged run contributes after its divergence.

    Args:
      task: the task's name (``catch``).
      reward_scale: the run's ``task.reward_scale``; the return is in the run's reward units.
      explicit: the task's random-policy episode return (unscaled), used instead of the registry.

    Raises:
      ConfigError: neither ``explicit`` nor the task registry gives a finite value.
    """
    if explicit is not None:
        value = float(explicit)
    else:
        value = _registered(task)
    if not math.isfinite(value):
        raise ConfigError(f"random-policy return of task '{task}' is {value}; expected a number")
    scale = 1.0 if reward_scale is None or reward_scale != reward_scale else float(reward_scale)
    return value * scale


def run_random_return(job_dir: str | Path, *, explicit: float | None = None) -> float:
    """:func:`random_return` of one job: its task and reward scale from ``summary.json`` (a
    MinAtar job's game, the registry's name, from ``config.yaml``'s ``task.id``)."""
    summary = read_summary(job_dir)
    task = summary.task if summary else None
    if task == "minatar":
        task = config_task_id(Path(job_dir) / "config.yaml") or task
    scale = summary.reward_scale if summary else None
    scale = float(scale) if isinstance(scale, int | float) else 1.0
    return random_return(task, reward_scale=scale, explicit=explicit)


def _registered(task: str | None) -> float:
    hint = "pass random_return= (the task's random-policy episode return)"
    try:
        from experiments.tasks import task_facts
    except ImportError:
        raise ConfigError(
            f"no random-policy return known for task '{task}' (no task registry); {hint}"
        ) from None
    value = getattr(task_facts(task), "random_return", None)
    if value is None:
        raise ConfigError(f"no random-policy return known for task '{task}'; {hint}")
    return float(value)


def itt_matrix(
    evals: pd.DataFrame, runs: pd.DataFrame, fill: Mapping[str, float]
) -> tuple[np.ndarray, np.ndarray]:
    """Every run's return at every evaluation step, a diverged run's held at ``fill`` from its
    divergence on.

    Args:
      evals: columns ``job``, ``step``, ``eval/return``: the runs' evaluations.
      runs: one row per run of the curve: ``job``, ``diverged_step`` (NaN: did not diverge).
      fill: ``{job: random-policy return}`` for every diverged job.

    Returns:
      ``(steps [T], returns [N runs, T])``: the evaluation steps at which every run has a value
      (a step where a run that had not diverged lacks an evaluation is left out, so that n is
      the same at every step), in ``runs`` order.
    """
    steps = np.unique(evals["step"].to_numpy(dtype=float)) if len(evals) else np.zeros(0)
    values = np.full((len(runs), len(steps)), np.nan)
    for i, run in enumerate(runs.itertuples()):
        own = evals[evals["job"] == run.job]
        at = dict(zip(own["step"].to_numpy(dtype=float), own["eval/return"], strict=True))
        values[i] = [at.get(step, np.nan) for step in steps]
        diverged = run.diverged_step
        if diverged is not None and diverged == diverged:
            values[i, steps >= diverged] = fill[run.job]
    complete = np.isfinite(values).all(axis=0)
    return steps[complete], values[:, complete]
