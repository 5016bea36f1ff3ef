"""`gradlab calibrate`: find the first setting of a ladder in which the baseline alone is unstable.

Thin: the inputs are checked and every rung planned by
:func:`experiments.protocols.calibration.calibrate.prepare`
(nothing runs or is written on bad input: one line, exit 2); each rung runs as one sweep of the
sweep service (:mod:`experiments.launch.sweep`, in this process, printed as `gradlab sweep`
prints it: :func:`cli._sweep.sweep_command`); :func:`run_calibration` counts, decides and writes
the record and the preset.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli._errors import guarded
from cli._sweep import config_dir_of, job_of, parallel_jobs, sweep_command

if TYPE_CHECKING:
    from experiments.protocols.calibration import Calibration, RungRecord

__all__ = ["calibrate"]


def _clip_threshold(rung: RungRecord, which: str) -> None:
    """A clip arm's threshold from the rung's baseline runs: Study 1's rule (the median of the
    runs' median gradient norms) and Study 3's amendment (e) (the same over the runs that did
    not diverge); a study declares which one it uses before its arms run."""
    for median, rule, runs in (
        (rung.counts.grad_norm_median, "Study 1's rule", f"{which}'s runs"),
        (
            rung.counts.grad_norm_median_not_diverged,
            "rule (e)",
            f"{which}'s runs that did not diverge",
        ),
    ):
        if median is not None:
            typer.echo(f"clip threshold by {rule} (median gradient norm of {runs}): {median:.4g}")


def rule_event(endpoint: str) -> str:
    """What the rule counts, in the words of the exhausted line: ``unstable`` or ``lost after
    learning``."""
    return endpoint.replace("_", " ")


def _print_plan(cal: Calibration) -> None:
    """``--dry-run``: each rung's settings (rungs before it included) and runs, and where the
    record and the preset would go."""
    typer.echo(
        f"calibration {cal.name}: task={cal.task} ladder={cal.ladder.name} "
        f"regime={cal.base_regime} --endpoint {cal.endpoint} --rule {cal.rule:g}, seeds "
        f"{cal.seeds[0]}-{cal.seeds[-1]} ({len(cal.seeds)})"
    )
    for i, (rung, settings) in enumerate(zip(cal.ladder.rungs, cal.settings, strict=True), 1):
        text = " ".join(f"{k}={v}" for k, v in settings.items())
        typer.echo(
            f"rung {i}/{len(cal.settings)} {rung.name}: {text} ({len(cal.jobs[i - 1])} runs)"
        )
    typer.echo(f"record: {cal.folder / 'calibration.md'}")
    typer.echo(f"preset if a rung meets the rule: regime={cal.regime} ({cal.preset_path})")
    typer.echo("dry run: nothing run or written")


@guarded
def calibrate(
    ctx: typer.Context,
    overrides: Annotated[
        list[str] | None,
        typer.Argument(
            help="task=NAME (a registered task: gradlab list), ladder=NAME (conf/ladder/, "
            "default: default), regime=NAME (the base, default: tuned), "
            "runtime.results_dir=R, and any override given to every run (logger=none, ...)."
        ),
    ] = None,
    seeds: Annotated[
        str,
        typer.Option(
            "--seeds", help="Calibration seeds: A-B (both included), A,B,C or range(A,B)."
        ),
    ] = "100-109",
    study_seeds: Annotated[
        str | None,
        typer.Option(
            "--study-seeds",
            help="A study's seeds the calibration must not use (A-B, ...), besides those of "
            "conf/study/ and conf/ablation/, which are always refused.",
        ),
    ] = None,
    rule: Annotated[
        str,
        typer.Option(
            "--rule",
            help="Stop at the first rung whose variant=none runs are unstable (diverged or "
            "collapsed) in at least this fraction of the seeds, in [0, 1].",
        ),
    ] = "0.4",
    endpoint: Annotated[
        str,
        typer.Option(
            "--endpoint",
            help="What the rule counts: unstable (diverged or collapsed; the default) or "
            "lost_after_learning (reached the task's threshold, then fell back below it by the "
            "end or diverged: experiments/verdicts/outcome.py). lost_after_learning adds "
            "_lost_after_learning to the folder and preset.",
        ),
    ] = "unstable",
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Check everything and print each rung's settings and runs, the folder and the "
            "preset; run and write nothing.",
        ),
    ] = False,
    jobs: Annotated[
        str,
        typer.Option("--jobs", "-j", help="Runs at once, as gradlab sweep --jobs: auto or N."),
    ] = "auto",
    config_dir: Annotated[
        Path | None,
        typer.Option("--config-dir", help="A Hydra config folder instead of gradlab's conf/."),
    ] = None,
) -> None:
    """Calibrate a regime: run variant=none alone up a ladder of settings, mild to severe,
    until the first rung where it is unstable (or, with --endpoint lost_after_learning, learns and
    then loses it) in >= --rule of the calibration seeds.

    Each rung is one sweep (finished runs are skipped: run the same command again to resume).
    Writes RESULTS/TASK/calibration/calibration.json and .md (every rung's counts: unstable,
    diverged, collapsed, never learned; and where the task's threshold falls in the rung's runs:
    reached, held, ending within 5% of it, and floor / ceiling / noise-sensitive / usable) and
    the chosen setting as the regime preset
    conf/regime/calibrated/TASK.yaml, used as regime=calibrated/TASK (TASK_BASE in both
    places when the base regime is not tuned, e.g. catch_pseudocode; TASK_LADDER when the ladder
    is not default, e.g. breakout_harsh). A ladder that runs out of rungs writes its record and
    no regime. A rung that can no longer meet the rule stops after its first whole waves of runs
    (8 of 10 seeds on 2 cores); the chosen rung runs every seed.

    Examples:

      gradlab calibrate task=catch logger=none

      gradlab calibrate task=cartpole ladder=default --seeds 100-109 --rule 0.4

      gradlab calibrate task=catch ladder=faithful --endpoint lost_after_learning --dry-run

      gradlab sweep ablation=hidden_scale regime=calibrated/cartpole task=cartpole
    """
    from experiments.launch import launcher_given  # deferred: OmegaConf, gymnasium, NumPy (~0.5 s)
    from experiments.protocols.calibration import (  # deferred: OmegaConf, pandas (~0.5 s)
        prepare,
        run_calibration,
    )

    # runs at once, as the sweep runs them (checked first, a dry run too: a bad --jobs is one
    # line, exit 2): a rung asks whether it can still meet the rule after whole waves of runs only
    batch = parallel_jobs(jobs, launcher_given=launcher_given(overrides or []))
    job = job_of(ctx)
    conf = config_dir_of(config_dir)
    cal = prepare(
        list(overrides or []),
        seeds=seeds,
        study_seeds=study_seeds,
        rule=rule,
        endpoint=endpoint,
        config_dir=conf,
        job=job,
    )
    if dry_run:
        _print_plan(cal)
        return

    outcome = run_calibration(cal, _sweeper(jobs, conf, job), echo=typer.echo, batch=batch)
    _report(cal, outcome)


def _sweeper(jobs: str, conf: Path, job):
    """One rung's sweep through the sweep service, printed as `gradlab sweep` prints it."""
    from experiments.launch import SweepRequest  # deferred: OmegaConf, gymnasium, NumPy (~0.5 s)

    def run_sweep(sweep_overrides: list[str]) -> None:
        request = SweepRequest(tuple(sweep_overrides), jobs=jobs, config_dir=conf, job=job)
        sweep_command(request)  # a refusal raises (exit 2); failed, unfinished or stopped
        # runs: the rung's counts say so, and the calibration stops there

    return run_sweep


