"""One job, from config to ``summary.json``: threads, seeding, the training loop, budgets,
divergence, failure isolation.

:func:`execute` is what Hydra's task function calls for each job of a sweep (and for a single
run). It never raises for a problem inside the job: a diverged run is a result (status
``diverged``), a budget ends it cleanly (``timeout``), an exception is recorded (``failed`` with
``error.txt``), so the other jobs of the sweep go on. Only a kill or Ctrl-C stops it, leaving
``running`` in ``summary.json``, which the next invocation re-runs.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import importlib.util
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from experiments import store
from experiments.config import RunConfig, build_run_config, to_plain
from experiments.errors import ConfigError
from experiments.stopping import DivergenceCheck, DivergenceRule

__all__ = [
    "BACKEND_ENV",
    "Backend",
    "TrainFn",
    "execute",
    "limit_threads",
    "load_backend",
    "run_job",
    "seed_everything",
]

TrainFn = Callable[..., Iterator[Mapping[str, float]]]
"""``train(config, task, variant, placement, *, seed) -> Iterator[row]``: one row per step."""

BACKEND_ENV = "GRADLAB_JOB_BACKEND"
"""Environment variable naming a stand-in job module or ``.py`` file (tests only) exposing
``train``, ``TaskConfig``, ``MuZeroConfig`` and optionally ``TASKS``."""

_VERSIONED = ("tensorflow", "keras", "numpy", "hydra-core", "omegaconf", "wandb", "gradlab")


@dataclasses.dataclass(frozen=True)
class Backend:
    """The job's training function and the classes its config sections convert into."""

    train: TrainFn
    task_cls: type
    muzero_cls: type
    tasks: Mapping[str, Any]  # task name -> entry with its success threshold


def load_backend() -> Backend:
    """The MuZero job (``experiments.muzero``), or the stand-in named by :data:`BACKEND_ENV`."""
    ref = os.environ.get(BACKEND_ENV)
    if ref:
        if ref.endswith(".py"):
            spec = importlib.util.spec_from_file_location("_gradlab_standin_job", ref)
            if spec is None or spec.loader is None:
                raise ConfigError(f"{BACKEND_ENV}={ref!r} cannot be loaded")
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module  # dataclasses and type hints look it up there
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(ref)
        return Backend(
            module.train, module.TaskConfig, module.MuZeroConfig, getattr(module, "TASKS", {})
        )
    from experiments import tasks
    from experiments.muzero import config as muzero_config

    def train(*args: Any, **kwargs: Any) -> Iterator[Mapping[str, float]]:
        from experiments.muzero.train import train as real_train

        return real_train(*args, **kwargs)

    return Backend(train, tasks.TaskConfig, muzero_config.MuZeroConfig, getattr(tasks, "TASKS", {}))


def limit_threads(threads: int | None) -> None:
    """Gives this job ``threads`` TensorFlow threads (intra- and inter-op).

    Call it before TensorFlow is imported (the environment variables are read at start-up); if
    TensorFlow is already running it is left as is. ``None`` leaves the defaults (all cores).
    """
    if threads is None:
        return
    for var in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"):
        os.environ[var] = str(threads)
    if "tensorflow" in sys.modules:
        tf = sys.modules["tensorflow"]
        try:
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(threads)
        except (RuntimeError, AttributeError):
            pass  # already initialised: keep what it has


def seed_everything(seed: int, *, deterministic: bool = True) -> None:
    """Seeds every library-level generator from ``seed`` and turns on TensorFlow op determinism.

    gradlab's own randomness comes from generators built from the job's seed; this is the safety
    net for library code (Keras initialisers and TensorFlow ops without an explicit seed): it sets
    the Python, NumPy and TensorFlow global seeds (``keras.utils.set_random_seed``) and, with
    ``deterministic``, ``tf.config.experimental.enable_op_determinism()``, so the same config and
    seed give bit-identical numbers on the same machine and thread count. Op determinism is
    process-wide and stays on once enabled.

    Args:
      seed: the job's seed.
      deterministic: turn on TensorFlow op determinism.
    """
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(seed)
    if deterministic:
        tf.config.experimental.enable_op_determinism()


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in _VERSIONED:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def _threshold(tasks: Mapping[str, Any], task_name: str) -> float | None:
    entry = tasks.get(task_name)
    if entry is None:
        return None
    for get in (
        lambda e: e.threshold,
        lambda e: e["threshold"],
        lambda e: e[1],
    ):
        try:
            value = get(entry)
        except (AttributeError, KeyError, IndexError, TypeError):
            continue
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


