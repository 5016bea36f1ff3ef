"""`gradlab study plan|register|run|audit NAME`: a pre-registered study, from its design to its
runs and its audit.

The design is `conf/study/NAME.yaml` (docs/studies.md). `register` pins it in the results folder
before any run; `run` refuses a design that differs from its record, then sweeps the arms one
after another (the primary contrast's arms first) through the sweep service in this process
(:mod:`experiments.launch.sweep`, printed as `gradlab sweep` prints it), which resumes: the same
command after a stop runs only what is missing. `audit` checks that the folder is exactly what
was registered (experiments/protocols/study/audit.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli._errors import guarded
from cli._sweep import job_of, sweep_command
from experiments.base.errors import ConfigError
from experiments.jobs import file_sha256

__all__ = ["app"]

app = typer.Typer(
    help="A pre-registered study: plan its power, register its design, run its arms, audit it.",
    no_args_is_help=True,
    add_completion=False,
)

_RESULTS = typer.Option("--results-dir", help="Results root; the study's folder is ROOT/ABLATION.")
_NAME_HELP = "A study of conf/study/ (see gradlab list)."


def _load(name: str):
    from experiments.launch import CONF_DIR  # deferred: Hydra, OmegaConf (~0.6 s)
    from experiments.protocols.study import load_study  # deferred: PyYAML (~20 ms)

    return load_study(name, CONF_DIR), CONF_DIR


@app.command("plan")
@guarded
def plan(
    name: Annotated[str, typer.Argument(help=_NAME_HELP)],
    rates: Annotated[
        str | None,
        typer.Option(help="Baseline and arm rates, e.g. 0.6,0.3 (default: the study's planning)."),
    ] = None,
    pilot: Annotated[
        Path | None,
        typer.Option(
            help="A pilot's results folder: the rates of the primary endpoint for the baseline "
            "and the primary arm in the study's regime, and its runs' median seconds."
        ),
    ] = None,
    shrink: Annotated[
        float,
        typer.Option(help="With --pilot: plan for this fraction of the pilot's difference."),
    ] = 0.5,
    power: Annotated[float, typer.Option(help="Target power for the runs-per-arm search.")] = 0.9,
    jobs: Annotated[int, typer.Option(help="Runs at once, for the wall-time estimate.")] = 2,
    strata: Annotated[
        int,
        typer.Option(
            min=1,
            help="2 or more: also the power of the pooled test over this many strata (tasks) at "
            "the same rates and runs per arm: CMH, as gradlab pool tests it, exact by "
            "enumeration (1: the Fisher line alone).",
        ),
    ] = 1,
    margin: Annotated[
        float | None,
        typer.Option(
            help="Also the power of an equivalence design: TOST of the risk difference within "
            "±MARGIN (Miettinen-Nurminen score, as gradlab table --margin tests it), exact by "
            "enumeration (default: the study's primary.margin, if declared).",
        ),
    ] = None,
    true_rates: Annotated[
        str | None,
        typer.Option(
            help="With a margin: the true baseline and arm rates assumed, e.g. 0.5,0.5 "
            "(default: the baseline rate for both, no true difference).",
        ),
    ] = None,
    calibration: Annotated[
        Path | None,
        typer.Option(
            help="The baseline's calibration runs (a results folder): each task's reference "
            "return R_ref with its spread, and where its threshold falls (reached, held, within "
            "±5%: floor, ceiling, noise-sensitive, usable). Required for a study across tasks "
            "on normalised_return, whose power it gives.",
        ),
    ] = None,
    prior: Annotated[
        list[Path] | None,
        typer.Option(
            help="Committed runs of the same regime and arms (a results folder; repeatable), "
            "cited beside what the plan assumes: k/n of the endpoint, or the normalised "
            "difference of the arms' mean final returns.",
        ),
    ] = None,
    effect: Annotated[
        float | None,
        typer.Option(
            help="A study on normalised_return: the difference to detect (default: "
            "planning.effect, else the priors' mean normalised difference).",
        ),
    ] = None,
) -> None:
    """Exact power of the primary contrast (Fisher's test, by enumeration), the runs per arm that
    reach a target power, and the expected wall time of the whole study; with --strata S, the
    power of the pooled test over S such strata (one study per task, as Study 3); with a margin,
    the power of the equivalence design and the runs per arm that reach the target power.

    A pilot's difference overstates the effect (its best contrast was chosen by its result), so
    with --pilot the plan is for --shrink (default half) of it."""
    from experiments.protocols.study import plan_study  # deferred: pandas, SciPy (~2 s)

    study, _ = _load(name)
    plan_study(study, say=typer.echo, note=lambda line: typer.echo(line, err=True), rates=rates,
               pilot=pilot, shrink=shrink, power=power, jobs=jobs, strata=strata, margin=margin,
               true_rates=true_rates, calibration=calibration, prior=prior,
               effect=effect)  # fmt: skip


@app.command("register")
@guarded
def register(
    name: Annotated[str, typer.Argument(help=_NAME_HELP)],
    results_dir: Annotated[Path, _RESULTS] = Path("results"),
) -> None:
    """Write the study's pre-registration record before any of its runs (never overwritten)."""
    from experiments.protocols.study import register as write  # deferred: pandas, SciPy (~2 s)

    if results_dir.exists() and not results_dir.is_dir():
        raise ConfigError(f"--results-dir '{results_dir}' is a file, not a folder")
    study, conf = _load(name)
    path = write(study, config_dir=conf, results_dir=results_dir)
    digest = file_sha256(path.read_bytes())
    typer.echo(f"registered {name}: {path}")
    typer.echo(
        f"record sha256 {digest}: publish it; gradlab study audit {path.parent} "
        f"--expect-sha256 {digest} checks a copy against it"
    )


@app.command("audit")
@guarded
def audit(
    target: Annotated[
        str,
        typer.Argument(
            help="A study of conf/study/ (its folder under --results-dir) or a "
            "study's results folder."
        ),
    ],
    results_dir: Annotated[Path, _RESULTS] = Path("results"),
    expect_sha256: Annotated[
        str | None,
        typer.Option(
            "--expect-sha256",
            help="The record's SHA-256 as published (gradlab study register prints it): a "
            "record rewritten outside git is a breach.",
        ),
    ] = None,
) -> None:
    """Is a study's folder exactly what was registered? A CONSORT-style flow per arm
    (registered -> started -> completed / diverged / crashed / missing -> analysed), then one
    line per check: the record unedited, every run under the record's hash and started after
    registration, the record committed before the runs and never changed (git), every run's
    config its arm's, one code identity, no run outside the registered job set. What cannot be
    checked (runs older than run identities) is said. Exit 1 on a breach.

    Examples:

      gradlab study audit catch_stress --results-dir results/findings

      gradlab study audit results/findings/study_catch_stress
    """
    from experiments.launch import CONF_DIR  # deferred: Hydra, OmegaConf (~0.6 s)
    from experiments.protocols.study import study_folder  # deferred: pandas, SciPy (~2 s)
    from experiments.protocols.study.audit import (
        audit as run_audit,  # deferred: pandas, SciPy (~2 s)
    )

    folder = Path(target)
    if not folder.is_dir():
        if "/" in target or folder.exists():
            raise ConfigError(f"'{target}' is not a study's results folder (no such folder)")
        study, _ = _load(target)
        folder = study_folder(study, results_dir)
    result = run_audit(folder, config_dir=CONF_DIR, expect_sha256=expect_sha256)
    for line in result.lines():
        typer.echo(line)
    if result.breaches:
        raise typer.Exit(1)


@app.command("run")
@guarded
def run(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help=_NAME_HELP)],
    results_dir: Annotated[Path, _RESULTS] = Path("results"),
    jobs: Annotated[str, typer.Option("--jobs", "-j", help="gradlab sweep --jobs.")] = "auto",
) -> None:
    """Run every arm of a registered study (primary arms first; in a study across tasks, every
    task's); the same command resumes."""
    from experiments.launch import (  # deferred: OmegaConf, gymnasium, NumPy (~0.5 s)
        STOPPED_EXIT_CODES,
        SweepRequest,
        parallel_jobs,
    )
    from experiments.protocols.study import check, run_study  # deferred: pandas, SciPy (~2 s)

    parallel_jobs(jobs, launcher_given=False)  # a bad --jobs: one line, before any arm
    study, conf = _load(name)
    for note in check(study, config_dir=conf, results_dir=results_dir):
        typer.echo(f"note: {note}")
    job = job_of(ctx)
    code = run_study(
        study,
        results_dir,
        sweep=lambda overrides: sweep_command(
            SweepRequest(overrides, jobs=jobs, config_dir=conf, job=job)
        ),  # in this process: a stop signal stops the arm's jobs (experiments.launch.lifetime)
        say=typer.echo,
        error=lambda line: typer.echo(line, err=True),
        stopped=STOPPED_EXIT_CODES,
    )
    raise typer.Exit(code)
