"""The report's view of the runs' curves: one frame of every run's compact curves.

A job's curves (``curves.csv.gz``, or the same points from ``metrics.jsonl``) are the job's own:
written and read by :mod:`experiments.jobs.curves`. The report reads them through that module's
one reader, :func:`~experiments.jobs.curves.read_curves`, and never writes into a job folder.
"""

from __future__ import annotations

import pandas as pd

from experiments.jobs import CURVE_KEYS, read_curves

__all__ = ["run_curves"]


def run_curves(runs: pd.DataFrame) -> pd.DataFrame:
    """The compact curves of ``runs`` (rows of ``Results.runs``), one row per (run, kept step).

    Returns:
      Columns ``job``, ``group``, ``seed``, ``step`` and :data:`CURVE_KEYS`.
    """
    frames = []
    for run in runs.itertuples():
        frame = read_curves(run.path)
        if frame.empty:
            continue
        frame.insert(0, "job", run.job)
        frame.insert(1, "group", run.group)
        frame.insert(2, "seed", run.seed)
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["job", "group", "seed", "step", *CURVE_KEYS])
    return pd.concat(frames, ignore_index=True)