class _Progress:
    """A rich progress bar (steps, loss, eval return) on a terminal; nothing otherwise."""

    def __init__(self, name: str, *, total: int | None, enabled: bool) -> None:
        self._bar = None
        if enabled and sys.stderr.isatty():
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[info]}"),
                TimeElapsedColumn(),
                transient=True,
            )
            self._task = self._bar.add_task(name, total=total, info="")
            self._bar.start()
        self._eval = float("nan")

    def update(self, row: Mapping[str, Any]) -> None:
        if self._bar is None:
            return
        self._eval = row.get("eval/return", self._eval)
        info = f"loss {row.get('loss/total', float('nan')):.4g}  eval {self._eval:.3g}"
        self._bar.update(self._task, advance=1, info=info)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _stability(
    rows: list[dict], *, threshold: float | None, wall_time_s: float, divergence: DivergenceRule
) -> dict:
    from experiments.metrics import stability_summary

    try:
        return dict(
            stability_summary(
                rows, threshold=threshold, wall_time_s=wall_time_s, divergence=divergence
            )
        )
    except Exception as err:  # noqa: BLE001 - a summary figure must not fail the job
        print(f"warning: stability summary failed: {err}", file=sys.stderr)
        return {}


def _yaml(resolved: Mapping[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(dict(resolved), sort_keys=False, default_flow_style=False)


def run_job(
    cfg: RunConfig,
    job_dir: str | Path,
    *,
    job: str,
    overrides: Mapping[str, str],
    resolved: Mapping[str, Any],
    train_fn: TrainFn | None = None,
    tasks: Mapping[str, Any] | None = None,
    tracker: Any = None,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Runs one job into ``job_dir`` and returns its summary (also written to ``summary.json``).

    Args:
      cfg: the validated config.
      job_dir: the job's folder (created).
      job: the job's name.
      overrides: the job's overrides (key -> value), recorded in the summary.
      resolved: the resolved config as plain dicts, saved as ``config.yaml`` and sent to W&B.
      train_fn: the training generator; default the MuZero job's ``train``.
      tasks: task name -> entry with a success threshold; default ``experiments.tasks.TASKS``.
      tracker: a :class:`~experiments.tracking.Tracker`; default one from ``cfg.logger``.
      clock: seconds, for the wall-time budget.

    Returns:
      The summary dict (see ``docs/interfaces.md``).
    """
    job_dir = Path(job_dir)
    job_dir.mkdir(parents=True, exist_ok=True)
    if train_fn is None or tasks is None:
        backend = load_backend()
        train_fn = train_fn or backend.train
        tasks = backend.tasks if tasks is None else tasks
    store.discard_attempt(job_dir)
    store.write_text_atomic(job_dir / "config.yaml", _yaml(resolved))
    overrides = {k: v for k, v in overrides.items() if not store.is_bookkeeping(k)}
    group = {k: v for k, v in overrides.items() if k != "seed"}
    summary: dict[str, Any] = {
        "status": "running",
        "job": job,
        "ablation": cfg.ablation,
        "overrides": dict(overrides),
        "group": group,
        "seed": cfg.seed,
        "task": cfg.task_name,
        "variant": cfg.variant.name,
        "variant_params": dict(cfg.variant.params),
        "placement": cfg.variant.placement,
        "steps": 0,
        "diverged_step": None,
        "wall_time_s": 0.0,
        "threshold": _threshold(tasks, cfg.task_name),
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
            group=cfg.ablation,
            job_type=cfg.variant.name,
            name=job,
            tags=(*cfg.logger.tags, cfg.task_name, cfg.variant.name, cfg.variant.placement),
            config=resolved,
        )
    t0 = clock()
    status, steps, diverged_step = "completed", 0, None
    progress = _Progress(job, total=cfg.budget.max_steps, enabled=cfg.runtime.progress)
    gen = None
    try:
        seed_everything(cfg.seed, deterministic=cfg.runtime.deterministic)
        variant, placement = cfg.variant.build()
        check = DivergenceCheck(cfg.divergence)
        gen = iter(train_fn(cfg.muzero, cfg.task, variant, placement, seed=cfg.seed))
        with store.MetricsWriter(job_dir / "metrics.jsonl") as writer:
            while True:
                budget = cfg.budget
                if budget.out_of_time(clock() - t0):
                    status = "timeout"
                    break
                if budget.out_of_steps(steps):
                    # One look past the budget tells a run that ends here from one cut short.
                    status = "completed" if next(gen, None) is None else "timeout"
                    break
                row = next(gen, None)
                if row is None:
                    break
                row = dict(row)
                steps += 1
                row.setdefault("step", steps)
                row.setdefault("time/elapsed_s", clock() - t0)
                writer.append(row)
                tracker.log(row, step=int(row["step"]))
                progress.update(row)
                if check.diverged(row):
                    status, diverged_step = "diverged", int(row["step"])
                    break
    except Exception as err:  # noqa: BLE001 - recorded, and the sweep goes on
        status = "failed"
        summary["error"] = f"{type(err).__name__}: {err}".splitlines()[0][:500]
        store.write_text_atomic(job_dir / "error.txt", traceback.format_exc())
    finally:
        progress.close()
        if gen is not None and hasattr(gen, "close"):
            try:
                gen.close()
            except Exception:  # noqa: BLE001
                pass
    wall = clock() - t0
    summary.update(status=status, steps=steps, diverged_step=diverged_step, wall_time_s=wall)
    try:
        rows = store.read_metrics(job_dir / "metrics.jsonl")
    except ConfigError:
        rows = []
    summary["stability"] = _stability(
        rows, threshold=summary["threshold"], wall_time_s=wall, divergence=cfg.divergence
    )
    store.write_json_atomic(job_dir / "summary.json", summary)
    tracker.finish(summary)
    return summary


def _failed_before_start(
    job_dir: Path, job: str, err: BaseException, *, ablation: str | None
) -> dict[str, Any]:
    summary = {
        "status": "failed",
        "job": job,
        "ablation": ablation,
        "error": f"{type(err).__name__}: {err}".splitlines()[0][:500],
        "versions": _versions(),
    }
    job_dir.mkdir(parents=True, exist_ok=True)
    store.write_text_atomic(job_dir / "error.txt", traceback.format_exc())
    store.write_json_atomic(job_dir / "summary.json", summary)
    return summary


def execute(
    cfg: Any,
    job_dir: str | Path,
    *,
    overrides: list[str],
    task_name: str,
    ablation: str | None,
    backend: Backend | None = None,
) -> dict[str, Any]:
    """One job of a sweep (or a single run): skip if finished, else run; never raises.

    Args:
      cfg: the job's composed Hydra config (``DictConfig`` or plain mapping).
      job_dir: the job's folder (Hydra's output dir for the job).
      overrides: the job's ``key=value`` overrides (Hydra's ``overrides.task``).
      task_name: the chosen task.
      ablation: the chosen ablation, or ``None``.
      backend: the job's train function and config classes; default :func:`load_backend`.

    Returns:
      The summary, or ``{"status": "skipped", "job": ..., "reason": ...}`` for a finished job.
    """
    job_dir = Path(job_dir)
    parsed = store.parse_overrides(overrides)
    job = store.job_name(parsed)
    plain = to_plain(cfg)
    runtime = dict(plain.get("runtime") or {})
    threads = runtime.get("threads")
    limit_threads(threads if isinstance(threads, int) and threads > 0 else None)
    with store.job_lock(job_dir) as locked:
        if not locked:
            print(f"[  skipped] {job} (running in another process)", flush=True)
            return {"status": "skipped", "job": job, "reason": "running elsewhere"}
        return _execute_locked(
            plain, job_dir, job=job, parsed=parsed, runtime=runtime, task_name=task_name,
            ablation=ablation, backend=backend,
        )  # fmt: skip


def _execute_locked(
    plain: Any,
    job_dir: Path,
    *,
    job: str,
    parsed: dict[str, str],
    runtime: Mapping[str, Any],
    task_name: str,
    ablation: str | None,
    backend: Backend | None,
) -> dict[str, Any]:
    go, reason = store.should_run(job_dir, force=bool(runtime.get("force", False)))
    if not go:
        print(f"[  skipped] {job} ({reason})", flush=True)
        return {"status": "skipped", "job": job, "reason": reason}
    try:
        backend = backend or load_backend()
        run_cfg = build_run_config(
            plain,
            task_name=task_name,
            ablation=ablation,
            task_cls=backend.task_cls,
            muzero_cls=backend.muzero_cls,
        )
        summary = run_job(
            run_cfg,
            job_dir,
            job=job,
            overrides=parsed,
            resolved={k: v for k, v in plain.items() if k != "hydra"},
            train_fn=backend.train,
            tasks=backend.tasks,
        )
    except Exception as err:  # noqa: BLE001 - one job's failure must not stop the sweep
        summary = _failed_before_start(job_dir, job, err, ablation=ablation)
    extra = f" at step {summary['diverged_step']}" if summary.get("diverged_step") else ""
    error = f"  {summary['error']}" if summary.get("error") else ""
    print(
        f"[{summary['status']:>9}] {job}: {summary.get('steps', 0)} steps{extra}, "
        f"{summary.get('wall_time_s', 0.0):.1f}s{error}",
        flush=True,
    )
    return summary
