"""One job's run, in the job's own process: the row loop, nothing else.

:func:`run_job` trains, writes each row to ``metrics.jsonl``, asks the stop rules of
:mod:`experiments.verdicts.stopping` after each one, and writes the job's
:class:`~experiments.jobs.summary.
Summary`. It never raises for a problem inside the job: a diverged run is a result (status
``diverged``), a budget ends it cleanly (``timeout``), an exception is recorded (``failed`` with
``error.txt``), a stop (the sweep's, or a signal to the job's process:
:mod:`experiments.jobs.lifetime`) ends it at the next step (``interrupted``, its rows kept).
Skipping, locking and the job's process are :mod:`experiments.jobs.isolation`'s; files are the
store's.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from experiments.config import RunConfig
from experiments.jobs import store
from experiments.jobs.identity import utc_now
from experiments.jobs.job import TrainFn
from experiments.jobs.summary import Summary, error_line
from experiments.verdicts.stopping import DivergenceCheck

__all__ = ["Progress", "ProgressFactory", "run_job"]


class Progress(Protocol):
    """A display of one job's progress (the command line draws one; jobs only report to it)."""

    def update(self, row: Mapping[str, Any]) -> None: ...

    def close(self) -> None: ...


ProgressFactory = Callable[[str, "int | None"], Progress]
"""``(job name, total steps or None) -> Progress``; module-level, so it pickles by reference."""


class _NoProgress:
    def update(self, row: Mapping[str, Any]) -> None:
        del row

    def close(self) -> None:
        pass


def _stability(rows: list[dict], cfg: RunConfig, summary: Summary) -> dict:
    from experiments.verdicts.stability import stability_summary

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


