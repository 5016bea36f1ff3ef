"""The sweep as the commands print it, shared by `gradlab run`, `sweep`, `calibrate` and
`study run` (private: no command imports another): the job a command runs, its config folder,
``--jobs``, and a sweep run through the sweep service (:mod:`experiments.launch.sweep`) with its
notes, dry-run listing, counts and stop line; a single run (a sweep of one job) with its own
lines."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from cli._progress import RichProgress
from experiments.base.errors import ConfigError

if TYPE_CHECKING:
    from experiments.launch import Launched, Stopped, SweepRequest

__all__ = [
    "config_dir_of",
    "echo_stopped",
    "ended",
    "job_of",
    "parallel_jobs",
    "run_command",
    "sweep_command",
]


def job_of(ctx: typer.Context):
    """The job a command runs: the Click context's (tests' stand-ins), else MuZero."""
    from experiments.jobs import MUZERO, Job  # deferred: NumPy (~0.2 s)

    return ctx.obj if isinstance(ctx.obj, Job) else MUZERO


def config_dir_of(config_dir: Path | None) -> Path:
    """``--config-dir`` checked (it must hold a config.yaml), else gradlab's own conf/."""
    from experiments.launch import CONF_DIR  # deferred: Hydra, OmegaConf (~0.6 s)

    if config_dir is None:
        return CONF_DIR
    if not (config_dir / "config.yaml").is_file():
        raise ConfigError(f"--config-dir {str(config_dir)!r} holds no config.yaml")
    return config_dir.resolve()


def _stopped_line(stopped: Stopped) -> str:
    """The one line a stopped sweep (or run) prints."""
    counts = stopped.by_status
    shown = [f"{counts['completed']} of {stopped.jobs} jobs completed"]
    shown += [f"{n} {k}" for k, n in counts.items() if n and k not in ("completed", "interrupted")]
    shown += [f"{counts['interrupted']} interrupted", f"{stopped.not_started} not started"]
    head = "interrupted" if stopped.signum == signal.SIGINT else f"interrupted by {stopped.name}"
    return f"{head}: {', '.join(shown)}; the same command resumes them"


def echo_stopped(stopped: Stopped) -> None:
    typer.echo(_stopped_line(stopped))


def ended(launched: Launched) -> None:
    """Prints how a launch ended early: the launcher's own failure (stderr), a stop's line."""
    if launched.launcher_error is not None:
        typer.echo(
            f"error: the sweep stopped early ({launched.launcher_error}); finished results are "
            "kept: run the same command again to run the unfinished jobs",
            err=True,
        )
    if launched.stopped is not None:
        echo_stopped(launched.stopped)


def sweep_command(request: SweepRequest) -> int:
    """A sweep as `gradlab sweep` runs and prints it (:mod:`experiments.launch.sweep`): the notes,
    the jobs of a dry run, or the counts after the run (or a stop's line); returns the exit
    status (0; 1: a job failed, was interrupted or is unfinished; 128 + signal: stopped).
    `gradlab calibrate` and `gradlab study run` run each of their sweeps through it.

    Raises:
      ConfigError: the sweep refused before anything ran.
    """
    from experiments.launch import (  # deferred: OmegaConf, gymnasium, NumPy (~0.5 s)
        prepare_sweep,
        run_sweep,
    )
    from experiments.protocols.study import check_folder  # deferred: pandas, SciPy (~2 s)

    plan = prepare_sweep(
        request,
        check_folder=check_folder,
        warn=lambda line: typer.echo(f"note: {line}", err=True),
        note=lambda line: typer.echo(f"note: {line}"),
    )
    skipped = plan.skipped
    if request.dry_run:
        for j in plan.jobs:
            typer.echo(f"{'run ' if j.run else 'skip'}  {j.job_dir}  ({j.reason})")
        typer.echo(f"{len(plan.jobs) - len(skipped)} to run, {len(skipped)} to skip")
        return 0
    result = run_sweep(plan, on_hard_stop=echo_stopped)
    ended(result.launched)
    if result.counts is not None:
        counts = result.counts
        line = ", ".join(f"{n} {k}" for k, n in counts.by_status.items())
        if counts.unfinished:
            shown = ", ".join(counts.unfinished[:3])
            line += f", {len(counts.unfinished)} unfinished ({shown}...)"
        typer.echo(f"{len(plan.jobs)} jobs: {line}")
        where = plan.wandb_folder
        if where is not None:
            typer.echo(f"upload the W&B runs with: wandb sync {where}/*/wandb/offline-run-*")
    return result.exit_code


def run_command(request: SweepRequest) -> int:
    """One run (``request.multirun`` False) as `gradlab run` runs and prints it: a finished job's
    "already" line, else the job through the sweep service (with a progress bar on a terminal)
    and its status line (or a stop's line); returns the exit status (0; 1: the job failed, was
    interrupted or is unfinished; 128 + signal: stopped).

    Raises:
      ConfigError: the run refused before anything ran.
    """
    from experiments.launch import (  # deferred: OmegaConf, gymnasium, NumPy (~0.5 s)
        prepare_sweep,
        run_sweep,
    )

    plan = prepare_sweep(request)
    (job,) = plan.jobs
    if not job.run:
        typer.echo(f"{job.job_dir}: already {job.reason}; use --force to run it again")
        return 0
    result = run_sweep(plan, on_hard_stop=echo_stopped, progress=RichProgress)
    ended(result.launched)
    if result.launched.stopped is not None:
        return result.launched.stopped.exit_code
    status = result.status_of(job) or "failed"
    typer.echo(f"{status}: {job.job_dir}")
    return 1 if status in ("failed", "running", "interrupted") else 0


def parallel_jobs(jobs: str, *, launcher_given: bool) -> int:
    """``--jobs`` as jobs at once (:func:`experiments.launch.settings.parallel_jobs`); a note on
    stderr when it is capped at the cores."""
    from experiments.launch import (
        parallel_jobs as count_parallel,  # deferred: OmegaConf, gymnasium, NumPy (~0.5 s)
    )

    parallel = count_parallel(jobs, launcher_given=launcher_given)
    if parallel.note is not None:
        typer.echo(f"note: {parallel.note}", err=True)
    return parallel.count
