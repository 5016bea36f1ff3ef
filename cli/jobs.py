"""`gradlab run`, `gradlab sweep`, `gradlab list`: jobs over Hydra, and what can be chosen.

Every command validates the whole command line before anything runs (bad names, keys, types or
ranges, unknown launchers: one line, exit code 2, nothing written); none of that imports
TensorFlow. The job the commands run is taken from the Click context (``obj``), MuZero by default,
which is how the tests run the machinery around a stand-in job.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from cli._errors import guarded
from experiments.base.errors import ConfigError

__all__ = ["config_dir_of", "job_of", "list_", "run", "sweep"]

_OVERRIDES_HELP = (
    "Hydra overrides: seed=0, variant=scale_gradient variant.scale=0.25, task=cartpole, "
    "regime=stress, logger=none (or logger.every=1: every row to W&B, not every 10th), "
    "budget.max_steps=200, muzero.unroll_steps=10, ..."
)
_CONFIG_DIR_HELP = "A Hydra config folder to use instead of gradlab's own conf/ (e.g. a copy)."


def job_of(ctx: typer.Context):
    """The job a command runs: the Click context's (tests' stand-ins), else MuZero."""
    from experiments.jobs.job import MUZERO, Job

    return ctx.obj if isinstance(ctx.obj, Job) else MUZERO


def config_dir_of(config_dir: Path | None) -> Path:
    """``--config-dir`` checked (it must hold a config.yaml), else gradlab's own conf/."""
    from experiments.launch.hydra_app import CONF_DIR

    if config_dir is None:
        return CONF_DIR
    if not (config_dir / "config.yaml").is_file():
        raise ConfigError(f"--config-dir {str(config_dir)!r} holds no config.yaml")
    return config_dir.resolve()


def _counts(jobs: list, *, skipped: set[str]) -> tuple[dict[str, int], list[str]]:
    from experiments.jobs import store

    counts = dict.fromkeys(("completed", "diverged", "timeout", "failed", "skipped"), 0)
    missing = []
    for job in jobs:
        if job.name in skipped:
            counts["skipped"] += 1
            continue
        summary = store.read_summary(job.job_dir)
        status = summary.status if summary else None
        if status in counts or status == "interrupted":  # a job's process stopped by a signal
            counts[status] = counts.get(status, 0) + 1
        elif status == "running" and store.job_locked(job.job_dir):
            # another sweep on the same folder runs it now: its own sweep reports how it ends
            counts["running elsewhere"] = counts.get("running elsewhere", 0) + 1
        else:  # no summary, or "running" with no live process: the job never finished
            missing.append(job.name)
    return counts, missing


def _stopped(jobs: list, signum: int) -> str:
    """The one line a stopped sweep (or run) prints; first records its jobs killed while they
    ran (the grace ran out, or a second signal) as ``interrupted``."""
    import signal

    from experiments.jobs import store

    name = signal.Signals(signum).name
    reason = f"stopped by {name} before its next step"
    counts = dict.fromkeys(("completed", "diverged", "timeout", "failed", "interrupted"), 0)
    for job in jobs:
        store.mark_interrupted(job.job_dir, reason=reason)
        summary = store.read_summary(job.job_dir)
        if summary is not None and summary.status in counts:
            counts[summary.status] += 1
    started = sum(counts.values())
    shown = [f"{counts['completed']} of {len(jobs)} jobs completed"]
    shown += [f"{n} {k}" for k, n in counts.items() if n and k not in ("completed", "interrupted")]
    shown += [f"{counts['interrupted']} interrupted", f"{len(jobs) - started} not started"]
    head = "interrupted" if signum == signal.SIGINT else f"interrupted by {name}"
    return f"{head}: {', '.join(shown)}; the same command resumes them"


def _wait_for_running(jobs: list, *, timeout: float) -> None:
    """Waits up to ``timeout`` seconds for the jobs some live process holds (they stop at their
    next step) to end, when the launcher's own wait was cut short."""
    import time

    from experiments.jobs import store

    deadline = time.monotonic() + timeout
    while any(store.job_locked(j.job_dir) for j in jobs) and time.monotonic() < deadline:
        time.sleep(0.1)


