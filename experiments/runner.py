"""One job, from its composed config to ``summary.json``: the orchestration, nothing else.

:func:`execute` is what the Hydra task function calls for each job of a sweep (and for a single
run), in the launcher's process: it skips a finished job, runs the job in a process of its own
(:mod:`experiments.isolation`) and reports how it ended; a job killed by a signal is recorded
``failed`` with the signal, and the sweep goes on. :func:`run_job` is the job itself (in that
process): the training loop, writing rows, the stop rules of :mod:`experiments.stopping`. It never
raises for a problem inside the job: a diverged run is a result (status ``diverged``), a budget
ends it cleanly (``timeout``), an exception is recorded (``failed`` with ``error.txt``), a stop
(the sweep's, or a signal to the job's process: :mod:`experiments.lifetime`) ends it at the next
step (``interrupted``, its rows kept).
"""

from __future__ import annotations

import importlib.metadata
import platform
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from experiments import lifetime, store
from experiments.config import RunConfig, to_run_config, without_hydra
from experiments.isolation import run_hosted, run_isolated
from experiments.job import MUZERO, Job, TrainFn
from experiments.stopping import DivergenceCheck

__all__ = ["Progress", "ProgressFactory", "execute", "run_in_process", "run_job"]

_VERSIONED = ("tensorflow", "keras", "numpy", "hydra-core", "omegaconf", "wandb", "gradlab")


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


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in _VERSIONED:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def _first_line(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}".splitlines()[0][:500]


def _planned_steps(cfg: RunConfig) -> int | None:
    steps = getattr(cfg.muzero, "training_steps", None)
    return steps if isinstance(steps, int) else None


def _return_span(cfg: RunConfig) -> float | None:
    bounds = cfg.task.return_range
    return None if bounds is None else float(bounds[1] - bounds[0])


def _stability(rows: list[dict], cfg: RunConfig, wall_time_s: float) -> dict:
    from experiments.metrics import stability_summary

    try:
        return dict(
            stability_summary(
                rows,
                threshold=_finite_or_none(cfg.task.threshold),
                wall_time_s=wall_time_s,
                divergence=cfg.divergence,
                training_steps=_planned_steps(cfg),
                return_range=_return_span(cfg),
            )
        )
    except Exception as err:  # noqa: BLE001 - a summary figure must not fail the job
        print(f"warning: stability summary failed: {err}", file=sys.stderr)
        return {}


def _finite_or_none(value: float | None) -> float | None:
    return None if value is None or value != value else float(value)


