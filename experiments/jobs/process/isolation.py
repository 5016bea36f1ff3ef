"""Each job in a process of its own, so that a job killed by a signal is one failed job.

A launcher worker (joblib's, Ray's, submitit's, or the main process for the basic launcher) runs
many jobs. If a job ran inside it, a kill of the job (the out-of-memory killer, a user's
``kill``) would kill the worker and, with joblib, stop the whole sweep. Instead :func:`execute`,
what Hydra's task function calls for each job (and for a single run), skips a finished job (or
one a live process holds), forks :func:`run_in_process` from a process server that has imported
the heavy libraries once (:func:`experiments.jobs.process.hosting.run_isolated`), waits for it and
reports how the job ended: a job killed by a signal is recorded ``failed`` with the signal, and
the sweep goes on. :func:`run_in_process` is the job's side: its process settings, the job's
lock, then :func:`experiments.jobs.runner.run_job`.

A job that can reuse what an earlier job of the same shapes built (MuZero's compiled agents,
:class:`experiments.muzero.agents.AgentCache`) runs in a
:class:`~experiments.jobs.process.hosting.JobHost` instead: a process of the launcher worker's
that runs the worker's jobs of one configuration (:attr:`~experiments.jobs.job.Job.programs`) one
after another (:func:`experiments.jobs.process.hosting.run_hosted`).
Isolation is the same: a job that kills its process is one failed job, and the next job gets a new
host.
"""

from __future__ import annotations

import dataclasses
import os
import traceback
from typing import Any

from experiments.jobs import store
from experiments.jobs.job import MUZERO, Job, JobRequest
from experiments.jobs.process import lifetime
from experiments.jobs.process.hosting import Ended, run_hosted, run_isolated
from experiments.jobs.runner import ProgressFactory, run_job
from experiments.jobs.summary import Summary, error_line

__all__ = ["Skipped", "execute", "overlap_for", "run_in_process"]


@dataclasses.dataclass(frozen=True)
class Skipped:
    """A job :func:`execute` did not run.

    Attributes:
      job: its name.
      reason: a finished job's status (e.g. ``"completed"``), ``"running elsewhere"`` (a live
        process holds it) or ``"stopping"`` (the sweep is stopping; nothing printed).
    """

    job: str
    reason: str

    @property
    def status(self) -> str:
        """``"skipped"``, beside a :class:`~experiments.jobs.summary.Summary`'s statuses."""
        return "skipped"


def execute(
    request: JobRequest, *, job: Job = MUZERO, progress: ProgressFactory | None = None
) -> Summary | Skipped:
    """One job of a sweep (or a single run): skip it if finished, else run it in its own
    process; never raises for the job's own problems (a refused config is a failed job).

    Args:
      request: the job (:func:`experiments.launch.hydra_app.job_request`).
      job: what the job runs.
      progress: draws a progress bar for the job (from the command line), or None.

    Returns:
      The job's summary, or why it was skipped.
    """
    name = request.name
    if lifetime.stop_requested():
        return Skipped(name, "stopping")
    lifetime.as_worker()  # a launcher worker ends with its parent (nothing in the main process)
    go, reason = store.should_run(request.job_dir, force=request.force)
    if go and store.job_locked(request.job_dir):
        go, reason = False, "running elsewhere"
    if not go:
        return _skipped(name, reason)
    error = request.error
    if request.config is None:  # refused: nothing to run in a process of its own
        ended, not_run = None, _refuse(request)
    else:
        ended = _in_process(request, job=job, progress=progress)
        not_run = ended.value
    if isinstance(not_run, str):  # another process holds or finished it
        return _skipped(name, not_run)
    summary = store.read_summary(request.job_dir)
    if ended is not None and (summary is None or summary.status == "running"):
        error = f"the job's process {ended.description} before it finished"
        trace = f"{error} (pid {ended.pid})\n"
        if lifetime.stop_requested():  # killed by the sweep's own stop: a stopped job
            store.mark_interrupted(request.job_dir, reason=error)
        else:
            store.record_failed(
                request.job_dir, name, error, ablation=request.ablation, trace=trace
            )
        summary = store.read_summary(request.job_dir)
    if summary is None:  # its folder cannot be read back: say so all the same
        summary = Summary(status="failed", job=name, error=error)
    if summary.status != "interrupted" or not lifetime.stop_requested():
        _report(summary, name)  # a stopping sweep says once how it ended
    return summary


def _in_process(request: JobRequest, *, job: Job, progress: ProgressFactory | None) -> Ended:
    """:func:`run_in_process` in a process of its own, or in this worker's job host when the
    job keeps what it builds (:attr:`~experiments.jobs.job.Job.cache`)."""
    if job.cache is None:
        return run_isolated(
            run_in_process, request, preload=job.preload, job=job, progress=progress
        )
    runtime = request.config.runtime
    settings = (runtime.threads, runtime.xla_cache, runtime.deterministic)  # once per process
    programs = None if job.programs is None else job.programs(request.config)
    return run_hosted(
        run_in_process,
        request,
        key=(settings, programs),  # a configuration's programs: a host of their own
        preload=job.preload,
        job=job,
        progress=progress,
    )


