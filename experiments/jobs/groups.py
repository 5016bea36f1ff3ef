"""The seeds of one group (``muzero.seed_axis``) run as one job process, each job kept whole.

:func:`execute_group` is :func:`experiments.jobs.isolation.execute` for a group a sweep launched
as one Hydra job (:mod:`experiments.launch.groups`): each member is skipped, refused or reported
as ``execute`` would, and the members left run together in this worker's job host (or a process
of their own), each under its own lock, through :func:`experiments.jobs.group_runner.run_group`.
A host killed with the group records every member still running ``failed`` (``interrupted``
when the sweep is stopping), as it does a job of its own.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Sequence
from typing import Any

from experiments.jobs import lifetime, store
from experiments.jobs.group_runner import run_group
from experiments.jobs.isolation import (
    Skipped,
    in_job_process,
    job_cache,
    job_progress,
    outcome,
    refuse,
    set_up_process,
    skipped,
    why_not,
)
from experiments.jobs.job import MUZERO, Job, JobRequest
from experiments.jobs.runner import ProgressFactory
from experiments.jobs.summary import Summary, error_line

__all__ = ["execute_group", "run_group_in_process"]


def execute_group(
    requests: Sequence[JobRequest], *, job: Job = MUZERO, progress: ProgressFactory | None = None
) -> list[Summary | Skipped]:
    """The members of one group (one configuration, a seed each): skipped if finished or held
    elsewhere, refused if their config was, else run together; never raises for the jobs' own
    problems. ``progress``: draws a bar for a group of one (a single ``gradlab run``; a group of
    several, in a sweep, has the sweep's progress lines). Returns each member's summary or why it
    was skipped, in order."""
    if lifetime.stop_requested():
        return [Skipped(r.name, "stopping") for r in requests]
    lifetime.as_worker()
    results: dict[int, Summary | Skipped] = {}
    runnable: list[int] = []
    for i, request in enumerate(requests):
        reason = why_not(request)
        if reason is not None:
            results[i] = skipped(request.name, reason)
        elif request.config is None:
            results[i] = outcome(request, None, refuse(request))
        else:
            runnable.append(i)
    if runnable:
        members = [requests[i] for i in runnable]
        runtime = members[0].config.runtime
        ended = in_job_process(
            run_group_in_process, members, runtime=runtime, job=job, progress=progress
        )
        reasons = ended.value if isinstance(ended.value, list) else [None] * len(members)
        for i, reason in zip(runnable, reasons, strict=True):
            results[i] = outcome(requests[i], ended, reason)
    return [results[i] for i in range(len(requests))]


def run_group_in_process(
    requests: Sequence[JobRequest],
    *,
    job: Job = MUZERO,
    progress: ProgressFactory | None = None,
    session: dict[str, Any] | None = None,
) -> list[str | None]:
    """The group in this process: its settings, each member's lock, the job's checks, then
    :func:`~experiments.jobs.group_runner.run_group` on the members it holds.

    Returns:
      Per member, None when it ran, else why not (``"running elsewhere"``, or the status
      another process finished it with since the caller looked).
    """
    if job.train_group is None:
        raise ValueError(f"job {job.name} has no group training (train_group)")
    set_up_process(requests[0].config.runtime)
    reasons: list[str | None] = []
    with contextlib.ExitStack() as locks:
        held = []
        for request in requests:
            if not locks.enter_context(store.job_lock(request.job_dir)):
                reasons.append("running elsewhere")
                continue
            go, reason = store.should_run(request.job_dir, force=request.force)
            reasons.append(None if go else reason)
            if go:
                held.append(request)
        if not held:
            return reasons
        before = {r.job_dir: _started_at(r) for r in held}
        try:
            for request in held:
                job.validate(request.config)
            with lifetime.JobStop() as stop:
                run_group(
                    held, train_group=job.train_group, cache=job_cache(job, session), stop=stop,
                    progress=job_progress(progress, held[0]) if len(held) == 1 else None,
                )  # fmt: skip
        except Exception as err:  # noqa: BLE001 - e.g. the job's own check: failed jobs
            for request in held:
                ended = store.read_summary(request.job_dir)
                this_run = ended is not None and ended.started_at != before[request.job_dir]
                if this_run and ended.status != "running":
                    continue  # ended in this group before the error: its own summary stands
                store.record_failed(
                    request.job_dir, request.name, error_line(err),
                    ablation=request.ablation, trace=traceback.format_exc(),
                )  # fmt: skip
    return reasons


def _started_at(request: JobRequest) -> str | None:
    """When the job's last attempt started, as its summary says (None: no summary)."""
    summary = store.read_summary(request.job_dir)
    return None if summary is None else summary.started_at
