"""`gradlab table` and `gradlab plot`: a results folder -> paper tables and figures.

pandas, matplotlib and scipy are imported inside the commands (``gradlab --help`` stays fast);
TensorFlow is never imported. Bad input raises ConfigError: one line on stderr, exit code 2.
"""

from pathlib import Path
from typing import Annotated

import typer

from cli._errors import guarded
from experiments.errors import ConfigError, unknown_choice

__all__ = ["plot", "table"]

_FORMATS = ("md", "latex", "csv", "json")
_SUFFIX_FORMAT = {".md": "md", ".tex": "latex", ".csv": "csv", ".json": "json"}


def _split(values: list[str] | None) -> list[str] | None:
    """``["a,b", "c"] -> ["a", "b", "c"]``: repeated and comma-separated options both work."""
    if not values:
        return None
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


@guarded
def table(
    results_dir: Annotated[
        Path, typer.Argument(help="An ablation's results folder, e.g. results/hidden_scale.")
    ],
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            help="md | latex | csv | json (default: from --out's suffix, else md).",
        ),
    ] = None,
    metrics: Annotated[
        list[str] | None,
        typer.Option(
            "--metrics",
            "-m",
            help="Stability figures to show, repeated or comma-separated (default: unstable, "
            "final_return, steps_to_threshold, grad_norm_p99, hidden_norm_growth; rates: "
            "unstable, diverged, collapsed, reached_threshold).",
        ),
    ] = None,
    stat: Annotated[
        str, typer.Option("--stat", "-s", help="mean | iqm | median over seeds.")
    ] = "mean",
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            "-b",
            help="Group each row is tested against (Fisher for rates, P(better)): a variant "
            "name or KEY=VALUE (default: variant none, when present).",
        ),
    ] = None,
    p_better: Annotated[
        bool,
        typer.Option(
            "--p-better",
            help="Also show P(better than the baseline) beside each metric (md, latex).",
        ),
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write here instead of stdout.")
    ] = None,
) -> None:
    """Stability per group: unstable k/n (exact 95% CI, Fisher's test against the baseline,
    Holm-adjusted), final return, steps to threshold, gradient norm p99, hidden-norm growth
    (statistic over seeds, 95% bootstrap CI).

    Only completed and diverged runs enter the statistics; the others are counted, never averaged.
    Bold: the best value and the rows not significantly worse (caption). Keys every run shares
    go into the caption. The same folder always gives the same table (the bootstrap is seeded).

    Examples:

      gradlab table results/hidden_scale

      gradlab table results/hidden_scale --stat iqm --baseline none --format latex -o table.tex

      gradlab table results/hidden_scale -m final_return,spike_count -f csv
    """
    from experiments.report.render import render
    from experiments.report.results import load_results
    from experiments.report.tables import DEFAULT_METRICS, summarize

    if fmt is None:
        fmt = _SUFFIX_FORMAT.get(out.suffix.lower(), "md") if out is not None else "md"
    if fmt not in _FORMATS:
        raise unknown_choice("format", fmt, _FORMATS)
    results = load_results(results_dir)
    summary = summarize(
        results, metrics=_split(metrics) or DEFAULT_METRICS, stat=stat, baseline=baseline
    )
    text = render(summary, fmt=fmt, p_better=p_better)
    if out is None:
        typer.echo(text.rstrip("\n"))
        return
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot write '{out}': {err.strerror}") from None
    typer.echo(f"wrote {out}")


@guarded
def plot(
    results_dir: Annotated[
        Path, typer.Argument(help="An ablation's results folder, e.g. results/hidden_scale.")
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Folder for the figures (default: RESULTS_DIR/figures)."),
    ] = None,
) -> None:
    """Figures as PNG and PDF: learning curves, gradient norms, performance profiles, run status.

    Evaluation return and total loss (mean with a 95% CI band per group), global gradient norm
    (log scale), gradient at the hidden state per unroll depth, the performance profile of the
    final return (fraction of runs above each return level, 95% bootstrap band; one panel per
    regime or other shared setting), and run status per group.

    Examples:

      gradlab plot results/hidden_scale

      gradlab plot results/hidden_scale --out paper/figures
    """
    from experiments.report.plots import plot_all
    from experiments.report.results import load_results

    results = load_results(results_dir)
    if results.averaged.empty:
        typer.echo(
            f"note: no completed or diverged run in '{results_dir}'; "
            "only the run-status figure is drawn",
            err=True,
        )
    try:
        written = plot_all(results, out if out is not None else Path(results_dir) / "figures")
    except OSError as err:
        raise ConfigError(f"cannot write figures to '{out}': {err.strerror}") from None
    for paths in written.values():
        for path in paths:
            typer.echo(f"wrote {path}")
