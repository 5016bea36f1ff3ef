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
from experiments.base.errors import ConfigError

__all__ = ["app"]

app = typer.Typer(
    help="A pre-registered study: plan its power, register its design, run its arms, audit it.",
    no_args_is_help=True,
    add_completion=False,
)

_RESULTS = typer.Option("--results-dir", help="Results root; the study's folder is ROOT/ABLATION.")
_NAME_HELP = "A study of conf/study/ (see gradlab list)."


def _load(name: str):
    from experiments.launch.hydra_app import CONF_DIR
    from experiments.protocols.study.design import load_study

    return load_study(name, CONF_DIR), CONF_DIR


def _rates(text: str) -> tuple[float, float]:
    try:
        p1, p2 = (float(x) for x in text.split(","))
    except ValueError:
        raise ConfigError(f"--rates {text!r}; expected two rates, e.g. 0.6,0.3") from None
    return p1, p2


def _pilot(study, folder: Path) -> tuple[float, float, float | None]:
    """The baseline's and the primary arm's rates of the primary endpoint in a pilot folder (its
    runs in the study's regime), and the median seconds of a run there."""
    import numpy as np

    from experiments.report.runs.results import load_results

    runs = load_results(folder).runs
    if "regime" in runs:
        runs = runs[runs["regime"] == study.regime]
    rates = []
    for arm in (study.baseline, study.primary.arm):
        values = runs.loc[runs.get("variant") == arm, study.primary.endpoint].dropna()
        if values.empty:
            raise ConfigError(
                f"pilot {str(folder)!r} has no {arm} runs with {study.primary.endpoint} in "
                f"regime {study.regime}"
            )
        rates.append(float(values.mean()))
    seconds = runs["wall_time_s"].dropna() if "wall_time_s" in runs else []
    return rates[0], rates[1], (float(np.median(seconds)) if len(seconds) else None)


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
    from experiments.protocols.study.power import fisher_power, pooled_power, seeds_for_power

    study, _ = _load(name)
    if jobs < 1:
        raise ConfigError(f"--jobs {jobs}; expected a positive number of runs at once")
    if not 0 < power < 1:
        raise ConfigError(f"--power {power}; expected a target power in (0, 1)")
    if not 0 <= shrink <= 1:
        raise ConfigError(
            f"--shrink {shrink}; expected the share of the pilot's difference, in [0, 1]"
        )
    if strata > 64:
        raise ConfigError(f"--strata {strata}; expected the number of tasks pooled, 1 to 64")
    if true_rates is not None:
        for rate in _rates(true_rates):
            if not 0 <= rate <= 1:
                raise ConfigError(f"--true-rates {true_rates!r}: {rate:g} is not a rate in [0, 1]")
        if margin is None and study.primary.margin is None:
            raise ConfigError(
                f"--true-rates {true_rates!r} is for an equivalence plan; give --margin (study "
                f"{name!r} declares none)"
            )
    if study.across_tasks:
        _value_plan(study, calibration, prior or [], effect=effect, power=power, jobs=jobs)
        return
    if calibration is not None:
        _threshold_check(study, calibration)
    for folder in prior or []:
        _rate_prior(study, folder)
    if margin is not None and (isinstance(margin, bool) or not 0 < margin < 1):
        raise ConfigError(f"--margin {margin!r}; expected a risk difference in (0, 1), e.g. 0.2")
    seconds = None
    if pilot is not None:
        base, arm, seconds = _pilot(study, pilot)
        p1, p2 = base, base + shrink * (arm - base)
    elif rates is None:
        if study.planning.rates is None:
            raise ConfigError(f"study {name!r} declares no planning rates; give --rates P1,P2")
        p1, p2 = (float(r) for r in study.planning.rates)
    else:
        p1, p2 = _rates(rates)
    alpha, n = study.primary.alpha, len(study.seeds)
    got = fisher_power(p1, p2, n, alpha=alpha)
    margin = study.primary.margin if margin is None else margin
    try:
        need = f"{seeds_for_power(p1, p2, power=power, alpha=alpha)} runs per arm reach {power}"
    except ConfigError:
        if margin is None:  # an equivalence plan may assume equal rates: no Fisher n then
            raise
        need = f"no n up to 200 runs per arm reaches {power}"
    pooled = None
    if strata > 1:
        try:
            pooled = pooled_power([(p2, p1)] * strata, n, alpha=alpha)
        except ConfigError as err:
            if margin is None:  # the equivalence plan's pooled line does not need the CMH's
                raise
            typer.echo(f"note: the pooled CMH power is not computed: {err}", err=True)
    typer.echo(
        f"{study.primary.arm} vs {study.baseline} on {study.primary.endpoint}, rates "
        f"{p1:.3g} vs {p2:.3g}, Fisher two-sided at alpha {alpha}: power {got:.3f} with {n} "
        f"runs per arm; {need}"
    )
    if margin is not None:
        _equivalence_plan(study, p1, true_rates, margin=margin, n=n, power=power)
        if strata > 1:
            _pooled_equivalence_plan(study, p1, true_rates, margin=margin, n=n, strata=strata,
                                     power=power)  # fmt: skip
    if pooled is not None:
        typer.echo(
            f"pooled over {strata} strata at these rates, {n} runs per arm each (CMH, as gradlab "
            f"pool tests it): power {pooled:.3f}"
        )
    if seconds is not None:
        total = seconds * n * len(study.arms) / max(1, jobs)
        typer.echo(
            f"wall time: {len(study.arms)} arms x {n} runs x {seconds:.0f} s (the pilot's median "
            f"run) / {jobs} at once = about {total / 3600:.1f} h"
        )


