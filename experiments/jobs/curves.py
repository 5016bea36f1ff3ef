"""A job's compact curves: ``curves.csv.gz``, small enough to commit, from which figures regenerate.

``metrics.jsonl`` holds every training step and is not committed (``results/.gitignore``); a fresh
clone has ``summary.json``, ``config.yaml`` and ``curves.csv.gz`` only. :func:`write_curves` keeps
from ``metrics.jsonl``:

* every evaluation: the rows with an ``eval/return`` (its value);
* ``grad/global_norm`` and ``loss/total`` at most :data:`MAX_POINTS` rows: the steps that are
  multiples of a stride (``ceil(span / (MAX_POINTS - 2))``, span = the planned ``training_steps``
  from ``summary.json``, else the last step), plus the first and the last row (a diverged run's
  last row is its divergence). The stride depends on the planned length, not on where a run
  stopped, so the runs of a sweep are sampled at the same steps.

Values are copied, not averaged, so the file holds exactly what ``metrics.jsonl`` holds at those
steps (floats written with 17 significant digits; ``nan``/``inf`` kept). The gzip header carries no
time stamp: the same metrics give the same bytes. The file is written by the store's one atomic
writer (:func:`experiments.jobs.store.write_bytes_atomic`), as every file of a job folder.

Everything that reads a job's curves (figures, calibration, endpoints) reads them through
:func:`read_curves`, which takes the same points from ``metrics.jsonl`` when it is there and from
``curves.csv.gz`` when it is not, so a figure drawn on a fresh clone is the figure drawn where the
runs ran. The job owns this file (:func:`experiments.jobs.runner.run_job` writes it at the end of
a run), so writer and reader live here, in ``jobs/``, which imports nothing of ``report/``.
"""

from __future__ import annotations

import gzip
import io
import math
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.base.errors import ConfigError
from experiments.jobs import store

__all__ = ["CURVES_FILE", "CURVE_KEYS", "MAX_POINTS", "compact_curves", "read_curves",
           "write_curves", "write_folder_curves", "write_job_curves"]  # fmt: skip

CURVES_FILE = "curves.csv.gz"
EVAL_KEY = "eval/return"
SAMPLED_KEYS = ("grad/global_norm", "loss/total")
CURVE_KEYS = (EVAL_KEY, *SAMPLED_KEYS)
"""The columns after ``step``."""

MAX_POINTS = 200
"""At most this many rows carry a sampled (training) value."""


def _stride(span: float) -> int:
    return max(1, math.ceil(span / (MAX_POINTS - 2)))


def compact_curves(rows: list[dict], *, training_steps: int | None = None) -> pd.DataFrame:
    """The compact curves of one run.

    Args:
      rows: ``metrics.jsonl``'s rows (:func:`experiments.jobs.store.read_metrics`).
      training_steps: the run's planned steps (sets the stride); None: its last step.

    Returns:
      Columns ``step`` (int) and :data:`CURVE_KEYS` (float, NaN where not kept), sorted by step.
    """
    rows = sorted((r for r in rows if "step" in r), key=lambda r: r["step"])
    if not rows:
        return pd.DataFrame({"step": pd.Series(dtype=int), **{k: [] for k in CURVE_KEYS}})
    steps = np.array([int(r["step"]) for r in rows])
    stride = _stride(training_steps if training_steps else steps[-1])
    sampled = steps % stride == 0
    sampled[0] = sampled[-1] = True
    records = []
    for row, keep in zip(rows, sampled, strict=True):
        evaluated = _number(row.get(EVAL_KEY)) is not None
        if not (keep or evaluated):
            continue
        record = {"step": int(row["step"]), EVAL_KEY: _number(row.get(EVAL_KEY))}
        for key in SAMPLED_KEYS:
            record[key] = _number(row.get(key)) if keep else None
        records.append(record)
    frame = pd.DataFrame.from_records(records, columns=["step", *CURVE_KEYS])
    frame[list(CURVE_KEYS)] = frame[list(CURVE_KEYS)].astype(float)
    return frame


def _number(value: object) -> float | None:
    """A metric value as float (NaN and inf kept); None when absent or not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def write_curves(job_dir: str | Path) -> Path | None:
    """Writes ``<job_dir>/curves.csv.gz`` from its ``metrics.jsonl`` (see the module docstring).

    Args:
      job_dir: a job folder; its ``summary.json`` gives the planned ``training_steps`` if present.

    Returns:
      The path written; None when the job has no metric rows (nothing written).
    """
    job_dir = Path(job_dir)
    summary = store.read_summary(job_dir)
    return write_job_curves(
        job_dir,
        store.read_metrics(job_dir / "metrics.jsonl"),
        training_steps=summary.training_steps if summary else None,
    )


def write_job_curves(job_dir: Path, rows: list[dict], *, training_steps: int | None) -> Path | None:
    """:func:`write_curves` from rows already read (a job's end, which has just read them for its
    stability figures).

    Args:
      job_dir: the job folder.
      rows: its ``metrics.jsonl`` rows, in order.
      training_steps: the planned number of steps (the summary's), or None.

    Returns:
      The path written; None when there are no rows (nothing written).
    """
    if not rows:
        return None
    frame = compact_curves(rows, training_steps=training_steps)
    text = frame.to_csv(index=False, float_format="%.17g", na_rep="")
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as gz:
        gz.write(text.encode("utf-8"))
    path = job_dir / CURVES_FILE
    store.write_bytes_atomic(path, buffer.getvalue())
    return path


def write_folder_curves(results_dir: str | Path) -> list[Path]:
    """:func:`write_curves` for every job of a results folder (``<results_dir>/*/summary.json``):
    fills in the curves of runs made before jobs wrote them.

    Returns:
      The paths written (jobs without metric rows are skipped).
    """
    written = (write_curves(p.parent) for p in sorted(Path(results_dir).glob("*/summary.json")))
    return [path for path in written if path is not None]


def read_curves(job_dir: str | Path) -> pd.DataFrame:
    """A job's compact curves: from ``metrics.jsonl`` if present, else from ``curves.csv.gz``.

    Returns:
      As :func:`compact_curves`; empty when the job has neither file.

    Raises:
      ConfigError: ``curves.csv.gz`` is unreadable or lacks a column.
    """
    job_dir = Path(job_dir)
    metrics = job_dir / "metrics.jsonl"
    if metrics.exists():
        summary = store.read_summary(job_dir)
        return compact_curves(
            store.read_metrics(metrics),
            training_steps=summary.training_steps if summary else None,
        )
    path = job_dir / CURVES_FILE
    if not path.exists():
        return compact_curves([])
    try:
        # round_trip: the 17 significant digits written come back as the same doubles (the
        # default fast parser may be off by one ulp: pandas 2.x)
        frame = pd.read_csv(path, compression="gzip", float_precision="round_trip")
    except (OSError, ValueError, EOFError) as err:
        raise ConfigError(f"corrupt curves file '{path}': {err}") from None
    missing = [c for c in ("step", *CURVE_KEYS) if c not in frame]
    if missing:
        raise ConfigError(f"corrupt curves file '{path}': no column {', '.join(missing)}")
    frame[list(CURVE_KEYS)] = frame[list(CURVE_KEYS)].astype(float)
    return frame[["step", *CURVE_KEYS]]
