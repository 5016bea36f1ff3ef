"""`gradlab run`, `gradlab sweep`, `gradlab list`: jobs over Hydra, and what can be chosen.

Every command validates the whole command line before anything runs (bad names, keys, types or
ranges: one line, exit code 2, nothing written). TensorFlow is imported only by `run` and `sweep`
(to bind the variants while validating); `list` reads the registries' source and the YAML files.
"""

from __future__ import annotations

import ast
import importlib.util
import os
from pathlib import Path
from typing import Annotated

import typer

from cli._env import quiet_tensorflow
from cli._errors import guarded
from experiments.errors import ConfigError

__all__ = ["list_", "run", "sweep"]

_OVERRIDES_HELP = (
    "Hydra overrides: seed=0, variant=scale_gradient variant.scale=0.25, task=cartpole, "
    "logger=none, budget.max_steps=200, muzero.unroll_steps=10, ..."
)
_CONFIG_DIR_HELP = "A Hydra config folder to use instead of gradlab's own conf/ (e.g. a copy)."


def _config_dir(config_dir: Path | None) -> Path:
    from experiments.hydra_app import CONF_DIR

    if config_dir is None:
        return CONF_DIR
    if not (config_dir / "config.yaml").is_file():
        raise ConfigError(f"--config-dir {str(config_dir)!r} holds no config.yaml")
    return config_dir.resolve()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def _counts(jobs: list, *, skipped: set[str]) -> tuple[dict[str, int], list[str]]:
    from experiments import store

    counts = dict.fromkeys(("completed", "diverged", "timeout", "failed", "skipped"), 0)
    missing = []
    for job in jobs:
        if job.name in skipped:
            counts["skipped"] += 1
            continue
        summary = store.read_summary(job.job_dir)
        status = summary["status"] if summary else None
        if status in counts:
            counts[status] += 1
        else:  # no summary, or still "running": the job never finished
            missing.append(job.name)
    return counts, missing


def _logger_mode(overrides: list[str], config_dir: Path) -> str:
    chosen = [o.split("=", 1)[1] for o in overrides if o.split("=", 1)[0] == "logger"]
    name = chosen[-1] if chosen else "wandb_offline"
    path = config_dir / "logger" / f"{name}.yaml"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    return "none" if "mode: none" in text else "wandb"


@guarded
def run(
    overrides: Annotated[list[str] | None, typer.Argument(help=_OVERRIDES_HELP)] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Run again even if this run already finished.")
    ] = False,
    config_dir: Annotated[Path | None, typer.Option("--config-dir", help=_CONFIG_DIR_HELP)] = None,
) -> None:
    """Train one MuZero job into results/runs/<job name>/.

    Examples:

      gradlab run

      gradlab run variant=scale_gradient variant.scale=0.25 seed=1

      gradlab run task=cartpole variant=clipnorm budget.max_wall_s=600 logger=none
    """
    quiet_tensorflow()
    from experiments import hydra_app, plan, store

    overrides = list(overrides or [])
    conf = _config_dir(config_dir)
    task, hyd = plan.split_hydra_overrides(overrides)
    backend = _backend_classes()
    (job,) = plan.plan(task, multirun=False, config_dir=conf, force=force, **backend)
    if not job.run:
        typer.echo(f"{job.job_dir}: already {job.reason}; use --force to run it again")
        return
    extra = ["runtime.force=true"] if force else []
    hydra_app.launch([*task, *extra, *hyd], multirun=False, config_dir=conf)
    summary = store.read_summary(job.job_dir)
    status = summary["status"] if summary else "failed"
    typer.echo(f"{status}: {job.job_dir}")
    if status in ("failed", "running"):
        raise typer.Exit(1)


def _backend_classes() -> dict:
    """The config classes of the job to validate against (a stand-in's in tests)."""
    from experiments import runner

    try:
        backend = runner.load_backend()
    except ImportError as err:
        raise ConfigError(f"the MuZero job cannot be imported: {err}") from None
    return {"task_cls": backend.task_cls, "muzero_cls": backend.muzero_cls}


