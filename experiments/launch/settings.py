"""A sweep's launcher settings: how many jobs at once, and the Hydra overrides that say so.

``--jobs`` (:func:`parallel_jobs`) becomes joblib's launcher with one worker per job at once, each
job's TensorFlow threads, the deal of seeds per worker (:mod:`experiments.launch.dealing`), and
gradlab's planned sweeper (:func:`launch_overrides`). Nothing here runs a job or prints: the note a
capped ``--jobs`` deserves is returned for the caller to show.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from experiments.base.errors import ConfigError
from experiments.launch.dealing import deal_size
from experiments.launch.plan import PlannedJob

__all__ = ["Parallel", "launch_overrides", "launcher_given", "parallel_jobs"]


@dataclasses.dataclass(frozen=True)
class Parallel:
    """Jobs at once on this machine.

    Attributes:
      count: jobs at once (>= 1).
      note: why ``count`` is less than asked (capped at the cores), or None.
    """

    count: int
    note: str | None = None


def launcher_given(hydra_overrides: Sequence[str]) -> bool:
    """Whether Hydra's own overrides choose a launcher (``hydra/launcher=...``)."""
    return any(o.split("=", 1)[0] == "hydra/launcher" for o in hydra_overrides)


def parallel_jobs(jobs: str, *, launcher_given: bool) -> Parallel:
    """``--jobs``: ``auto`` (one per core, unless another launcher is chosen) or N >= 1.

    N above the cores this process may use is capped at them, with a note: each job is a process
    of its own with at least one thread, so more jobs than cores only share the cores (and
    memory) and slow every job, and a mistyped ``--jobs 100000`` would start that many worker
    processes. Capped rather than refused, so that one command line serves a laptop and a large
    machine alike.

    Raises:
      ConfigError: not ``auto`` nor an integer >= 1; N > 1 beside a chosen launcher.
    """
    from experiments.base.process import cores

    if jobs == "auto":
        return Parallel(1 if launcher_given else cores())
    try:
        count = int(jobs)
    except ValueError:
        message = f"--jobs {jobs!r} is not valid; expected auto or an integer >= 1"
        raise ConfigError(message) from None
    if count < 1:
        raise ConfigError(f"--jobs {count} is out of range; expected auto or an integer >= 1")
    if count > 1 and launcher_given:
        raise ConfigError(f"--jobs {count} picks hydra/launcher=joblib; drop one of the two")
    available = cores()
    if count > available:
        note = (
            f"--jobs {count} capped at {available}, the cores this process may use "
            "(more jobs at once than cores only slows each of them)"
        )
        return Parallel(available, note)
    return Parallel(count)


def launch_overrides(
    task: Sequence[str],
    hyd: Sequence[str],
    *,
    planned: Sequence[PlannedJob],
    parallel: int,
    jobs: str,
    force: bool,
) -> list[str]:
    """The overrides Hydra launches a planned sweep with: the task's, then gradlab's runtime
    settings, then Hydra's own (the launcher, its deal, the planned sweeper).

    Args:
      task: the command line's task overrides.
      hyd: the command line's Hydra overrides.
      planned: the sweep's jobs (:func:`experiments.launch.plan.plan`).
      parallel: jobs at once (:func:`parallel_jobs`).
      jobs: ``--jobs`` as given (``auto``: one TensorFlow thread per job).
      force: re-run finished jobs too.
    """
    from experiments.base.process import cores

    extra = ["runtime.progress=false"]
    hyd = list(hyd)
    if parallel > 1:
        threads = 1 if jobs == "auto" else max(1, cores() // parallel)
        extra.append(f"runtime.threads={threads}")
        hyd = [*hyd, "hydra/launcher=joblib", f"hydra.launcher.n_jobs={parallel}"]
        # joblib cuts its queue into deals of batch_size * n_jobs jobs at a time; its default
        # first cut (pre_dispatch, 2 * n_jobs jobs) would shift every later deal off the
        # configurations' boundaries, so everything is queued at once (workers still take the
        # next deal as they free up). A run of seeds of one configuration goes to one worker when
        # that shortens the sweep (it builds the configuration once: experiments.launch.dealing).
        deal = deal_size([j.configuration for j in planned], parallel)
        hyd += [f"hydra.launcher.batch_size={deal}", "hydra.launcher.pre_dispatch=all"]
    if not any(o.split("=", 1)[0] == "hydra/sweeper" for o in hyd):
        # The plan composed and validated every job; Hydra's basic sweeper would do it again
        # before launching (a measurable cost per job: docs/performance_private.md): the same
        # sweeper without that second pass.
        hyd = [*hyd, "hydra/sweeper=planned"]
    if force:
        extra.append("runtime.force=true")
    return [*task, *extra, *hyd]