def _launch(overrides: list[str], *, planned: list, conf: Path, job, multirun: bool,
            progress=None) -> None:  # fmt: skip
    """Runs Hydra on ``overrides`` so that nothing it starts outlives it. A stop signal ends the
    jobs at their next step (:class:`experiments.jobs.lifetime.Sweep`), then prints one line and
    exits with ``128 + signal``; a launcher's own failure (e.g. Ray down) is reported in one line.
    Finished results are kept either way."""
    from experiments.jobs import lifetime
    from experiments.launch import hydra_app

    def hard_stop(signum: int) -> None:
        typer.echo(_stopped(planned, signum))

    with lifetime.Sweep(on_hard_stop=hard_stop) as stopping:
        try:
            hydra_app.launch(
                overrides, multirun=multirun, config_dir=conf, job=job, progress=progress
            )
        except ConfigError:
            raise
        except SystemExit:  # Ray's driver turns SIGTERM into sys.exit(15) in this thread
            if not stopping.stopped(timeout=5):
                raise
            _wait_for_running(planned, timeout=lifetime.GRACE_S)
        except Exception as err:  # noqa: BLE001 - a launcher's own failure (e.g. Ray down)
            if stopping.signal is None:
                text = str(err).strip().splitlines()
                typer.echo(
                    f"error: the sweep stopped early ({type(err).__name__}: "
                    f"{text[0][:200] if text else ''}); finished results are kept: run the same "
                    "command again to run the unfinished jobs",
                    err=True,
                )
    if stopping.signal is not None:
        typer.echo(_stopped(planned, stopping.signal))
        raise typer.Exit(stopping.exit_code)


def _check_study(planned: list, conf: Path) -> None:
    """A sweep into a pre-registered study's folder refuses a design that no longer matches its
    record, a pinned file changed since, and any job outside the design (a seed, an arm, a
    setting): one line, exit 2; notes on settings added since are printed."""
    from experiments.protocols.study.record import check_folder

    for folder in sorted({j.job_dir.parent for j in planned}):
        jobs = [j.overrides for j in planned if j.job_dir.parent == folder]
        for note in check_folder(folder, config_dir=conf, jobs=jobs):
            typer.echo(f"note: {note}")


def _logger_mode(overrides: list[str], config_dir: Path) -> str:
    chosen = [o.split("=", 1)[1] for o in overrides if o.split("=", 1)[0] == "logger"]
    name = chosen[-1] if chosen else "wandb_offline"
    path = config_dir / "logger" / f"{name}.yaml"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    return "none" if "mode: none" in text else "wandb"


@guarded
def run(
    ctx: typer.Context,
    overrides: Annotated[list[str] | None, typer.Argument(help=_OVERRIDES_HELP)] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Run again even if this run already finished.")
    ] = False,
    config_dir: Annotated[Path | None, typer.Option("--config-dir", help=_CONFIG_DIR_HELP)] = None,
) -> None:
    """Train one MuZero job into `results/runs/JOB_NAME/`.

    Examples:

      gradlab run

      gradlab run variant=scale_gradient variant.scale=0.25 seed=1

      gradlab run task=cartpole variant=clipnorm budget.max_wall_s=600 logger=none
    """
    from cli._progress import RichProgress
    from experiments.jobs import store
    from experiments.launch import plan

    job = job_of(ctx)
    overrides = list(overrides or [])
    conf = config_dir_of(config_dir)
    (planned,) = plan.plan(overrides, multirun=False, config_dir=conf, force=force, job=job)
    if not planned.run:
        typer.echo(f"{planned.job_dir}: already {planned.reason}; use --force to run it again")
        return
    task, hyd = plan.split_hydra_overrides(overrides)
    extra = ["runtime.force=true"] if force else []
    _launch(
        [*task, *extra, *hyd],
        planned=[planned],
        conf=conf,
        job=job,
        multirun=False,
        progress=RichProgress,
    )
    summary = store.read_summary(planned.job_dir)
    status = summary.status if summary else "failed"
    typer.echo(f"{status}: {planned.job_dir}")
    if status in ("failed", "running", "interrupted"):
        raise typer.Exit(1)


def parallel_jobs(jobs: str, *, launcher_given: bool) -> int:
    """``--jobs``: ``auto`` (one per core, unless another launcher is chosen) or N >= 1.

    N above the cores this process may use is capped at them, with a note on stderr: each job
    is a process of its own with at least one thread, so more jobs than cores only share the
    cores (and memory) and slow every job, and a mistyped ``--jobs 100000`` would start that
    many worker processes. Capped rather than refused, so that one command line serves a laptop
    and a large machine alike.
    """
    from experiments.base.process import cores

    if jobs == "auto":
        return 1 if launcher_given else cores()
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
        typer.echo(
            f"note: --jobs {count} capped at {available}, the cores this process may use "
            "(more jobs at once than cores only slows each of them)",
            err=True,
        )
        return available
    return count