def _yaml(resolved: Mapping[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(dict(resolved), sort_keys=False, default_flow_style=False)


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
) -> dict[str, Any]:
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
      tracker: a :class:`~experiments.tracking.Tracker`; default one from ``cfg.logger``.
      progress: where to report each row; default none.
      clock: seconds, for the wall-time budget.
      cache: what the job's process keeps between jobs (:attr:`Job.cache`), passed to
        ``train_fn`` as ``cache=``; None: nothing kept, and ``train_fn`` called without it.
      overlap: passed to ``train_fn`` as ``overlap=`` (:attr:`Job.overlap`: work on worker
        threads beside the training step); None: ``train_fn`` called without it.
      stop: asked before each step; True ends the job there with status ``interrupted``
        (:class:`experiments.lifetime.JobStop`); None: never.

    Returns:
      The summary dict (see ``docs/interfaces.md``).
    """
    job_dir = Path(job_dir)
    job_dir.mkdir(parents=True, exist_ok=True)
    store.discard_attempt(job_dir)
    store.write_text_atomic(job_dir / "config.yaml", _yaml(resolved))
    overrides = {k: v for k, v in overrides.items() if not store.is_bookkeeping(k)}
    summary: dict[str, Any] = {
        "status": "running",
        "job": job,
        "ablation": ablation,
        "overrides": dict(overrides),
        "group": {k: v for k, v in overrides.items() if k != "seed"},
        "seed": cfg.seed,
        "task": cfg.task.name,
        "regime": choices.get("regime"),
        "variant": cfg.variant.name,
        "variant_params": cfg.variant.params,
        "placement": cfg.variant.placement,
        "q_form": getattr(cfg.muzero, "q_form", None),
        "steps": 0,
        "diverged_step": None,
        "wall_time_s": 0.0,
        "threshold": _finite_or_none(cfg.task.threshold),
        "training_steps": _planned_steps(cfg),
        "return_range": _return_span(cfg),
        "reward_scale": cfg.task.reward_scale,
        "pid": _pid(),
        "versions": _versions(),
        "stability": {},
        "error": None,
    }
    store.write_json_atomic(job_dir / "summary.json", summary)
    if tracker is None:
        from experiments.tracking import make_tracker

        tracker = make_tracker(
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
    progress = progress or _NoProgress()
    t0 = clock()
    status, steps, diverged_step = "completed", 0, None
    rows = None
    try:
        from experiments.process import seed_everything

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
        status = "failed"
        summary["error"] = _first_line(err)
        store.write_text_atomic(job_dir / "error.txt", traceback.format_exc())
    finally:
        progress.close()
        if rows is not None and hasattr(rows, "close"):
            try:
                rows.close()
            except Exception:  # noqa: BLE001
                pass
    wall = clock() - t0
    summary.update(status=status, steps=steps, diverged_step=diverged_step, wall_time_s=wall)
    summary["stability"] = _stability(store.read_metrics(job_dir / "metrics.jsonl"), cfg, wall)
    summary["warnings"] = _warnings(tracker)
    _write_curves(job_dir)  # before the final summary: a kill here leaves the job to re-run
    store.write_json_atomic(job_dir / "summary.json", summary)
    tracker.finish(summary)
    if _warnings(tracker) != summary["warnings"]:  # closing the W&B run went wrong
        summary["warnings"] = _warnings(tracker)
        store.write_json_atomic(job_dir / "summary.json", summary)
    return summary


def _write_curves(job_dir: Path) -> None:
    """The job's compact curves.csv.gz, which figures redraw from where metrics.jsonl is not kept
    (a clone of committed findings); a figure file never fails a job."""
    try:
        from experiments.report.curves import write_curves

        write_curves(job_dir)
    except Exception as err:  # noqa: BLE001 - as _stability
        print(f"warning: curves.csv.gz not written: {err}", file=sys.stderr)


def _warnings(tracker: Any) -> list[str]:
    warning = getattr(tracker, "warning", None)
    return [f"W&B: {warning}"] if warning else []


def _pid() -> int:
    import os

    return os.getpid()


def _failed(job_dir: Path, job: str, error: str, *, ablation: str | None, trace: str) -> None:
    """Records a job that ended without a summary of its own (before its start, or killed)."""
    previous = store.read_summary(job_dir) or {}
    summary = {
        **previous,
        "status": "failed",
        "job": job,
        "ablation": ablation,
        "error": error,
        "versions": previous.get("versions") or _versions(),
    }
    job_dir.mkdir(parents=True, exist_ok=True)
    store.write_text_atomic(job_dir / "error.txt", trace)
    store.write_json_atomic(job_dir / "summary.json", summary)


def run_in_process(
    cfg: Any,
    job_dir: str | Path,
    *,
    overrides: list[str],
    choices: Mapping[str, str | None],
    job: Job = MUZERO,
    progress: ProgressFactory | None = None,
    session: dict[str, Any] | None = None,
) -> str | None:
    """The job in this process: threads, the job lock, validation, then :func:`run_job`.

    What :func:`execute` runs in the job's own process (arguments as there). Writes the job's
    results folder and never raises for the job's own problems (a bad config is a failed job).
    ``session``: the dict a :class:`~experiments.isolation.JobHost` keeps for its jobs, where
    the job's :attr:`~experiments.job.Job.cache` lives; None in a process of the job's own.

    Returns:
      None when it ran the job; else why not, as :func:`execute` reports a skipped job: another
      live process holds the job (``"running elsewhere"``), or another process finished it
      since the caller looked (its status, e.g. ``"completed"``).
    """
    from omegaconf import OmegaConf

    from experiments.process import limit_threads, quiet_tensorflow, use_xla_cache

    job_dir = Path(job_dir)
    parsed = store.parse_overrides(overrides)
    name = store.job_name(parsed)
    ablation = choices.get("ablation")
    quiet_tensorflow()  # a no-op where the process server preloaded it
    threads = OmegaConf.select(cfg, "runtime.threads")
    limit_threads(threads if isinstance(threads, int) and threads > 0 else None)
    cache = OmegaConf.select(cfg, "runtime.xla_cache")
    use_xla_cache(cache if isinstance(cache, str) and cache else None)
    with store.job_lock(job_dir) as locked:
        if not locked:
            return "running elsewhere"  # the caller saw it free: another process took it since
        go, reason = store.should_run(job_dir, force=bool(OmegaConf.select(cfg, "runtime.force")))
        if not go:
            return reason  # another sweep on the same folder finished it since the caller looked
        try:
            run_cfg = to_run_config(cfg)
            job.validate(run_cfg)
            total = run_cfg.budget.max_steps or getattr(run_cfg.muzero, "training_steps", None)
            show = progress is not None and run_cfg.runtime.progress
            with lifetime.JobStop() as stop:
                run_job(
                    run_cfg,
                    job_dir,
                    job=name,
                    overrides=parsed,
                    choices=choices,
                    resolved=OmegaConf.to_container(without_hydra(cfg), resolve=True),
                    train_fn=job.train,
                    ablation=ablation,
                    progress=progress(name, total) if show else None,
                    cache=_cache(job, session),
                    overlap=overlap_for(threads) if job.overlap else None,
                    stop=stop,
                )
        except Exception as err:  # noqa: BLE001 - e.g. a bad config: one failed job
            _failed(
                job_dir, name, _first_line(err), ablation=ablation, trace=traceback.format_exc()
            )
    return None


def overlap_for(threads: Any) -> bool:
    """Whether a job with ``runtime.threads=threads`` (None: all cores) has a core to spare for
    work beside its training step: more than one thread. ``gradlab sweep`` gives parallel jobs
    one thread each, where worker threads would only compete (measured: two runs at once on 2
    cores 2.5% slower with them; one run on 2 cores faster, README Performance)."""
    from experiments.process import cores

    if isinstance(threads, int) and threads > 0:
        return threads > 1
    return cores() > 1


def _cache(job: Job, session: dict[str, Any] | None) -> Any:
    if job.cache is None or session is None:
        return None
    if job.name not in session:
        session[job.name] = job.cache()
    return session[job.name]


def _host_key(cfg: Any) -> tuple:
    """The process settings a job sets once per process (see :mod:`experiments.process`)."""
    from omegaconf import OmegaConf

    return tuple(
        OmegaConf.select(cfg, f"runtime.{name}")
        for name in ("threads", "xla_cache", "deterministic")
    )


def execute(
    cfg: Any,
    job_dir: str | Path,
    *,
    overrides: list[str],
    choices: Mapping[str, str | None],
    job: Job = MUZERO,
    progress: ProgressFactory | None = None,
) -> dict[str, Any]:
    """One job of a sweep (or a single run): skip it if finished, else run it in its own
    process; never raises for the job's own problems.

    Args:
      cfg: the job's composed config (a ``DictConfig`` on gradlab's schema).
      job_dir: the job's folder (Hydra's output dir for the job).
      overrides: the job's ``key=value`` overrides (Hydra's ``overrides.task``).
      choices: Hydra's config-group choices (``hydra.runtime.choices``: ``task``, ``ablation``,
        ``regime``...).
      job: what the job runs.
      progress: draws a progress bar for the job (from the command line), or None.

    Returns:
      The summary; ``{"status": "skipped", "job": ..., "reason": ...}`` for a finished job, one
      running in another process, or one not started because the sweep is stopping
      (``"stopping"``, nothing printed: the command line says how the sweep ended).
    """
    job_dir = Path(job_dir)
    parsed = store.parse_overrides(overrides)
    name = store.job_name(parsed)
    ablation = choices.get("ablation")
    if lifetime.stop_requested():
        return {"status": "skipped", "job": name, "reason": "stopping"}
    lifetime.as_worker()  # a launcher worker ends with its parent (nothing in the main process)
    force = bool(getattr(getattr(cfg, "runtime", None), "force", False))
    go, reason = store.should_run(job_dir, force=force)
    if go and store.job_locked(job_dir):
        go, reason = False, "running elsewhere"
    if not go:
        return _skipped(name, reason)
    arguments = dict(
        preload=job.preload,
        overrides=list(overrides),
        choices=dict(choices),
        job=job,
        progress=progress,
    )
    if job.cache is None:
        ended = run_isolated(run_in_process, cfg, job_dir, **arguments)
    else:  # jobs of the same shapes in this worker reuse what they build (Job.cache)
        ended = run_hosted(run_in_process, cfg, job_dir, key=_host_key(cfg), **arguments)
    if isinstance(ended.value, str):  # not run: another process holds or finished it
        return _skipped(name, ended.value)
    summary = store.read_summary(job_dir)
    if summary is None or summary["status"] == "running":
        error = f"the job's process {ended.description} before it finished"
        if lifetime.stop_requested():  # killed by the sweep's own stop: a stopped job
            store.mark_interrupted(job_dir, reason=error)
        else:
            _failed(job_dir, name, error, ablation=ablation, trace=f"{error} (pid {ended.pid})\n")
        summary = store.read_summary(job_dir) or {"status": "failed", "job": name, "error": error}
    if summary["status"] != "interrupted" or not lifetime.stop_requested():
        _report(summary, name)  # a stopping sweep says once how it ended
    return summary


def _skipped(name: str, reason: str) -> dict[str, Any]:
    shown = "running in another process" if reason == "running elsewhere" else reason
    print(f"[  skipped] {name} ({shown})", flush=True)
    return {"status": "skipped", "job": name, "reason": reason}


def _report(summary: Mapping[str, Any], name: str) -> None:
    extra = f" at step {summary['diverged_step']}" if summary.get("diverged_step") else ""
    error = f"  {summary['error']}" if summary.get("error") else ""
    print(
        f"[{summary['status']:>9}] {name}: {summary.get('steps', 0)} steps{extra}, "
        f"{summary.get('wall_time_s', 0.0):.1f}s{error}",
        flush=True,
    )
