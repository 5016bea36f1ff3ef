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
from cli._sweep import config_dir_of, job_of, run_command, sweep_command

__all__ = ["list_", "run", "sweep"]

_OVERRIDES_HELP = (
    "Hydra overrides: seed=0, variant=scale_gradient variant.scale=0.25, task=cartpole, "
    "regime=stress, logger=none (or logger.every=1: every row to W&B, not every 10th), "
    "budget.max_steps=200, muzero.unroll_steps=10, ..."
)
_CONFIG_DIR_HELP = "A Hydra config folder to use instead of gradlab's own conf/ (e.g. a copy)."


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
    from experiments.launch import SweepRequest  # deferred: OmegaConf, gymnasium, NumPy (~0.5 s)

    request = SweepRequest(
        tuple(overrides or ()),
        force=force,
        config_dir=config_dir_of(config_dir),
        job=job_of(ctx),
        multirun=False,
    )
    code = run_command(request)
    if code:
        raise typer.Exit(code)


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
    from experiments.launch import SweepRequest  # deferred: OmegaConf, gymnasium, NumPy (~0.5 s)

    request = SweepRequest(
        tuple(overrides or ()),
        jobs=jobs,
        force=force,
        dry_run=dry_run,
        config_dir=config_dir_of(config_dir),
        job=job_of(ctx),
    )
    code = sweep_command(request)
    if code:
        raise typer.Exit(code)


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
    from experiments.tasks import TASKS  # deferred: gymnasium, NumPy (~0.25 s)

    lines = _yaml_group(conf, "task")
    for name, info in TASKS.items():
        text = info.description
        if info.threshold == info.threshold:  # not NaN
            text += f" (success: eval return >= {info.threshold:g})"
        lines[name] = text
    return lines


def _variant_lines() -> dict[str, str]:
    from experiments.gradients import VARIANTS  # deferred: importlib.metadata (~60 ms)

    lines = {}
    for name, spec in VARIANTS.items():
        params = ", ".join(f"{p.name}={p.default:g}" for p in spec.params)
        plugin = VARIANTS.plugin(name)
        source = f" (plug-in from {plugin.source})" if plugin is not None else ""
        lines[name] = spec.summary + (f" [{params}]" if params else "") + source
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
    from experiments.gradients import PLACEMENTS  # deferred: importlib.metadata (~60 ms)
    from experiments.muzero import LOSS_SCALES, NORMALISATIONS, Q_FORMS  # deferred: NumPy (~0.2 s)

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
