"""A sweep's launcher settings: how many jobs at once, and the Hydra overrides that say so.

``--jobs`` (:func:`parallel_jobs`) becomes joblib's launcher with one worker per job at once, each
job's TensorFlow threads, the deal of seeds per worker (:mod:`experiments.jobs.dealing`), and
gradlab's planned sweeper (:func:`launch_overrides`). Nothing here runs a job or prints: the note a
capped ``--jobs`` deserves is returned for the caller to show.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Sequence

from experiments.base.errors import ConfigError
from experiments.launch.plan import PlannedJob

__all__ = ["Parallel", "launch_overrides", "launcher_given", "parallel_jobs", "seed_group_size"]


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


def seed_group_size(planned: Sequence[PlannedJob], parallel: int) -> int:
    """How many seeds of one configuration a sweep trains as one group (``muzero.seed_axis``):
    the largest size, at most ``runtime.seed_group``, whose groups (each configuration's seeds
    to run, cut into groups of that size) the workers finish soonest, a group's cost taken as
    its seeds, dealt largest first to the least loaded worker; 1 (no groups) without the seed
    axis.

    Raises:
      ConfigError: some jobs on the seed axis and others not (a sweep runs on one path).
    """
    on = {j.seed_group is not None for j in planned}
    if len(on) > 1:
        mixed = next(j.name for j in planned if j.seed_group is None)
        raise ConfigError(
            f"muzero.seed_axis=true for some jobs of the sweep but not for {mixed}; a sweep runs "
            "all its jobs on one path: set it for all or none"
        )
    caps = [j.seed_group for j in planned if j.seed_group is not None]
    if not caps:
        return 1
    counts = collections.Counter(j.configuration for j in planned if j.run)
    counts = counts or collections.Counter(j.configuration for j in planned)
    workers = max(1, parallel)

    def makespan(size: int) -> int:
        groups = sorted(
            (min(size, n - start) for n in counts.values() for start in range(0, n, size)),
            reverse=True,
        )
        loads = [0] * workers
        for seeds in groups:
            loads[loads.index(min(loads))] += seeds
        return max(loads)

    spans = {size: makespan(size) for size in range(1, min(min(caps), max(counts.values())) + 1)}
    best = min(spans.values())
    return max(size for size, span in spans.items() if span == best)


def launch_overrides(
    task: Sequence[str],
    hyd: Sequence[str],
    *,
    planned: Sequence[PlannedJob],
    parallel: int,
    jobs: str,
    force: bool,
    seed_group: int = 1,
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
      seed_group: seeds of one configuration launched as one job (:func:`seed_group_size`);
        1: a job per seed.
    """
    from experiments.base.process import cores
    from experiments.jobs.dealing import deal_size

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
        # that shortens the sweep (it builds the configuration once: experiments.jobs.dealing).
        deal = deal_size([j.configuration for j in planned], parallel)
        if seed_group > 1:  # a group is one job: deal them one at a time
            deal = 1
        hyd += [f"hydra.launcher.batch_size={deal}", "hydra.launcher.pre_dispatch=all"]
    if not any(o.split("=", 1)[0] == "hydra/sweeper" for o in hyd):
        # The plan composed and validated every job; Hydra's basic sweeper would do it again
        # before launching (a measurable cost per job: docs/performance_private.md): the same
        # sweeper without that second pass.
        hyd = [*hyd, "hydra/sweeper=planned"]
    if seed_group > 1:
        if "hydra/sweeper=planned" not in hyd:
            raise ConfigError(
                "muzero.seed_axis=true groups seeds with gradlab's sweeper; drop the "
                "hydra/sweeper override"
            )
        hyd.append(f"hydra.sweeper.seed_group={seed_group}")
    if force:
        extra.append("runtime.force=true")
    return [*task, *extra, *hyd]