def _report(cal: Calibration, outcome) -> None:
    """The last lines: the chosen rung and its regime, or the ladder exhausted, or incomplete
    (exit 1), with the clip threshold by each rule."""
    where = cal.folder / "calibration.md"
    record = outcome.record
    if outcome.status == "chosen" and record.chosen_rung is not None:
        typer.echo(f"chosen: rung {record.chosen_rung}; record {where}")
        _clip_threshold(record.rungs[record.chosen_rung - 1], "the chosen rung")
        if outcome.preset_kept:
            typer.echo(
                f"error: {cal.preset_path} exists with other settings and was kept; the new "
                f"preset is {cal.folder / 'regime.yaml'} (remove the old one to install it)",
                err=True,
            )
            raise typer.Exit(1)
        typer.echo(f"regime={cal.regime}  ({cal.preset_path})")
    elif outcome.status == "exhausted":
        typer.echo(
            f"no rung met the rule (>= {cal.rule:g} of {len(cal.seeds)} seeds "
            f"{rule_event(cal.endpoint)}): the "
            f"ladder ran out of rungs; no regime written; record {where}"
        )
        _clip_threshold(record.rungs[-1], "the last rung")
        typer.echo(
            "a harsher ladder (e.g. ladder=harsh) is a new calibration: declare it before its "
            "runs (docs/calibration.md)"
        )
    else:
        typer.echo(f"incomplete: runs did not finish; run the same command again; record {where}")
        raise typer.Exit(1)