def _runs(folder: Path):
    from experiments.report.runs.results import load_results

    return load_results(folder).runs


def _value_plan(study, calibration: Path | None, priors: list[Path], **kwargs) -> None:
    """`plan` for a study across tasks on a value endpoint (``normalised_return``)."""
    from experiments.protocols.study.value_plan import plan_value

    if calibration is None:
        tasks = ", ".join(s.task for s in study.strata)
        raise ConfigError(
            f"study {study.name!r} plans {study.primary.endpoint} over {tasks}: its power needs "
            "the baseline's calibration runs (--calibration DIR)"
        )
    cited = [(str(p), _runs(p)) for p in priors]
    plan = plan_value(study, _runs(calibration), repr(str(calibration)), priors=cited, **kwargs)
    for line in plan.lines(study):
        typer.echo(line)


def _threshold_check(study, calibration: Path) -> None:
    """Where the study's threshold falls in the baseline's calibration runs, one line."""
    from experiments.protocols.calibration.reference import task_references

    refs = task_references(_runs(calibration), baseline=study.baseline, regime=study.regime,
                           where=repr(str(calibration)))  # fmt: skip
    if study.task not in refs:
        raise ConfigError(
            f"task {study.task!r} of study {study.name!r} has no {study.baseline} runs in "
            f"{str(calibration)!r} (regime {study.regime})"
        )
    typer.echo(f"calibration ({calibration}): {refs[study.task].line()}")


def _rate_prior(study, folder: Path) -> None:
    """A committed folder's k/n of the primary endpoint for the baseline and the primary arm
    (same regime and task), cited beside the rates the plan assumes."""
    runs = _runs(folder)
    keep = runs["task"].astype(str) == study.task
    if "regime" in runs:
        keep &= runs["regime"].astype(str) == study.regime
    shown = []
    for arm in (study.baseline, study.primary.arm):
        values = runs.loc[keep & (runs["variant"].astype(str) == arm), study.primary.endpoint]
        values = values.dropna()
        shown.append(f"{arm} {int(values.sum())}/{len(values)}")
    typer.echo(
        f"prior: {folder}: {study.task}, regime {study.regime}, {study.primary.endpoint}: "
        + ", ".join(shown)
    )


def _equivalence_plan(
    study, base: float, true_rates: str | None, *, margin: float, n: int, power: float
) -> None:
    """The equivalence line of `plan`: exact TOST power at n and the runs per arm for ``power``."""
    from experiments.protocols.study.power import equivalence_power, seeds_for_equivalence

    p0, p1 = _rates(true_rates) if true_rates is not None else (base, base)
    alpha = study.primary.alpha
    got = equivalence_power(p0, p1, n, margin=margin, alpha=alpha)
    most = 400
    try:
        need = seeds_for_equivalence(p0, p1, margin=margin, power=power, alpha=alpha, max_n=most)
        need = f"{need} runs per arm reach {power}"
    except ConfigError:  # as the Fisher line: the power at n still stands, and the pooled line
        need = f"no n up to {most} runs per arm reaches {power}"
    typer.echo(
        f"equivalence of {study.primary.arm} and {study.baseline} on {study.primary.endpoint} "
        f"within ±{margin:g}, true rates {p0:.3g} vs {p1:.3g}, TOST (Miettinen-Nurminen score) "
        f"at alpha {alpha}: power {got:.3f} with {n} runs per arm; {need}"
    )


def _pooled_equivalence_plan(
    study, base: float, true_rates: str | None, *, margin: float, n: int, strata: int,
    power: float,
) -> None:  # fmt: skip
    """With --strata S and a margin: the power of gradlab pool --margin's test (the counts of S
    strata of n runs per arm summed: one TOST on S x n runs per arm, at rates equal across the
    strata) and the runs per arm per stratum that reach ``power``."""
    from experiments.protocols.study.power import equivalence_power, seeds_for_equivalence

    p0, p1 = _rates(true_rates) if true_rates is not None else (base, base)
    alpha = study.primary.alpha
    got = equivalence_power(p0, p1, strata * n, margin=margin, alpha=alpha)
    most = -(-2000 // strata)  # searched up to 2,000 runs per arm in all
    try:
        per = seeds_for_equivalence(
            p0, p1, margin=margin, power=power, alpha=alpha, strata=strata, max_n=most
        )
        need = f"{per} runs per arm per stratum reach {power}"
    except ConfigError:
        need = f"no n up to {most} runs per arm per stratum reaches {power}"
    typer.echo(
        f"pooled over {strata} strata (counts summed, as gradlab pool --margin tests it), "
        f"{n} runs per arm each: equivalence power {got:.3f}; {need}"
    )


@app.command("register")
@guarded
def register(
    name: Annotated[str, typer.Argument(help=_NAME_HELP)],
    results_dir: Annotated[Path, _RESULTS] = Path("results"),
) -> None:
    """Write the study's pre-registration record before any of its runs (never overwritten)."""
    from experiments.jobs.identity import file_sha256
    from experiments.protocols.study.record import register as write

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
    from experiments.launch.hydra_app import CONF_DIR
    from experiments.protocols.study.audit import audit as run_audit
    from experiments.protocols.study.record import study_folder

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
    from cli.jobs import job_of, sweep_command
    from experiments.launch.lifetime import STOPPED_EXIT_CODES
    from experiments.launch.settings import parallel_jobs
    from experiments.launch.sweep import SweepRequest
    from experiments.protocols.study.record import check
    from experiments.protocols.study.run import run_study

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
