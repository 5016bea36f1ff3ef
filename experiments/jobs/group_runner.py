"""A group of jobs (the seeds of one configuration on the seed axis) in one process: the row loop.

:func:`run_group` is :func:`experiments.jobs.runner.run_job` for S jobs trained together
(``muzero.seed_axis``, :class:`experiments.muzero.seed_axis.train.GroupTraining`): each job has
its own folder, first and final summary, ``metrics.jsonl``, curves and W&B run, opened and closed
by :mod:`experiments.jobs.start` and :mod:`experiments.jobs.finish` as a job of its own is. Each
step's rows go to their jobs; after each row a job's own stop rules are asked. A job that
diverges ends there (its summary written at once) and the group drops it; the others go on. The
budget, a stop request and an exception are the group's: each job still running ends with the
status ``run_job`` would give it (``timeout``, ``completed``, ``interrupted``, ``failed`` with
``error.txt``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from experiments.base.process import seed_everything
from experiments.jobs import store
from experiments.jobs.finish import Ending, finish_job
from experiments.jobs.job import JobRequest
from experiments.jobs.runner import Progress, ending_before_step
from experiments.jobs.start import Started, start_job
from experiments.jobs.summary import Summary, error_line
from experiments.verdicts.stopping import DivergenceCheck

__all__ = ["run_group"]


@dataclasses.dataclass
class _Member:
    """One job of the group while it runs."""

    request: JobRequest
    started: Started
    check: DivergenceCheck
    steps: int = 0
    ending: Ending | None = None  # set when the job ends


def run_group(
    requests: Sequence[JobRequest],
    *,
    train_group: Callable[..., Any],
    cache: Any = None,
    clock: Callable[[], float] = time.monotonic,
    stop: Callable[[], bool] | None = None,
    progress: Progress | None = None,
) -> list[Summary]:
    """Runs the jobs of ``requests`` (one configuration, one seed each) as one group.

    Args:
      requests: the jobs, each with its config (the same but for ``seed`` and bookkeeping).
      train_group: ``(config, task, variant, placement, *, seeds, cache) -> group``, a group
        being an iterable of per-step row lists (None for a dropped job) with ``drop(index)``.
      cache: what the process keeps between groups (:attr:`Job.cache`).
      clock: seconds, for the wall-time budget.
      stop: asked before each step; True ends every running job with status ``interrupted``.
      progress: shown the first job's rows (given for a group of one), closed at the end.

    Returns:
      Each job's summary, in the order of ``requests``.
    """
    members = _start_all(requests)
    cfg = requests[0].config
    t0 = clock()
    summaries: dict[int, Summary] = {}
    rows = None
    try:
        # The library-level seeds (a safety net: every generator of a run is built from its own
        # seed, nothing draws from global state) are the first member's, whatever the group.
        seed_everything(cfg.seed, deterministic=cfg.runtime.deterministic)
        variant, placement = cfg.variant.build()
        kept = {} if cache is None else {"cache": cache}
        group = train_group(
            cfg.muzero, cfg.task, variant, placement,
            seeds=[r.config.seed for r in requests], **kept,
        )  # fmt: skip
        rows = iter(group)
        with contextlib.ExitStack() as files:
            writers = [
                files.enter_context(store.MetricsWriter(r.job_dir / "metrics.jsonl"))
                for r in requests
            ]
            while any(m.ending is None for m in members):
                steps = max(m.steps for m in members if m.ending is None)  # in step together
                ended = ending_before_step(cfg, steps, clock() - t0, rows, stop)
                if ended is not None:
                    _end_running(members, ended)
                    break
                step = next(rows, None)
                if step is None:
                    _end_running(members, "completed")
                    break
                for i, (member, row) in enumerate(zip(members, step, strict=True)):
                    if member.ending is not None or row is None:
                        continue
                    row = dict(row)
                    diverged = _record(member, row, writers[i], clock() - t0)
                    if progress is not None and i == 0:
                        progress.update(row)
                    if diverged:
                        group.drop(i)
                        writers[i].close()  # its rows on disk before its summary, as run_job
                        summaries[i] = _finish(member, clock() - t0)
    except Exception as err:  # noqa: BLE001 - recorded in every running job, the sweep goes on
        trace = traceback.format_exc()
        for member in members:
            if member.ending is None:
                member.ending = Ending("failed", member.steps, None, error_line(err))
                store.write_text_atomic(member.request.job_dir / "error.txt", trace)
    finally:
        if progress is not None:
            progress.close()
        if rows is not None and hasattr(rows, "close"):
            with contextlib.suppress(Exception):
                rows.close()
    errors = []
    for i, member in enumerate(members):
        if i not in summaries:
            try:
                summaries[i] = _finish(member, clock() - t0)
            except Exception as err:  # noqa: BLE001 - the others are finished all the same
                errors.append(err)
    if errors:  # the caller records the members left without a final summary as failed
        raise errors[0]
    return [summaries[i] for i in range(len(members))]


def _start_all(requests: Sequence[JobRequest]) -> list[_Member]:
    """Starts every member; if one cannot start, the ones started are ended ``failed`` (their
    W&B runs closed) and the error raised (the caller records the rest)."""
    members: list[_Member] = []
    try:
        for request in requests:
            started = _start(request)
            members.append(_Member(request, started, DivergenceCheck(request.config.divergence)))
    except Exception as err:
        for member in members:
            member.ending = Ending("failed", 0, None, error_line(err))
            with contextlib.suppress(Exception):
                _finish(member, 0.0)
        raise
    return members


def _start(request: JobRequest) -> Started:
    return start_job(
        request.config, request.job_dir, job=request.name,
        overrides=store.parse_overrides(request.overrides), choices=request.choices,
        resolved=request.resolved, ablation=request.ablation,
    )  # fmt: skip


def _end_running(members: Sequence[_Member], status: str) -> None:
    for member in members:
        if member.ending is None:
            member.ending = Ending(status, member.steps, None, None)


def _record(member: _Member, row: dict, writer: Any, elapsed: float) -> bool:
    """Writes one row of a job; returns whether the job diverged there (its ending set)."""
    row.setdefault("step", member.steps + 1)
    row.setdefault("time/elapsed_s", elapsed)
    writer.append(row)
    member.steps += 1
    member.started.tracker.log(row, step=int(row["step"]))
    if member.check.diverged(row):
        member.ending = Ending("diverged", member.steps, int(row["step"]), None)
        return True
    return False


def _finish(member: _Member, wall_time_s: float) -> Summary:
    return finish_job(
        member.request.config, member.request.job_dir, member.started.summary,
        ending=member.ending, wall_time_s=wall_time_s, tracker=member.started.tracker,
    )  # fmt: skip
