"""One job's run, in the job's own process: the row loop, nothing else.

:func:`run_job` trains, writes each row to ``metrics.jsonl`` and asks the stop rules of
:mod:`experiments.verdicts.stopping` after each one; the job's start (folder, first summary,
tracker) is :mod:`experiments.jobs.start`'s, its end (the final :class:`~experiments.jobs.summary.
Summary`, curves, W&B closed) :mod:`experiments.jobs.finish`'s. It never raises for a problem
inside the job: a diverged run is a result (status ``diverged``), a budget ends it cleanly
(``timeout``), an exception is recorded (``failed`` with ``error.txt``), a stop (the sweep's, or
a signal to the job's process: :mod:`experiments.jobs.process.lifetime`) ends it at the next step
(``interrupted``, its rows kept). Skipping, locking and the job's process are
:mod:`experiments.jobs.process.isolation`'s; files are the store's.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from experiments.base.process import seed_everything
from experiments.config import RunConfig
from experiments.gradients import PLACEMENTS
from experiments.jobs import store
from experiments.jobs.finish import Ending, finish_job
from experiments.jobs.job import TrainFn
from experiments.jobs.start import start_job
from experiments.jobs.summary import Summary, error_line
from experiments.verdicts import DivergenceCheck

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
    tensorflow: bool = True,
) -> Summary:
    """Runs one job into ``job_dir`` and returns its summary (also written to ``summary.json``).

    Args:
      cfg: the validated config.
      job_dir: the job's folder (created).
      job, overrides, choices, resolved, ablation, tracker: as :func:`~experiments.jobs.start.
        start_job` (the name, overrides, Hydra's choices and resolved config recorded; a
        tracker, or None for one from ``cfg.logger``).
      train_fn: the training generator.
      progress: where to report each row; default none.
      clock: seconds, for the wall-time budget.
      cache: what the job's process keeps between jobs (:attr:`Job.cache`), passed to
        ``train_fn`` as ``cache=``; None: nothing kept, and ``train_fn`` called without it.
      overlap: passed to ``train_fn`` as ``overlap=`` (:attr:`Job.overlap`: work on worker
        threads beside the training step); None: ``train_fn`` called without it.
      stop: asked before each step; True ends the job there with status ``interrupted``
        (:class:`experiments.jobs.process.lifetime.JobStop`); None: never.
      tensorflow: seed TensorFlow and bind the variant's TensorFlow transforms
        (:attr:`experiments.jobs.job.Job.tensorflow`); False: seed Python and NumPy only
        and hand ``train_fn`` the variant's config unbound, with its placement.

    Returns:
      The summary.
    """
    job_dir = Path(job_dir)
    started = start_job(
        cfg, job_dir, job=job, overrides=overrides, choices=choices, resolved=resolved,
        ablation=ablation, tracker=tracker,
    )  # fmt: skip
    progress = progress or _NoProgress()
    t0 = clock()
    status, steps, diverged_step, error, rows = "completed", 0, None, None, None
    try:
        seed_everything(cfg.seed, deterministic=cfg.runtime.deterministic, tensorflow=tensorflow)
        variant, placement = _bind(cfg, tensorflow=tensorflow)
        check = DivergenceCheck(cfg.divergence)
        kept = {k: v for k, v in (("cache", cache), ("overlap", overlap)) if v is not None}
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
                started.tracker.log(row, step=int(row["step"]))
                progress.update(row)
                if check.diverged(row):
                    status, diverged_step = "diverged", int(row["step"])
                    break
    except Exception as err:  # noqa: BLE001 - recorded, and the sweep goes on
        status, error = "failed", error_line(err)
        store.write_text_atomic(job_dir / "error.txt", traceback.format_exc())
    finally:
        progress.close()
        _close(rows)
    ending = Ending(status, steps, diverged_step, error)
    return finish_job(
        cfg, job_dir, started.summary, ending=ending, wall_time_s=clock() - t0,
        tracker=started.tracker,
    )  # fmt: skip


def _bind(cfg: RunConfig, *, tensorflow: bool) -> tuple[Any, Any]:
    """The ``(variant, placement)`` handed to the training function: the variant bound (its
    builder imports TensorFlow), or with ``tensorflow=False`` its config (``name``, ``params``)
    unbound."""
    if tensorflow:
        return cfg.variant.build()
    return cfg.variant, PLACEMENTS[cfg.variant.placement]


def _close(rows: Any) -> None:
    """Closes the training generator (its worker threads end with it), quietly."""
    if rows is not None and hasattr(rows, "close"):
        try:
            rows.close()
        except Exception:  # noqa: BLE001
            pass