@guarded
def sweep(
    overrides: Annotated[
        list[str] | None,
        typer.Argument(help="ablation=NAME (see gradlab list), then overrides: " + _OVERRIDES_HELP),
    ] = None,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs", "-j", help="Jobs at once on this machine (hydra/launcher=joblib); 1: in turn."
        ),
    ] = 1,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the jobs and which would be skipped; run none.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Re-run finished jobs too (default: skip them).")
    ] = False,
    config_dir: Annotated[Path | None, typer.Option("--config-dir", help=_CONFIG_DIR_HELP)] = None,
) -> None:
    """Run an ablation: every variant x seed of its preset, one results folder per job.

    Running the same command again skips finished jobs and re-runs failed or unfinished ones.

    Examples:

      gradlab sweep ablation=hidden_scale --jobs 2

      gradlab sweep ablation=hidden_scale seed=0            (one seed of every variant)

      gradlab sweep ablation=scale_value --dry-run

      gradlab sweep ablation=clip hydra/launcher=submitit_slurm hydra.launcher.partition=gpu
    """
    quiet_tensorflow()
    from experiments import hydra_app, plan

    overrides = list(overrides or [])
    conf = _config_dir(config_dir)
    task, hyd = plan.split_hydra_overrides(overrides)
    ablations = [o.split("=", 1)[1] for o in task if o.split("=", 1)[0] == "ablation"]
    options = plan.group_options(conf, "ablation")
    if not ablations:
        raise ConfigError(f"gradlab sweep needs ablation=NAME; choose one of: {', '.join(options)}")
    if jobs < 1:
        raise ConfigError(f"--jobs {jobs} is out of range; expected an integer >= 1")
    launcher_given = any(o.split("=", 1)[0] == "hydra/launcher" for o in hyd)
    if jobs > 1 and launcher_given:
        raise ConfigError(f"--jobs {jobs} picks hydra/launcher=joblib; drop one of the two")
    backend = _backend_classes()
    planned = plan.plan(
        task, multirun=True, config_dir=conf, force=force, check_writable=not dry_run, **backend
    )
    skipped = {j.name for j in planned if not j.run}
    if dry_run:
        for j in planned:
            typer.echo(f"{'run ' if j.run else 'skip'}  {j.job_dir}  ({j.reason})")
        typer.echo(f"{len(planned) - len(skipped)} to run, {len(skipped)} to skip")
        return
    extra = []
    if jobs > 1:
        threads = max(1, _cores() // jobs)
        extra += [f"runtime.threads={threads}", "runtime.progress=false"]
        hyd += ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={jobs}"]
    if force:
        extra.append("runtime.force=true")
    if len(skipped) < len(planned):
        try:
            hydra_app.launch([*task, *extra, *hyd], multirun=True, config_dir=conf)
        except ConfigError:
            raise
        except Exception as err:  # noqa: BLE001 - e.g. a joblib worker killed (SIGKILL, OOM)
            text = str(err).strip().splitlines()
            typer.echo(
                f"error: the sweep stopped early ({type(err).__name__}: "
                f"{text[0][:200] if text else ''}); finished results are kept: run the same "
                "command again to run the unfinished jobs",
                err=True,
            )
    counts, missing = _counts(planned, skipped=skipped)
    line = ", ".join(f"{n} {k}" for k, n in counts.items())
    if missing:
        line += f", {len(missing)} unfinished ({', '.join(missing[:3])}...)"
    typer.echo(f"{len(planned)} jobs: {line}")
    if _logger_mode(task, conf) != "none" and planned:
        where = planned[0].job_dir.parent
        typer.echo(f"upload the W&B runs with: wandb sync {where}/*/wandb/offline-run-*")
    if counts["failed"] or missing:
        raise typer.Exit(1)


# --------------------------------------------------------------------------------------------
# gradlab list: read without importing TensorFlow


def _source(module: str) -> str:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return ""
    return Path(spec.origin).read_text(encoding="utf-8")


def _registry_lines(source: str, constructor: str, *, summary_arg: int) -> dict[str, str]:
    """``{name: summary}`` from the literal ``constructor(name, ..., summary, ...)`` calls."""
    out = {}
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == constructor
            and len(node.args) > summary_arg
        ):
            name, summary = node.args[0], node.args[summary_arg]
            if isinstance(name, ast.Constant) and isinstance(summary, ast.Constant):
                out[str(name.value)] = str(summary.value)
    return out


def _yaml_comment(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("#") and "@package" not in line:
            return line.lstrip("# ").strip()
    return ""


def _task_lines(conf: Path) -> dict[str, str]:
    lines = {p.stem: _yaml_comment(p) for p in sorted((conf / "task").glob("*.yaml"))}
    try:
        from experiments.tasks import TASKS
    except ImportError:
        return lines
    for name, info in TASKS.items():
        text = getattr(info, "description", "")
        threshold = getattr(info, "threshold", None)
        if isinstance(threshold, float) and threshold == threshold:  # not NaN
            text += f" (success: eval return >= {threshold:g})"
        lines[name] = text
    return lines


@guarded
def list_(
    config_dir: Annotated[Path | None, typer.Option("--config-dir", help=_CONFIG_DIR_HELP)] = None,
) -> None:
    """List what can be chosen: ablations, variants, placements, tasks, loggers.

    Examples:

      gradlab list

      gradlab sweep ablation=scale_value --dry-run
    """
    if config_dir is None:
        spec = importlib.util.find_spec("conf")
        conf = Path(spec.origin).parent if spec and spec.origin else Path("conf")
    else:
        conf = _config_dir(config_dir)
    grads = _source("experiments.gradients")
    sections = {
        "ablations (gradlab sweep ablation=NAME)": {
            p.stem: _yaml_comment(p) for p in sorted((conf / "ablation").glob("*.yaml"))
        },
        "variants (variant=NAME)": _registry_lines(grads, "VariantSpec", summary_arg=3),
        "placements (variant.placement=NAME)": _registry_lines(grads, "Placement", summary_arg=1),
        "tasks (task=NAME)": _task_lines(conf),
        "loggers (logger=NAME)": {
            p.stem: _yaml_comment(p) for p in sorted((conf / "logger").glob("*.yaml"))
        },
    }
    for title, entries in sections.items():
        typer.echo(f"{title}:")
        width = max((len(n) for n in entries), default=0)
        for name, line in entries.items():
            typer.echo(f"  {name:<{width}}  {line}")
        typer.echo("")
