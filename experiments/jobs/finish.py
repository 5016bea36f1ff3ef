"""A job's end, after its last step: the summary's closing figures, curves, the W&B mirror closed.

:func:`finish_job` completes the starting summary with how the row loop ended (:class:`Ending`),
the stability figures of the rows as written (:func:`experiments.verdicts.stability.
stability_summary`), writes ``curves.csv.gz`` (:mod:`experiments.jobs.curves`) and then the final
``summary.json`` (so a kill in between leaves the job to re-run), and closes the tracker. Neither
a figure nor the curves file nor W&B ever fails a finished job: each prints one warning instead.
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from pathlib import Path
from typing import Any

from experiments.config import RunConfig
from experiments.jobs import store
from experiments.jobs.identity import utc_now
from experiments.jobs.summary import Summary

__all__ = ["Ending", "finish_job"]


@dataclasses.dataclass(frozen=True)
class Ending:
    """How a job's row loop ended.

    Attributes:
      status: ``completed``, ``timeout``, ``interrupted``, ``diverged`` or ``failed``.
      steps: rows written to ``metrics.jsonl``.
      diverged_step: the step that diverged, or None.
      error: the one-line error of a ``failed`` job, or None.
    """

    status: str
    steps: int
    diverged_step: int | None = None
    error: str | None = None


def finish_job(
    cfg: RunConfig,
    job_dir: Path,
    summary: Summary,
    *,
    ending: Ending,
    wall_time_s: float,
    tracker: Any,
) -> Summary:
    """Writes the job's final ``summary.json`` (and ``curves.csv.gz``) and closes ``tracker``.

    Args:
      cfg: the validated config (the stop rules' divergence settings).
      job_dir: the job's folder, ``metrics.jsonl`` written.
      summary: the summary written at the start.
      ending: how the row loop ended.
      wall_time_s: the job's wall time, seconds.
      tracker: the job's :class:`~experiments.jobs.tracking.Tracker`.

    Returns:
      The final summary.
    """
    summary = summary.replace(
        status=ending.status,
        steps=ending.steps,
        diverged_step=ending.diverged_step,
        wall_time_s=wall_time_s,
        ended_at=utc_now(),
        error=ending.error,
        warnings=_warnings(tracker),
    )
    written = store.read_metrics(job_dir / "metrics.jsonl")
    summary = summary.replace(stability=_stability(written, cfg, summary))
    # before the final summary: a kill here leaves the job to re-run
    curves = _write_curves(job_dir, written, summary)
    if curves is not None:  # the summary bound to the curves its figures come from
        summary = summary.replace(curves_sha256=hashlib.sha256(curves.read_bytes()).hexdigest())
    store.write_summary(job_dir, summary)
    tracker.finish(summary.to_json())
    if _warnings(tracker) != summary.warnings:  # closing the W&B run went wrong
        summary = summary.replace(warnings=_warnings(tracker))
        store.write_summary(job_dir, summary)
    return summary


def _stability(rows: list[dict], cfg: RunConfig, summary: Summary) -> dict:
    from experiments.verdicts import stability_summary

    try:
        return dict(
            stability_summary(
                rows,
                threshold=summary.threshold,
                wall_time_s=summary.wall_time_s,
                divergence=cfg.divergence,
                training_steps=summary.training_steps,
                return_range=summary.return_range,
            )
        )
    except Exception as err:  # noqa: BLE001 - a summary figure must not fail the job
        print(f"warning: stability summary failed: {err}", file=sys.stderr)
        return {}


def _write_curves(job_dir: Path, rows: list[dict], summary: Summary) -> Path | None:
    """The job's compact curves.csv.gz, which figures redraw from where metrics.jsonl is not kept
    (a clone of committed findings), from the rows already read; its path, or None (no rows, or
    not written: a figure file never fails a job)."""
    try:
        from experiments.jobs.curves import write_job_curves

        return write_job_curves(job_dir, rows, training_steps=summary.training_steps)
    except Exception as err:  # noqa: BLE001 - as _stability
        print(f"warning: curves.csv.gz not written: {err}", file=sys.stderr)
        return None


def _warnings(tracker: Any) -> list[str]:
    warning = getattr(tracker, "warning", None)
    return [f"W&B: {warning}"] if warning else []
