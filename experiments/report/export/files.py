"""An export's files, made in memory first and written only when all of them are made.

* ``csv`` / ``parquet``: ``runs.<ext>`` (one row per run) and ``curves.<ext>`` (long format: one
  row per run, step and metric), what pandas, seaborn and R read. Parquet is written by pyarrow.
* ``rliable``: ``scores.npz`` (one ``[runs, tasks]`` array per arm, keyed by the arm's name:
  ``data = numpy.load("scores.npz"); scores = {arm: data[arm] for arm in data.files}``) and
  ``scores.json`` beside it (:meth:`~experiments.report.export.scores.Scores.statement`: the
  score, its normalisation, the tasks' order, each row's seed).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.base.errors import ConfigError, unknown_choice
from experiments.report.export.scores import Scores

__all__ = ["FORMATS", "score_files", "tidy_files", "write_files"]

FORMATS = ("csv", "parquet", "rliable")


def tidy_files(runs: pd.DataFrame, curves: pd.DataFrame, *, fmt: str) -> dict[str, bytes]:
    """``runs.<fmt>`` and ``curves.<fmt>`` as bytes, ``fmt`` ``csv`` or ``parquet``.

    Raises:
      ConfigError: another format, or parquet without pyarrow installed.
    """
    if fmt == "csv":
        return {f"{name}.csv": frame.to_csv(index=False).encode("utf-8")
                for name, frame in (("runs", runs), ("curves", curves))}  # fmt: skip
    if fmt != "parquet":
        raise unknown_choice("format", fmt, ("csv", "parquet"))
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise ConfigError("--format parquet needs pyarrow: pip install pyarrow") from None
    out = {}
    for name, frame in (("runs", runs), ("curves", curves)):
        buffer = io.BytesIO()
        frame.to_parquet(buffer, engine="pyarrow", index=False)
        out[f"{name}.parquet"] = buffer.getvalue()
    return out


def score_files(scores: Scores, *, sources: dict[str, str]) -> dict[str, bytes]:
    """``scores.npz`` and ``scores.json`` (its statement and ``sources``: what each folder
    declared, e.g. ``{folder: "normalisation from <record>"}``)."""
    buffer = io.BytesIO()
    np.savez(buffer, **scores.matrices)
    statement = {**scores.statement(), "folders": sources}
    text = json.dumps(statement, indent=2, allow_nan=False) + "\n"
    return {"scores.npz": buffer.getvalue(), "scores.json": text.encode("utf-8")}


def write_files(out: Path, files: dict[str, bytes]) -> list[Path]:
    """Writes ``files`` into the folder ``out`` (made when missing; its parent must exist, so a
    mistyped path leaves no tree of folders behind); files of the same names are replaced.

    Raises:
      ConfigError: ``out`` is a file, its parent does not exist, or a file cannot be written.
    """
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out '{out}' is a file; pass a folder for the export's files")
    if not out.parent.is_dir():
        raise ConfigError(
            f"cannot write into '{out}': its folder '{out.parent}' does not exist (no folder "
            "tree is made; create it first)"
        )
    written = []
    try:
        out.mkdir(exist_ok=True)
        for name, data in files.items():
            (out / name).write_bytes(data)
            written.append(out / name)
    except OSError as err:
        raise ConfigError(f"cannot write into '{out}': {err.strerror}") from None
    return written
