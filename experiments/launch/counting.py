"""How a sweep's jobs ended, read from their folders: the counts after a sweep, and after a stop
(which first records the jobs killed while they ran as ``interrupted``).

The counts are data; the command line words them (``cli/_sweep.py``).
"""

from __future__ import annotations

import dataclasses
import signal
import time
from collections.abc import Collection, Sequence

from experiments.jobs import job_locked, mark_interrupted, read_summary
from experiments.launch.plan import PlannedJob

__all__ = ["Counts", "Stopped", "count_jobs", "mark_stopped", "wait_for_running"]

_ENDED = ("completed", "diverged", "timeout", "failed", "interrupted")


@dataclasses.dataclass(frozen=True)
class Counts:
    """The jobs of a sweep by how they ended.

    Attributes:
      by_status: jobs per status, in the order shown: ``completed``, ``diverged``, ``timeout``,
        ``failed``, ``skipped`` always; then ``interrupted`` (a job's process stopped by a
        signal) and ``running elsewhere`` (another sweep on the same folder runs it now) in the
        order first met, when met.
      unfinished: the names of the jobs that never finished (no summary, or ``running`` with no
        live process), in launch order.
    """

    by_status: dict[str, int]
    unfinished: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """No job failed, was interrupted or is unfinished (the sweep's exit status 0)."""
        return not (
            self.by_status["failed"] or self.by_status.get("interrupted") or self.unfinished
        )


def count_jobs(jobs: Sequence[PlannedJob], *, skipped: Collection[str]) -> Counts:
    """The jobs' statuses as their summaries say now; those named in ``skipped`` (finished before
    the sweep) count as ``skipped``."""
    counts = dict.fromkeys(("completed", "diverged", "timeout", "failed", "skipped"), 0)
    missing = []
    for job in jobs:
        if job.name in skipped:
            counts["skipped"] += 1
            continue
        summary = read_summary(job.job_dir)
        status = summary.status if summary else None
        if status in counts or status == "interrupted":  # a job's process stopped by a signal
            counts[status] = counts.get(status, 0) + 1
        elif status == "running" and job_locked(job.job_dir):
            # another sweep on the same folder runs it now: its own sweep reports how it ends
            counts["running elsewhere"] = counts.get("running elsewhere", 0) + 1
        else:  # no summary, or "running" with no live process: the job never finished
            missing.append(job.name)
    return Counts(counts, tuple(missing))


@dataclasses.dataclass(frozen=True)
class Stopped:
    """A sweep (or run) stopped by a signal, its jobs counted after the stop.

    Attributes:
      signum: the first stop signal (SIGINT, SIGTERM or SIGHUP).
      jobs: the jobs planned.
      by_status: jobs per status among ``completed``, ``diverged``, ``timeout``, ``failed``,
        ``interrupted`` (in that order); the other jobs never started.
    """

    signum: int
    jobs: int
    by_status: dict[str, int]

    @property
    def name(self) -> str:
        """The signal's name, e.g. ``SIGTERM``."""
        return signal.Signals(self.signum).name

    @property
    def not_started(self) -> int:
        """Jobs with no summary of one of the statuses counted."""
        return self.jobs - sum(self.by_status.values())

    @property
    def exit_code(self) -> int:
        """``128 + signal``: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP."""
        return 128 + self.signum


def mark_stopped(jobs: Sequence[PlannedJob], signum: int) -> Stopped:
    """Records the jobs killed while they ran (the grace ran out, or a second signal) as
    ``interrupted`` (:func:`experiments.jobs.store.mark_interrupted`), then counts them all."""
    reason = f"stopped by {signal.Signals(signum).name} before its next step"
    counts = dict.fromkeys(_ENDED, 0)
    for job in jobs:
        mark_interrupted(job.job_dir, reason=reason)
        summary = read_summary(job.job_dir)
        if summary is not None and summary.status in counts:
            counts[summary.status] += 1
    return Stopped(signum, len(jobs), counts)


def wait_for_running(jobs: Sequence[PlannedJob], *, timeout: float) -> None:
    """Waits up to ``timeout`` seconds for the jobs some live process holds (they stop at their
    next step) to end, when the launcher's own wait was cut short."""
    deadline = time.monotonic() + timeout
    while any(job_locked(j.job_dir) for j in jobs) and time.monotonic() < deadline:
        time.sleep(0.1)