def run_job(
    cfg: RunConfig,
    job_dir: str | Path,
    *,
    job: str,
    overrides: Mapping[str, str],
    choices: Mapping[str, str | None],
    resolved: Mapping[str, Any],
    train_fn: TrainFn,
    ablation: str | None,
    tracker: Any = None,
    progress: Progress | None = None,
    clock: Callable[[], float] = time.monotonic,
    cache: Any = None,
    overlap: bool | None = None,
    stop: Callable[[], bool] | None = None,
) -> Summary:
    """Runs one job into ``job_dir`` and returns its summary (also written to ``summary.json``).

    Args:
      cfg: the validated config.
      job_dir: the job's folder (created).
      job: the job's name.
      overrides: the job's overrides (key -> value), recorded in the summary.
      choices: Hydra's config-group choices (``task``, ``regime``, ...), recorded.
      resolved: the resolved config as plain dicts, saved as ``config.yaml`` and sent to W&B.
      train_fn: the training generator.
      ablation: the sweep's ablation, or None for a single run.
      tracker: a :class:`~experiments.jobs.tracking.Tracker`; default one from ``cfg.logger``.
      progress: where to report each row; default none.
      clock: seconds, for the wall-time budget.
      cache: what the job's process keeps between jobs (:attr:`Job.cache`), passed to
        ``train_fn`` as ``cache=``; None: nothing kept, and ``train_fn`` called without it.
      overlap: passed to ``train_fn`` as ``overlap=`` (:attr:`Job.overlap`: work on worker
        threads beside the training step); None: ``train_fn`` called without it.
      stop: asked before each step; True ends the job there with status ``interrupted``
        (:class:`experiments.jobs.lifetime.JobStop`); None: never.

    Returns:
      The summary.
    """
    job_dir = Path(job_dir)
    job_dir.mkdir(parents=True, exist_ok=True)
    store.discard_attempt(job_dir)
    store.write_config(job_dir, resolved)
    overrides = {k: v for k, v in overrides.items() if not store.is_bookkeeping(k)}
    summary = Summary.start(
        cfg, job=job, overrides=overrides, choices=choices, ablation=ablation, folder=job_dir.parent
    )
    store.write_summary(job_dir, summary)
    if tracker is None:
        tracker = _tracker(cfg, job_dir, job=job, ablation=ablation, resolved=resolved)
    progress = progress or _NoProgress()
    t0 = clock()
    status, steps, diverged_step, error = "completed", 0, None, None
    rows = None
    try:
        from experiments.base.process import seed_everything

        seed_everything(cfg.seed, deterministic=cfg.runtime.deterministic)
        variant, placement = cfg.variant.build()
        check = DivergenceCheck(cfg.divergence)
        kept: dict[str, Any] = {} if cache is None else {"cache": cache}
        if overlap is not None:
            kept["overlap"] = overlap
        rows = iter(train_fn(cfg.muzero, cfg.task, variant, placement, seed=cfg.seed, **kept))
        with store.MetricsWriter(job_dir / "metrics.jsonl") as writer:
            while True:
                if stop is not None and stop():
                    status = "interrupted"
                    break
                if cfg.budget.out_of_time(clock() - t0):
                    status = "timeout"
                    break
                if cfg.budget.out_of_steps(steps):
                    # One look past the budget tells a run that ends here from one cut short.
                    status = "completed" if next(rows, None) is None else "timeout"
                    break
                row = next(rows, None)
                if row is None:
                    break
                row = dict(row)
                row.setdefault("step", steps + 1)
                row.setdefault("time/elapsed_s", clock() - t0)
                writer.append(row)
                steps += 1  # a row that could not be written (a full disk) is not a step
                tracker.log(row, step=int(row["step"]))
                progress.update(row)
                if check.diverged(row):
                    status, diverged_step = "diverged", int(row["step"])
                    break
    except Exception as err:  # noqa: BLE001 - recorded, and the sweep goes on
        status, error = "failed", error_line(err)
        store.write_text_atomic(job_dir / "error.txt", traceback.format_exc())
    finally:
        progress.close()
        if rows is not None and hasattr(rows, "close"):
            try:
                rows.close()
            except Exception:  # noqa: BLE001
                pass
    summary = summary.replace(
        status=status,
        steps=steps,
        diverged_step=diverged_step,
        wall_time_s=clock() - t0,
        ended_at=utc_now(),
        error=error,
        warnings=_warnings(tracker),
    )
    written = store.read_metrics(job_dir / "metrics.jsonl")
    summary = summary.replace(stability=_stability(written, cfg, summary))
    _write_curves(job_dir)  # before the final summary: a kill here leaves the job to re-run
    store.write_summary(job_dir, summary)
    tracker.finish(summary.to_json())
    if _warnings(tracker) != summary.warnings:  # closing the W&B run went wrong
        summary = summary.replace(warnings=_warnings(tracker))
        store.write_summary(job_dir, summary)
    return summary


def _tracker(
    cfg: RunConfig, job_dir: Path, *, job: str, ablation: str | None, resolved: Mapping[str, Any]
) -> Any:
    """The job's :class:`~experiments.jobs.tracking.Tracker`, from ``cfg.logger``."""
    from experiments.jobs.tracking import make_tracker

    return make_tracker(
        job_dir,
        mode=cfg.logger.mode,
        project=cfg.logger.project,
        entity=cfg.logger.entity,
        group=ablation,
        job_type=cfg.variant.name,
        name=job,
        tags=(*cfg.logger.tags, cfg.task.name, cfg.variant.name, cfg.variant.placement),
        config=resolved,
        every=cfg.logger.every,
    )


def _write_curves(job_dir: Path) -> None:
    """The job's compact curves.csv.gz, which figures redraw from where metrics.jsonl is not kept
    (a clone of committed findings); a figure file never fails a job."""
    try:
        from experiments.jobs.curves import write_curves

        write_curves(job_dir)
    except Exception as err:  # noqa: BLE001 - as _stability
        print(f"warning: curves.csv.gz not written: {err}", file=sys.stderr)


def _warnings(tracker: Any) -> list[str]:
    warning = getattr(tracker, "warning", None)
    return [f"W&B: {warning}"] if warning else []