def _refuse(request: JobRequest) -> str | None:
    """Records a job whose config was refused as ``failed`` (under its lock, as a job's own
    process would); returns why not, as :func:`run_in_process` does."""
    with store.job_lock(request.job_dir) as locked:
        if not locked:
            return "running elsewhere"
        go, reason = store.should_run(request.job_dir, force=request.force)
        if not go:
            return reason
        store.record_failed(
            request.job_dir,
            request.name,
            request.error or "the config was refused",
            ablation=request.ablation,
            trace=request.trace,
        )
    return None


def run_in_process(
    request: JobRequest,
    *,
    job: Job = MUZERO,
    progress: ProgressFactory | None = None,
    session: dict[str, Any] | None = None,
) -> str | None:
    """The job in this process: TensorFlow imported quietly (when the job runs it:
    :attr:`experiments.jobs.job.Job.tensorflow`), threads, the job lock, the job's own
    checks, then :func:`~experiments.jobs.runner.run_job`.

    What :func:`execute` runs in the job's own process (arguments as there). Writes the job's
    results folder and never raises for the job's own problems (they make a failed job).
    ``session``: the dict a :class:`JobHost` keeps for its jobs, where the job's
    :attr:`~experiments.jobs.job.Job.cache` lives; None in a process of the job's own.

    Returns:
      None when it ran the job; else why not, as :func:`execute` reports a skipped job: another
      live process holds the job (``"running elsewhere"``), or another process finished it
      since the caller looked (its status, e.g. ``"completed"``).
    """
    from experiments.base.process import limit_threads, quiet_tensorflow, use_xla_cache

    cfg = request.config
    if cfg is None:
        raise ValueError(f"job {request.name} has no config to run: {request.error}")
    if job.tensorflow:
        quiet_tensorflow()  # a no-op where the process server preloaded it
    limit_threads(cfg.runtime.threads)
    use_xla_cache(cfg.runtime.xla_cache or None)
    # wandb.setup() leaves its service's token in os.environ for child processes; one inherited
    # from the launching process (through a process server started while it was set) may name a
    # service that has ended since, and the job could not log to W&B. A job's W&B never depends
    # on its launcher's: without the token, the job's process starts its own service (or keeps
    # the one it already has: W&B keeps a process's connection), as a fresh process does.
    os.environ.pop("WANDB_SERVICE", None)
    with store.job_lock(request.job_dir) as locked:
        if not locked:
            return "running elsewhere"  # the caller saw it free: another process took it since
        go, reason = store.should_run(request.job_dir, force=request.force)
        if not go:
            return reason  # another sweep on the same folder finished it since the caller looked
        name = request.name
        try:
            job.validate(cfg)
            total = cfg.budget.max_steps or cfg.muzero.training_steps
            show = progress is not None and cfg.runtime.progress
            with lifetime.JobStop() as stop:
                run_job(
                    cfg,
                    request.job_dir,
                    job=name,
                    overrides=store.parse_overrides(request.overrides),
                    choices=request.choices,
                    resolved=request.resolved,
                    train_fn=job.train,
                    ablation=request.ablation,
                    progress=progress(name, total) if show else None,
                    cache=_cache(job, session),
                    overlap=overlap_for(cfg.runtime.threads) if job.overlap else None,
                    stop=stop,
                    tensorflow=job.tensorflow,
                )
        except Exception as err:  # noqa: BLE001 - e.g. the job's own check: one failed job
            store.record_failed(
                request.job_dir,
                name,
                error_line(err),
                ablation=request.ablation,
                trace=traceback.format_exc(),
            )
    return None


def overlap_for(threads: int | None) -> bool:
    """Whether a job with ``runtime.threads=threads`` (None: all cores) has a core to spare for
    work beside its training step: more than one thread. ``gradlab sweep`` gives parallel jobs
    one thread each, where worker threads would only compete (measured both ways:
    docs/performance.md, "Figures moved from the code")."""
    from experiments.base.process import cores

    if threads is not None:
        return threads > 1
    return cores() > 1


def _cache(job: Job, session: dict[str, Any] | None) -> Any:
    if job.cache is None or session is None:
        return None
    if job.name not in session:
        session[job.name] = job.cache()
    return session[job.name]


def _skipped(name: str, reason: str) -> Skipped:
    shown = "running in another process" if reason == "running elsewhere" else reason
    print(f"[  skipped] {name} ({shown})", flush=True)
    return Skipped(name, reason)


def _report(summary: Summary, name: str) -> None:
    extra = f" at step {summary.diverged_step}" if summary.diverged_step else ""
    error = f"  {summary.error}" if summary.error else ""
    print(
        f"[{summary.status:>9}] {name}: {summary.steps} steps{extra}, "
        f"{summary.wall_time_s or 0.0:.1f}s{error}",
        flush=True,
    )
