"""`gradlab bench`: the Performance figures, as ratios measured side by side in one process."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from cli._errors import guarded
from cli._live import FORMATS, format_option, start
from experiments.base.errors import ConfigError
from experiments.bench import BenchSettings, run_bench

__all__ = ["FORMATS", "bench"]

FormatOption = format_option("terminal tables")


@guarded
def bench(
    quick: Annotated[
        bool,
        typer.Option("--quick", help="Tiny repeat counts: shows every measurement works (CI)."),
    ] = False,
    fmt: FormatOption = "rich",
    repeats: Annotated[
        int | None,
        typer.Option(help="Timed rounds per comparison (median reported); default 5, quick 1."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seeds networks, batches, boards and the run.")] = 0,
) -> None:
    """Measure gradlab's speed: every figure a ratio of two rates timed in the same rounds.

    (a) Train step samples/s: compiled vs eager vs the paper's per-sample loop.

    (b) Search simulations/s: the whole search as one compiled graph vs the NumPy batched search
    (>= 2x, and >= 100k/s at B=64, 50 simulations), and batched vs one environment at a time.

    (c) Train step GFLOP/s vs a large compiled matmul (fraction of practical peak).

    (d) A default catch run's env steps/s and training steps/s.

    (e) Start times of `gradlab --help` and `gradlab list`.

    (f) MinAtar, at the preset's sizes (conf/, task=breakout: its batch, unroll, networks, envs
    and simulations): the compiled train step's samples/s, ms/step and GFLOP/s (conv counted)
    and the compiled search's simulations/s, timed in the same rounds; --quick trains on a
    batch of 16.

    --quick (tiny repeat counts) takes a fraction of the full bench's time (docs/performance.md
    gives both).

    Examples:

      gradlab bench

      gradlab bench --quick --format json
    """
    if repeats is not None and repeats < 1:
        raise ConfigError(f"--repeats {repeats} is invalid; expected an integer >= 1")
    start(fmt)

    overrides: dict = {"seed": seed}
    if repeats is not None:
        overrides["repeats"] = repeats
    settings = BenchSettings.quick(**overrides) if quick else BenchSettings(**overrides)
    report = run_bench(settings, progress=lambda message: typer.echo(f"bench: {message}", err=True))
    if fmt == "json":
        typer.echo(json.dumps(report.to_dict(), indent=2))
    elif fmt == "md":
        typer.echo(markdown(report))
    else:
        _rich(report)


def _met(flag: bool | None) -> str:
    return "-" if flag is None else ("yes" if flag else "NO")


def _rate(report, name: str) -> str:
    rate = report.rates[name]
    return f"{rate.value:.4g} {rate.unit}"


def _ratio_rows(report) -> list[tuple[str, ...]]:
    return [
        (
            ratio.name,
            f"{ratio.value:.3g}x" if ratio.target >= 1 else f"{ratio.value:.1%}",
            f">= {ratio.target:g}x" if ratio.target >= 1 else f">= {ratio.target:.0%}",
            _met(ratio.met),
            f"{ratio.numerator} {_rate(report, ratio.numerator)}",
            f"{ratio.denominator} {_rate(report, ratio.denominator)}",
        )
        for ratio in report.ratios
    ]


def _rate_rows(report) -> list[tuple[str, ...]]:
    return [
        (
            rate.name,
            f"{rate.value:.4g}",
            rate.unit,
            "-" if rate.target_min is None else f">= {rate.target_min:.4g}",
            _met(rate.met),
            " ".join(f"{r:.4g}" for r in rate.runs),
            rate.what,
        )
        for rate in report.rates.values()
    ]


def _timing_rows(report) -> list[tuple[str, ...]]:
    return [
        (
            t.name,
            f"{t.seconds:.2f}",
            "-" if t.target_max is None else f"<= {t.target_max:g}",
            _met(t.met),
            t.what,
        )
        for t in report.timings
    ]


_RATIO_HEAD = ("ratio", "value", "target", "met", "rate A", "rate B")
_RATE_HEAD = ("rate", "median", "unit", "target", "met", "rounds", "what")
_TIMING_HEAD = ("time", "seconds", "target", "met", "what")


def markdown(report) -> str:
    """The report as three Markdown tables (ratios, rates, times)."""
    lines = [f"Device: {report.device}.", ""]
    for head, rows in (
        (_RATIO_HEAD, _ratio_rows(report)),
        (_RATE_HEAD, _rate_rows(report)),
        (_TIMING_HEAD, _timing_rows(report)),
    ):
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines).rstrip()


def _rich(report) -> None:
    from rich.console import Console  # deferred: rich's console and table (~60 ms)
    from rich.table import Table  # deferred: rich's console and table (~60 ms)

    console = Console()
    for title, head, rows in (
        (f"gradlab bench ({report.device}): ratios", _RATIO_HEAD, _ratio_rows(report)),
        ("Rates behind them (median of rounds)", _RATE_HEAD, _rate_rows(report)),
        ("Times", _TIMING_HEAD, _timing_rows(report)),
    ):
        table = Table(title=title)
        for column in head:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*row)
        console.print(table)
