"""`gradlab study plan|register|run NAME`: a pre-registered study, from its design to its runs.

The design is `conf/study/NAME.yaml` (docs/studies.md). `register` pins it in the results folder
before any run; `run` refuses a design that differs from its record, then sweeps the arms one
after another (the primary contrast's arms first) with `gradlab sweep`, which resumes: the same
command after a stop runs only what is missing.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from cli._errors import guarded
from experiments.errors import ConfigError

__all__ = ["app"]

app = typer.Typer(
    help="A pre-registered study: plan its power, register its design, run its arms.",
    no_args_is_help=True,
    add_completion=False,
)

_RESULTS = typer.Option("--results-dir", help="Results root; the study's folder is ROOT/ABLATION.")
_NAME_HELP = "A study of conf/study/ (see gradlab list)."


def _load(name: str):
    from experiments.hydra_app import CONF_DIR
    from experiments.study.design import load_study

    return load_study(name, CONF_DIR), CONF_DIR


def _rates(text: str) -> tuple[float, float]:
    try:
        p1, p2 = (float(x) for x in text.split(","))
    except ValueError:
        raise ConfigError(f"--rates {text!r}; expected two rates, e.g. 0.6,0.3") from None
    return p1, p2


@app.command("plan")
@guarded
def plan(
    name: Annotated[str, typer.Argument(help=_NAME_HELP)],
    rates: Annotated[
        str | None,
        typer.Option(help="Baseline and arm rates, e.g. 0.6,0.3 (default: the study's planning)."),
    ] = None,
    power: Annotated[float, typer.Option(help="Target power for the runs-per-arm search.")] = 0.9,
) -> None:
    """Exact power of the primary contrast (Fisher's test, by enumeration) and the runs per arm
    that reach a target power."""
    from experiments.study.power import fisher_power, seeds_for_power

    study, _ = _load(name)
    if rates is None:
        if not {"baseline_rate", "arm_rate"} <= study.planning.keys():
            raise ConfigError(f"study {name!r} declares no planning rates; give --rates P1,P2")
        p1, p2 = float(study.planning["baseline_rate"]), float(study.planning["arm_rate"])
    else:
        p1, p2 = _rates(rates)
    alpha, n = study.primary.alpha, len(study.seeds)
    got = fisher_power(p1, p2, n, alpha=alpha)
    need = seeds_for_power(p1, p2, power=power, alpha=alpha)
    typer.echo(
        f"{study.primary.arm} vs {study.baseline} on {study.primary.endpoint}, rates {p1} vs {p2}, "
        f"Fisher two-sided at alpha {alpha}: power {got:.3f} with {n} runs per arm; "
        f"{need} runs per arm reach {power}"
    )


@app.command("register")
@guarded
def register(
    name: Annotated[str, typer.Argument(help=_NAME_HELP)],
    results_dir: Annotated[Path, _RESULTS] = Path("results"),
) -> None:
    """Write the study's pre-registration record before any of its runs (never overwritten)."""
    from experiments.study.record import register as write

    study, conf = _load(name)
    path = write(study, config_dir=conf, results_dir=results_dir)
    typer.echo(f"registered {name}: {path}")


def _sweep(args: list[str]) -> int:
    """One arm through `gradlab sweep` in a child process; a stop signal is passed on to it."""
    command = [sys.executable, "-c", "from cli.main import app; app()", "sweep", *args]
    child = subprocess.Popen(command)
    previous = {}

    def forward(signum, _frame):
        child.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        previous[signum] = signal.signal(signum, forward)
    try:
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:  # the child, in the same process group, got it too
                continue
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@app.command("run")
@guarded
def run(
    name: Annotated[str, typer.Argument(help=_NAME_HELP)],
    results_dir: Annotated[Path, _RESULTS] = Path("results"),
    jobs: Annotated[str, typer.Option("--jobs", "-j", help="gradlab sweep --jobs.")] = "auto",
) -> None:
    """Run every arm of a registered study (primary arms first); the same command resumes."""
    from experiments.study.record import check

    study, conf = _load(name)
    for note in check(study, config_dir=conf, results_dir=results_dir):
        typer.echo(f"note: {note}")
    order = [study.baseline, study.primary.arm]
    arms = sorted(study.arms, key=lambda a: order.index(a.variant) if a.variant in order else 2)
    worst = 0
    for arm in arms:
        typer.echo(f"== {study.name}: arm {arm.label} ({len(study.seeds)} seeds)")
        code = _sweep(["--jobs", jobs, *study.sweep_overrides(arm, results_dir)])
        if code in (129, 130, 143):  # stopped: the same command resumes
            raise typer.Exit(code)
        worst = max(worst, code)
    raise typer.Exit(worst)