def _deal(planned: list, workers: int) -> int:
    """Jobs dealt to a worker at a time: a run of seeds of one configuration in one worker when
    that shortens the sweep (it builds the configuration once; :mod:`experiments.jobs.dealing`)."""
    from experiments.jobs.dealing import deal_size

    return deal_size([j.configuration for j in planned], workers)


@guarded
def sweep(
    ctx: typer.Context,
    overrides: Annotated[
        list[str] | None,
        typer.Argument(help="ablation=NAME (see gradlab list), then overrides: " + _OVERRIDES_HELP),
    ] = None,
    jobs: Annotated[
        str,
        typer.Option(
            "--jobs",
            "-j",
            help="Jobs at once on this machine: auto (one per core, 1 TensorFlow thread each), "
            "or N (N > 1: cores // N threads each; 1: one at a time, all cores). In parallel, "
            "a configuration's seeds go to one worker when that saves builds. A job with more "
            "than one thread makes its next batch and runs its evaluations beside its train "
            "step (same numbers).",
        ),
    ] = "auto",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the jobs and which would be skipped; run none.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Re-run finished jobs too (default: skip them).")
    ] = False,
    config_dir: Annotated[Path | None, typer.Option("--config-dir", help=_CONFIG_DIR_HELP)] = None,
) -> None:
    """Run an ablation: every variant x seed of its preset, one results folder per job.

    Running the same command again skips finished jobs and re-runs failed or unfinished ones. A
    job killed by a signal (out of memory, kill) is recorded failed; the other jobs go on.
    Ctrl-C (or SIGTERM, SIGHUP) stops the running jobs at their next step, recorded
    interrupted, and ends every process of the sweep; the same command resumes them.

    Examples:

      gradlab sweep ablation=hidden_scale

      gradlab sweep ablation=hidden_scale seed=0            (one seed of every variant)

      gradlab sweep ablation=scale_value regime=stress --dry-run

      gradlab sweep ablation=clip hydra/launcher=submitit_slurm hydra.launcher.partition=gpu
    """
    from experiments.base.process import cores
    from experiments.launch import plan

    job = job_of(ctx)
    overrides = list(overrides or [])
    conf = config_dir_of(config_dir)
    task, hyd = plan.split_hydra_overrides(overrides)
    if not any(o.split("=", 1)[0] == "ablation" for o in task):
        options = ", ".join(plan.group_options(conf, "ablation"))
        raise ConfigError(f"gradlab sweep needs ablation=NAME; choose one of: {options}")
    launcher_given = any(o.split("=", 1)[0] == "hydra/launcher" for o in hyd)
    parallel = parallel_jobs(jobs, launcher_given=launcher_given)
    planned = plan.plan(
        overrides, multirun=True, config_dir=conf, force=force, check_writable=not dry_run, job=job
    )
    _check_study(planned, conf)
    skipped = {j.name for j in planned if not j.run}
    if dry_run:
        for j in planned:
            typer.echo(f"{'run ' if j.run else 'skip'}  {j.job_dir}  ({j.reason})")
        typer.echo(f"{len(planned) - len(skipped)} to run, {len(skipped)} to skip")
        return
    extra = ["runtime.progress=false"]
    if parallel > 1:
        threads = 1 if jobs == "auto" else max(1, cores() // parallel)
        extra.append(f"runtime.threads={threads}")
        hyd = [*hyd, "hydra/launcher=joblib", f"hydra.launcher.n_jobs={parallel}"]
        # joblib cuts its queue into deals of batch_size * n_jobs jobs at a time; its default
        # first cut (pre_dispatch, 2 * n_jobs jobs) would shift every later deal off the
        # configurations' boundaries, so everything is queued at once (workers still take the
        # next deal as they free up).
        deal = _deal(planned, parallel)
        hyd += [f"hydra.launcher.batch_size={deal}", "hydra.launcher.pre_dispatch=all"]
    if not any(o.split("=", 1)[0] == "hydra/sweeper" for o in hyd):
        # The plan composed and validated every job; Hydra's basic sweeper would do it again
        # before launching (a measurable cost per job: docs/performance_private.md): the same
        # sweeper without that second pass.
        hyd = [*hyd, "hydra/sweeper=planned"]
    if force:
        extra.append("runtime.force=true")
    if len(skipped) < len(planned):
        _launch([*task, *extra, *hyd], planned=planned, conf=conf, job=job, multirun=True)
    counts, missing = _counts(planned, skipped=skipped)
    line = ", ".join(f"{n} {k}" for k, n in counts.items())
    if missing:
        line += f", {len(missing)} unfinished ({', '.join(missing[:3])}...)"
    typer.echo(f"{len(planned)} jobs: {line}")
    if _logger_mode(task, conf) != "none" and planned:
        where = planned[0].job_dir.parent
        typer.echo(f"upload the W&B runs with: wandb sync {where}/*/wandb/offline-run-*")
    if counts["failed"] or counts.get("interrupted") or missing:
        raise typer.Exit(1)


# --------------------------------------------------------------------------------------------
# gradlab list: the registries and the config folder, without TensorFlow


_SENTENCE_END = re.compile(r"[.?!](\s|$)")


def _yaml_comment(path: Path, *, most: int = 3) -> str:
    """The file's first sentence of comment: its first comment lines (at most ``most``) joined
    until a ``.``, ``?`` or ``!`` ends the sentence."""
    words: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line.startswith("#"):
            if words:
                break
            continue
        if "@package" in line:
            continue
        words.append(line.lstrip("# ").strip())
        if _SENTENCE_END.search(words[-1]) or len(words) == most:
            break
    text = " ".join(words)
    end = _SENTENCE_END.search(text)
    return text[: end.start() + 1] if end else text


def _yaml_group(conf: Path, group: str) -> dict[str, str]:
    return {p.stem: _yaml_comment(p) for p in sorted((conf / group).glob("*.yaml"))}


def _regime_lines(conf: Path) -> dict[str, str]:
    """The regimes, then the presets ``gradlab calibrate`` wrote (``calibrated/NAME``)."""
    lines = _yaml_group(conf, "regime")
    for path in sorted((conf / "regime" / "calibrated").glob("*.yaml")):
        lines[f"calibrated/{path.stem}"] = _yaml_comment(path)
    return lines


def _task_lines(conf: Path) -> dict[str, str]:
    from experiments.tasks import TASKS

    lines = _yaml_group(conf, "task")
    for name, info in TASKS.items():
        text = info.description
        if info.threshold == info.threshold:  # not NaN
            text += f" (success: eval return >= {info.threshold:g})"
        lines[name] = text
    return lines


def _variant_lines() -> dict[str, str]:
    from experiments.gradients import VARIANTS

    lines = {}
    for name, spec in VARIANTS.items():
        params = ", ".join(f"{p.name}={p.default:g}" for p in spec.params)
        lines[name] = spec.summary + (f" [{params}]" if params else "")
    return lines


@guarded
def list_(
    config_dir: Annotated[Path | None, typer.Option("--config-dir", help=_CONFIG_DIR_HELP)] = None,
) -> None:
    """List what can be chosen: ablations, regimes (calibrated ones too), variants, placements,
    tasks, loggers, calibration ladders, studies, ...

    Examples:

      gradlab list

      gradlab sweep ablation=scale_value --dry-run
    """
    from experiments.gradients import PLACEMENTS
    from experiments.muzero.options import LOSS_SCALES, NORMALISATIONS, Q_FORMS

    conf = config_dir_of(config_dir)
    sections = {
        "ablations (gradlab sweep ablation=NAME)": _yaml_group(conf, "ablation"),
        "regimes (regime=NAME)": _regime_lines(conf),
        "variants (variant=NAME, parameters as variant.NAME=VALUE)": _variant_lines(),
        "placements (variant.placement=NAME)": PLACEMENTS.summaries(),
        "tasks (task=NAME)": _task_lines(conf),
        "loss scales (muzero.loss_scale=NAME)": LOSS_SCALES.summaries(),
        "normalisations (muzero.network.normalisation=NAME)": NORMALISATIONS.summaries(),
        "search value forms (muzero.q_form=NAME)": Q_FORMS.summaries(),
        "loggers (logger=NAME)": _yaml_group(conf, "logger"),
        "ladders (gradlab calibrate ladder=NAME)": _yaml_group(conf, "ladder"),
        "studies (gradlab study plan|register|run NAME)": _yaml_group(conf, "study"),
    }
    for title, entries in sections.items():
        if not entries:
            continue
        typer.echo(f"{title}:")
        width = max((len(n) for n in entries), default=0)
        for name, line in entries.items():
            typer.echo(f"  {name:<{width}}  {line}")
        typer.echo("")
