"""The per-run endpoint columns of a results table: the outcome classes and the registered ones.

:func:`add_endpoints` adds to :attr:`~experiments.report.runs.results.Results.runs`:

* ``threshold``: the run's **declared** competence threshold in its reward units: the one its
  summary recorded, else its task registry's (``experiments.tasks.registry``, with its source)
  times the run's reward scale. Runs written before a task declared one (MinAtar before
  2026-11-27) get the declared one; for those, ``reached_threshold`` and ``steps_to_threshold``
  are recomputed from the run's evaluations (``metrics.jsonl``, else the committed
  ``curves.csv.gz``, which keeps every evaluation). ``threshold_recorded`` keeps what the summary
  said (None for them).
* ``outcome`` (str or None): the run's class, :func:`experiments.verdicts.outcome.run_outcome`.
* ``learned``, ``failed``, ``lost_after_learning``, ``never_learned``: 0/1 (NaN: no outcome),
  :data:`experiments.verdicts.outcome.ENDPOINT_CLASSES`.
* ``failed_v1``: the definition Studies 1-3 registered (``failed`` before 2026-11-27): unstable, or
  the *recorded* threshold never reached; a run whose summary recorded no threshold (MinAtar)
  fails iff unstable. Kept so those studies are analysed as registered; it counts a stable run
  that never learned on MinAtar as a success, which is why ``failed`` replaced it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from experiments.base.errors import ConfigError
from experiments.verdicts import ENDPOINT_CLASSES, endpoint_value, run_outcome

__all__ = [
    "MEANING",
    "OUTCOME_ENDPOINTS",
    "add_endpoints",
    "declared_threshold",
    "first_reach",
]

OUTCOME_ENDPOINTS = tuple(ENDPOINT_CLASSES)
"""The 0/1 columns derived from the outcome class."""

MEANING = {
    "failed": "did not learn and hold: never reached the task's competence threshold{threshold} "
    "before diverging, or fell back below it by the end (final-window mean), or diverged after",
    "lost_after_learning": "reached the threshold{threshold}, then fell back below it by the end "
    "(final-window mean) or diverged",
    "never_learned": "never reached the threshold{threshold} (before diverging, or by the end)",
    "learned": "reached the threshold{threshold} before diverging",
    "failed_v1": "the definition Studies 1-3 registered: unstable, or never reached the return "
    "threshold the runs recorded{threshold}",
}
"""What each outcome endpoint counts, for captions (``{threshold}``: `` (0.9)`` or empty; for
``failed_v1`` the recorded threshold)."""


def declared_threshold(task: object, reward_scale: object) -> float | None:
    """The task registry's threshold times the reward scale; None for an unregistered task or a
    task without one."""
    if not isinstance(task, str):
        return None
    try:
        from experiments.tasks import task_facts

        value = task_facts(task).threshold
    except (ImportError, ConfigError):
        return None
    if value is None:
        return None
    scale = pd.to_numeric(pd.Series([reward_scale]), errors="coerce").fillna(1.0).iloc[0]
    return float(value) * float(scale)


def first_reach(
    job_dir: str | Path, threshold: float, *, diverged_step: float | None = None
) -> float | None:
    """The first evaluation step with a return >= ``threshold`` at or before the diverging step,
    from the job's curves (``metrics.jsonl``, else ``curves.csv.gz``, which keeps every
    evaluation); NaN if none; None when the job kept no curves to read it from."""
    from experiments.jobs import read_curves

    curves = read_curves(Path(job_dir))
    if curves.empty:
        return None
    evals = curves[np.isfinite(curves["eval/return"].to_numpy(dtype=float))]
    steps = evals["step"].to_numpy(dtype=float)
    hit = steps[evals["eval/return"].to_numpy(dtype=float) >= threshold]
    if diverged_step is not None and np.isfinite(diverged_step):
        hit = hit[hit <= diverged_step]
    return float(hit[0]) if len(hit) else float("nan")


def _failed_v1(runs: pd.DataFrame) -> np.ndarray:
    """1 if unstable or the recorded threshold was never reached; 0 if stable and reached (or no
    recorded threshold); else NaN (module docstring)."""
    unstable = pd.to_numeric(runs["unstable"], errors="coerce").to_numpy(dtype=float)
    reached = pd.to_numeric(runs["_reached_recorded"], errors="coerce").to_numpy(dtype=float)
    has_threshold = runs["threshold_recorded"].notna().to_numpy()
    never = has_threshold & (reached == 0)
    failed = np.full(len(runs), np.nan)
    failed[(unstable == 0) & ((reached == 1) | ~has_threshold)] = 0.0
    failed[(unstable == 1) | never] = 1.0
    return failed


def add_endpoints(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with the threshold, outcome and endpoint columns of the module docstring.

    Args:
      runs: ``[N]`` rows with ``path``, ``status``, ``task``, ``reward_scale``, ``threshold`` (as
        the summary recorded it) and the stability figures.

    Returns:
      A copy with the columns added (and ``reached_threshold`` / ``steps_to_threshold``
      recomputed where the threshold was declared after the run).
    """
    runs = runs.copy()
    runs["threshold_recorded"] = runs["threshold"]
    runs["_reached_recorded"] = runs["reached_threshold"]
    thresholds, reached, at = [], [], []
    for row in runs.itertuples(index=False):
        recorded = pd.to_numeric(pd.Series([row.threshold]), errors="coerce").iloc[0]
        r, s = row.reached_threshold, row.steps_to_threshold
        if np.isfinite(recorded):
            t = float(recorded)
        else:
            t = declared_threshold(row.task, row.reward_scale)
            if t is not None and np.isfinite(pd.to_numeric(row.diverged, errors="coerce")):
                div_at = pd.to_numeric(row.diverged_step, errors="coerce")
                div_at = None if pd.isna(div_at) else float(div_at)
                s = first_reach(row.path, t, diverged_step=div_at)
                r = np.nan if s is None else float(np.isfinite(s))
                s = np.nan if s is None else s
        thresholds.append(t)
        reached.append(r)
        at.append(s)
    runs["threshold"] = pd.Series(thresholds, index=runs.index, dtype=object)
    runs["reached_threshold"] = pd.to_numeric(pd.Series(reached, index=runs.index)).astype(float)
    runs["steps_to_threshold"] = pd.to_numeric(pd.Series(at, index=runs.index)).astype(float)
    outcomes = [
        None
        if pd.isna(row.reached_threshold)  # no record of whether it reached the threshold
        else run_outcome(
            threshold=row.threshold,
            steps_to_threshold=row.steps_to_threshold,
            diverged=row.diverged,
            diverged_step=row.diverged_step,
            final_return=row.final_return,
        )
        for row in runs.itertuples(index=False)
    ]
    runs["outcome"] = pd.Series(outcomes, index=runs.index, dtype=object)
    for name in OUTCOME_ENDPOINTS:
        runs[name] = [endpoint_value(name, o) for o in outcomes]
        runs[name] = runs[name].astype(float)
    runs["failed_v1"] = _failed_v1(runs)
    return runs.drop(columns=["_reached_recorded"])
