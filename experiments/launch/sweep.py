"""The one sweep service: ``gradlab sweep``, ``gradlab run`` (a sweep of one job, not a multirun),
``gradlab calibrate`` (a sweep per rung) and ``gradlab study run`` (a sweep per arm) all run their
jobs through it, in their own process.

:func:`prepare_sweep` turns a :class:`SweepRequest` into a :class:`SweepPlan` (every job planned
and validated by :func:`experiments.launch.plan.plan`, a study folder's design checked, the
launcher settings of :mod:`experiments.launch.settings`) or refuses it with a one-line
:class:`~experiments.base.errors.ConfigError`, before anything is written. :func:`run_sweep`
launches the plan through Hydra (:func:`launch_jobs`, under
:class:`experiments.launch.lifetime.Sweep`, which takes SIGINT/SIGTERM/SIGHUP as a stop request) and
returns a :class:`SweepResult`: the jobs counted from their folders
(:mod:`experiments.launch.counting`), or how a stop left them (the jobs killed while they ran
recorded ``interrupted``). Nothing here prints: notes go to the caller's callbacks, the rest is
returned for the command line to word.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from experiments.base.errors import ConfigError
from experiments.jobs import MUZERO, Job, read_summary
from experiments.launch import plan as planning
from experiments.launch.counting import Counts, Stopped, count_jobs, mark_stopped, wait_for_running
from experiments.launch.plan import PlannedJob
from experiments.launch.settings import Parallel, launch_overrides, launcher_given, parallel_jobs

__all__ = [
    "FolderCheck",
    "Launched",
    "SweepPlan",
    "SweepRequest",
    "SweepResult",
    "launch_jobs",
    "prepare_sweep",
    "run_sweep",
]


def _ignore(line: str) -> None:
    del line


@dataclasses.dataclass(frozen=True)
class SweepRequest:
    """What a sweep is asked to run.

    Attributes:
      overrides: ``ablation=NAME`` (required), then any overrides, Hydra's own included.
      jobs: jobs at once: ``auto`` (one per core) or N (:func:`~experiments.launch.settings.
        parallel_jobs`).
      force: re-run finished jobs too.
      dry_run: plan only (the results folder need not be writable); :func:`run_sweep` refuses it.
      config_dir: the config folder (default: gradlab's own ``conf/``).
      job: what each job runs (MuZero; the tests' stand-ins).
      multirun: a sweep (``ablation=NAME`` required); False: one run (``gradlab run``: one job,
        no ablation, one value per key, launched by Hydra's own launcher in this process, so
        ``jobs`` is not read).
    """

    overrides: tuple[str, ...]
    jobs: str = "auto"
    force: bool = False
    dry_run: bool = False
    config_dir: Path | None = None
    job: Job = MUZERO
    multirun: bool = True


@dataclasses.dataclass(frozen=True)
class SweepPlan:
    """A sweep planned and checked, ready to launch.

    Attributes:
      request: what was asked.
      jobs: every job, in Hydra's launch order, each with whether it runs.
      parallel: jobs at once.
      overrides: the overrides Hydra launches the sweep with.
      config_dir: the config folder.
    """

    request: SweepRequest
    jobs: tuple[PlannedJob, ...]
    parallel: Parallel
    overrides: tuple[str, ...]
    config_dir: Path

    @property
    def skipped(self) -> frozenset[str]:
        """The names of the jobs finished before the sweep (not run again)."""
        return frozenset(j.name for j in self.jobs if not j.run)

    @property
    def wandb_folder(self) -> Path | None:
        """The ablation folder whose jobs keep W&B offline runs (some job's ``logger.mode`` is
        not ``none``), else None."""
        if any(j.logger_mode != "none" for j in self.jobs):
            return self.jobs[0].job_dir.parent
        return None


@dataclasses.dataclass(frozen=True)
class Launched:
    """How a launch ended.

    Attributes:
      stopped: the stop (a signal came; the jobs at their next step), else None.
      launcher_error: the launcher's own failure (e.g. a Ray cluster gone) before any stop, in
        one line, ``Type: first line of its message``, else None; finished results are kept.
    """

    stopped: Stopped | None = None
    launcher_error: str | None = None


@dataclasses.dataclass(frozen=True)
class SweepResult:
    """How a sweep ended.

    Attributes:
      plan: the sweep.
      launched: the launch's end (nothing to run: nothing stopped, no error).
      counts: the jobs by status, or None when stopped.
    """

    plan: SweepPlan
    launched: Launched
    counts: Counts | None

    @property
    def exit_code(self) -> int:
        """``128 + signal`` when stopped; 1 when a job failed, was interrupted or is unfinished;
        else 0."""
        if self.launched.stopped is not None:
            return self.launched.stopped.exit_code
        return 0 if self.counts is not None and self.counts.ok else 1

    def status_of(self, job: PlannedJob) -> str | None:
        """``job``'s status as its summary says now (None: it has none)."""
        summary = read_summary(job.job_dir)
        return summary.status if summary else None


FolderCheck = Callable[..., list[str]]
"""A check of a results folder a sweep writes into, called as ``check(folder, config_dir=...,
jobs=[each job's overrides])``; its notes are returned, a refusal raised as a ConfigError (a
pre-registered study's folder: :func:`experiments.protocols.study.record.check_folder`, which the
command line hands in, the protocols sitting above this layer)."""


def prepare_sweep(
    request: SweepRequest,
    *,
    check_folder: FolderCheck | None = None,
    warn: Callable[[str], None] = _ignore,
    note: Callable[[str], None] = _ignore,
) -> SweepPlan:
    """Plans and checks a sweep; writes nothing.

    Args:
      request: the sweep.
      check_folder: checks each results folder of the sweep (a study's design, before any run).
      warn: takes a warning as it arises (a ``--jobs`` capped at the cores).
      note: takes a note on a study folder as it arises (a setting added since registration).

    Raises:
      ConfigError: no ``ablation=`` (a sweep), a bad ``--jobs``, anything
        :func:`~experiments.launch.plan.plan` refuses, a folder ``check_folder`` refuses.
    """
    from experiments.launch.hydra_app import CONF_DIR

    conf = CONF_DIR if request.config_dir is None else Path(request.config_dir)
    overrides = list(request.overrides)
    task, hyd = planning.split_hydra_overrides(overrides)
    parallel = Parallel(1)
    if request.multirun:
        if not any(o.split("=", 1)[0] == "ablation" for o in task):
            options = ", ".join(planning.group_options(conf, "ablation"))
            raise ConfigError(f"gradlab sweep needs ablation=NAME; choose one of: {options}")
        parallel = parallel_jobs(request.jobs, launcher_given=launcher_given(hyd))
        if parallel.note is not None:
            warn(parallel.note)
    jobs = planning.plan(
        overrides,
        multirun=request.multirun,
        config_dir=conf,
        force=request.force,
        check_writable=not request.dry_run,
        job=request.job,
    )
    if check_folder is not None:
        for folder in sorted({j.job_dir.parent for j in jobs}):
            overrides_of = [j.overrides for j in jobs if j.job_dir.parent == folder]
            for line in check_folder(folder, config_dir=conf, jobs=overrides_of):
                note(line)
    if request.multirun:
        launch = launch_overrides(
            task, hyd, planned=jobs, parallel=parallel.count, jobs=request.jobs, force=request.force
        )
    else:  # one run: its overrides as given, Hydra's own launcher
        launch = [*task, *(["runtime.force=true"] if request.force else []), *hyd]
    return SweepPlan(request, tuple(jobs), parallel, tuple(launch), conf)


def run_sweep(
    plan: SweepPlan,
    *,
    on_hard_stop: Callable[[Stopped], None] | None = None,
    progress: Any = None,
) -> SweepResult:
    """Runs a planned sweep's jobs (the finished ones are skipped) and counts how they ended.

    Args:
      plan: from :func:`prepare_sweep` (not a dry run).
      on_hard_stop: takes the jobs' counts after a hard stop (a second signal, or the grace ran
        out), just before this process exits with ``128 + signal``.
      progress: a progress factory for a single run on a terminal (:func:`launch_jobs`), or
        None.
    """
    if plan.request.dry_run:
        raise ValueError("a dry run's plan is not run")
    launched = Launched()
    if len(plan.skipped) < len(plan.jobs):
        launched = launch_jobs(
            plan.overrides,
            planned=plan.jobs,
            config_dir=plan.config_dir,
            job=plan.request.job,
            multirun=plan.request.multirun,
            progress=progress,
            on_hard_stop=on_hard_stop,
        )
    if launched.stopped is not None:
        return SweepResult(plan, launched, None)
    return SweepResult(plan, launched, count_jobs(plan.jobs, skipped=plan.skipped))


def launch_jobs(
    overrides: Sequence[str],
    *,
    planned: Sequence[PlannedJob],
    config_dir: Path,
    job: Job,
    multirun: bool,
    progress: Any = None,
    on_hard_stop: Callable[[Stopped], None] | None = None,
) -> Launched:
    """Runs Hydra on ``overrides`` (:func:`experiments.launch.hydra_app.launch`) so that nothing
    it starts outlives it.

    A stop signal ends the jobs at their next step (:class:`experiments.launch.lifetime.Sweep`);
    the jobs killed while they ran are then recorded ``interrupted``. A launcher's own failure
    (e.g. Ray down) is returned in one line. Finished results are kept either way.

    Args:
      overrides: Hydra's overrides for the launch.
      planned: the jobs the launch runs (counted after a stop).
      config_dir: the config folder.
      job: what each job runs.
      multirun: a sweep, or one run.
      progress: a progress factory for a single run on a terminal, or None.
      on_hard_stop: takes the counts after a hard stop, before this process exits.

    Raises:
      ConfigError: as Hydra's launch raises it.
    """
    from experiments.launch import hydra_app, lifetime

    def hard_stop(signum: int) -> None:
        stopped = mark_stopped(planned, signum)
        if on_hard_stop is not None:
            on_hard_stop(stopped)

    error = None
    with lifetime.Sweep(on_hard_stop=hard_stop) as stopping:
        try:
            hydra_app.launch(
                list(overrides), multirun=multirun, config_dir=config_dir, job=job,
                progress=progress,
            )  # fmt: skip
        except ConfigError:
            raise
        except SystemExit:  # Ray's driver turns SIGTERM into sys.exit(15) in this thread
            if not stopping.stopped(timeout=5):
                raise
            wait_for_running(planned, timeout=lifetime.GRACE_S)
        except Exception as err:  # noqa: BLE001 - a launcher's own failure (e.g. Ray down)
            if stopping.signal is None:
                text = str(err).strip().splitlines()
                error = f"{type(err).__name__}: {text[0][:200] if text else ''}"
    stopped = None if stopping.signal is None else mark_stopped(planned, stopping.signal)
    return Launched(stopped=stopped, launcher_error=error)
