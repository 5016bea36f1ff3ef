"""`gradlab table` and `gradlab plot`: a results folder -> paper tables and figures.

pandas, matplotlib and scipy are imported inside the commands (``gradlab --help`` stays fast);
TensorFlow is never imported. Bad input raises ConfigError: one line on stderr, exit code 2.
"""

import os
from pathlib import Path
from typing import Annotated

import typer

from cli._errors import guarded
from cli._output import (
    FormatOption,
    KeepDuplicatesOption,
    OutOption,
    emit,
    output_format,
    refuse_inputs,
)
from experiments.base.errors import ConfigError, unknown_choice

__all__ = ["plot", "table"]


def _split(values: list[str] | None) -> list[str] | None:
    """``["a,b", "c"] -> ["a", "b", "c"]``: repeated and comma-separated options both work."""
    if not values:
        return None
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _number(option: str, text: str | None, *, unit: bool = False) -> float | None:
    """``text`` as a float; a one-line error naming the option otherwise (Click's own is several
    lines). ``unit``: the value must lie in (0, 1)."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if value != value or value in (float("inf"), float("-inf")) or (unit and not 0 < value < 1):
        expected = "a number in (0, 1), e.g. 0.05" if unit else "a finite number, e.g. -0.6"
        raise ConfigError(f"{option} {text!r} is not valid; expected {expected}")
    return value


@guarded
def table(
    results_dir: Annotated[
        Path, typer.Argument(help="An ablation's results folder, e.g. results/hidden_scale.")
    ],
    fmt: FormatOption = None,
    metrics: Annotated[
        list[str] | None,
        typer.Option(
            "--metrics",
            "-m",
            help="Figures to show, repeated or comma-separated (default: failed, "
            "lost_after_learning, never_learned, final_return, steps_to_threshold, grad_norm_p99; "
            "rates: failed, unstable, diverged, collapsed, reached_threshold).",
        ),
    ] = None,
    stat: Annotated[
        str, typer.Option("--stat", "-s", help="mean | iqm | median over runs.")
    ] = "mean",
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            "-b",
            help="Group each arm is contrasted with, within its stratum: a variant name or "
            "KEY=VALUE (default: variant none, when present).",
        ),
    ] = None,
    analysis: Annotated[
        str,
        typer.Option(
            "--analysis",
            help="independent (arms as two samples) | paired (runs matched by seed within the "
            "stratum: exact McNemar, Wilcoxon signed-rank, paired bootstrap; a seed in one arm "
            "only is an error).",
        ),
    ] = "independent",
    rate_test: Annotated[
        str,
        typer.Option(
            "--rate-test", help="fisher | barnard: the exact test of two rates (independent)."
        ),
    ] = "fisher",
    alpha: Annotated[
        str,
        typer.Option("--alpha", help="Bold where the Holm-adjusted p is below this."),
    ] = "0.05",
    diverged_return: Annotated[
        str | None,
        typer.Option(
            "--diverged-return",
            help="Episode return a diverged run counts as in the final returns (default: the "
            "mean return of the task's uniformly random policy, from the task registry).",
        ),
    ] = None,
    keep_duplicates: KeepDuplicatesOption = None,
    margin: Annotated[
        list[str] | None,
        typer.Option(
            "--margin",
            help="ENDPOINT=VALUE, repeatable: an equivalence margin declared for a rate (a risk "
            "difference, e.g. failed=0.2) or value column (its units, e.g. final_return=0.1): "
            "that column gains two one-sided tests (TOST), the 90%% CI of Δ and a verdict: "
            "equivalent within ±margin, different, or not separated.",
        ),
    ] = None,
    caption: Annotated[
        str | None,
        typer.Option(
            "--caption",
            help="LaTeX only: short (default: what, n, the tests, the correction, bold and *) | "
            "full (and the whole method text as a paragraph after the table, "
            "\\ref-ing its label). Markdown always carries the whole caption.",
        ),
    ] = None,
    layout: Annotated[
        str | None,
        typer.Option(
            "--layout",
            help="LaTeX only: compact (default: of the default endpoints failed, final return, "
            "reaching the threshold and grad norm p99; each cell the estimate, its CI and p_adj; "
            "the main job on one page) | full (every endpoint, each cell also Δ and its CI; "
            "split into floats by endpoint, then regime, where a page needs it).",
        ),
    ] = None,
    out: OutOption = None,
    wandb: Annotated[
        bool,
        typer.Option(
            "--wandb",
            help="Also log the table into a W&B run of the sweep's group (a wandb.Table of every "
            "number, and the Markdown and CSV as an artifact); offline unless WANDB_MODE says "
            "otherwise; wandb sync uploads it. A W&B failure is a warning: the table is the "
            "same.",
        ),
    ] = False,
    wandb_dir: Annotated[
        Path,
        typer.Option(
            "--wandb-dir",
            help="Where the W&B run is written (WANDB_DIR/wandb/offline-run-*); never inside "
            "RESULTS_DIR.",
        ),
    ] = Path("results/wandb"),
) -> None:
    """Per group: failed, lost after learning and never learned k/n (exact 95% CI), final return
    over every run, reaching the threshold by the end (cumulative incidence, divergence a competing
    risk; Gray's test), gradient norm p99; beside each, the contrast with the baseline of the same
    stratum: Δ with its 95% CI and the Holm-adjusted p (with --margin, an equivalence verdict).

    One declared family: each variant against the baseline within its stratum (regime and any
    other key that varies); per column, Holm within each stratum. Tests: Fisher's (or Barnard's)
    exact test and the risk difference with Newcombe's CI for rates; Mann-Whitney U and a
    bootstrap CI of the difference otherwise; Gray's test for reaching it. Bold means exactly:
    the printed p_adj < alpha. Every completed or diverged run counts (intention to treat): a
    diverged run's final return is the task's random-policy return; crashed or timed-out runs are
    counted apart, never averaged. The caption says all of this with the numbers used. The same
    folder always gives the same table (the bootstrap is seeded).

    LaTeX (-f latex, or -o X.tex) goes into a paper as it is: table floats that need only
    booktabs, each within a 10pt article's page (a two-column class: replace table by table*);
    a short caption (--caption full adds the method text as a paragraph). By default compact:
    the headline endpoints, each estimate with its CI and p_adj, the main job in one float on
    one page; the caption (and a comment line) names what is left out, and --layout full shows
    it. A table too wide or too tall for a page is split by endpoint, then by regime (stratum),
    then by rows, into floats marked "continued", never cut.

    Examples:

      gradlab table results/hidden_scale

      gradlab table results/hidden_scale --analysis paired --format latex -o table.tex

      gradlab table results/hidden_scale -f latex --caption full -o table.tex

      gradlab table results/hidden_scale -f latex --layout full -o table_full.tex

      gradlab table results/hidden_scale -m failed,final_return --rate-test barnard -f csv

      gradlab table results/hidden_scale --margin failed=0.2 --margin final_return=0.1

      gradlab table results/hidden_scale --wandb
    """
    from experiments.report.table import LAYOUTS, METHODS  # deferred: pandas, SciPy (~2 s)
    from experiments.report.table.render import render  # deferred: pandas, SciPy (~2 s)
    from gradlab._api import table as build  # deferred: pandas (~0.5 s)

    fmt = output_format(fmt, out)
    if caption is not None and caption not in METHODS:
        raise unknown_choice("--caption", caption, METHODS)
    if caption is not None and fmt != "latex":
        raise ConfigError(
            f"--caption applies to -f latex; -f {fmt} always carries the whole caption"
        )
    if layout is not None and layout not in LAYOUTS:
        raise unknown_choice("--layout", layout, LAYOUTS)
    if layout is not None and fmt != "latex":
        raise ConfigError(f"--layout applies to -f latex; -f {fmt} always shows every column")
    refuse_inputs(out, [results_dir])  # before any work: an output never overwrites an input
    mode = _wandb_mode(wandb_dir, results_dir) if wandb else None
    summary = build(
        results_dir,
        metrics=_split(metrics),
        stat=stat,
        baseline=baseline,
        analysis=analysis,
        rate_test=rate_test,
        alpha=_number("--alpha", alpha, unit=True),
        diverged_return=_number("--diverged-return", diverged_return),
        margins=margin or [],
        keep_duplicates=keep_duplicates,
        note=lambda line: typer.echo(line, err=True),
    )
    text = render(summary, fmt=fmt, methods=caption or "short", layout=layout or "compact")
    emit(text, out, [results_dir])
    if mode is not None:  # after the table is out: W&B can only warn
        _log_to_wandb(summary, mode, wandb_dir, results_dir)


def _wandb_mode(wandb_dir: Path, results_dir: Path) -> str:
    """``WANDB_MODE`` (offline when unset), and a ``--wandb-dir`` outside the results folder.

    Raises:
      ConfigError: an unknown mode, or a W&B folder that is or lies inside ``results_dir``.
    """

    from experiments.report.table import wandb_mode  # deferred: pandas, SciPy (~2 s)

    inside = results_dir.resolve()
    if inside == wandb_dir.resolve() or inside in wandb_dir.resolve().parents:
        raise ConfigError(
            f"--wandb-dir '{wandb_dir}' lies inside the results folder '{results_dir}'; W&B "
            "never writes into a results folder: choose another folder"
        )
    return wandb_mode(os.environ)


def _log_to_wandb(summary, mode: str, wandb_dir: Path, results_dir: Path) -> None:
    from experiments.report.table import log_table  # deferred: pandas, SciPy (~2 s)
    from experiments.report.table.render import render  # deferred: pandas, SciPy (~2 s)

    logged = log_table(summary, markdown=render(summary, fmt="md"),
                       csv=render(summary, fmt="csv"), wandb_dir=wandb_dir, mode=mode,
                       folder=results_dir)  # fmt: skip
    for line in logged.warnings:
        typer.echo(f"warning: W&B: {line}", err=True)
    if logged.run_dir is not None:
        typer.echo(f"W&B: table logged {logged.mode} to {logged.run_dir}"
                   + (f" (upload: wandb sync {logged.run_dir})" if logged.mode == "offline"
                      else ""), err=True)  # fmt: skip


@guarded
def plot(
    results_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="An ablation's results folder, e.g. results/hidden_scale; several folders (a "
            "study's tasks): the outcome figure across them, one panel per folder (needs --out).",
            show_default=False,
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Folder for the figures (default: RESULTS_DIR/figures)."),
    ] = None,
) -> None:
    """Figures as PNG and PDF: every run's return, final returns, outcome classes, gradient norms,
    loss, and the performance profile where each arm has >= 10 runs.

    `return`: every run's evaluation return, one thin line per run, one panel per arm and regime
    (a diverged run holds its task's random-policy return from its divergence, marked x).
    `final_return`: one dot per run at its final return (every run counted). `outcome`: per arm,
    its runs by outcome class (held, lost, diverged after/before learning, never learned), counts
    out of n. `grad_norm`, `loss`: geometric mean over the runs still training, `hidden_grad_depth`:
    gradient at the hidden state per unroll depth; 95% bootstrap bands only over >= 10 runs.
    `profile`: fraction of runs above each final-return level, drawn only when every arm has >= 10
    runs (else one line says why). `normalised_return`, for a study whose record declares each
    task's R_ref and R_rand (Study 6): one panel per task, every run's normalised evaluation return
    (0 random, 1 R_ref; a diverged run at 0 from its divergence) and each arm's mean, with a 95%
    bootstrap band over >= 10 runs.

    Several folders (each task of a study in its own): only `outcome`, one panel per folder, the
    same arms in every panel; the other figures stay per folder (each task's return has its own
    scale), so --out is required.

    Examples:

      gradlab plot results/hidden_scale

      gradlab plot results/hidden_scale --out paper/figures

      gradlab plot results/findings/study_faithful_{catch,cartpole} --out paper/faithful
    """
    from experiments.protocols.study import declared_normalisation
    from experiments.report.figures import (  # deferred: matplotlib, pandas, SciPy (~2 s)
        plot_across,
        plot_all,
    )
    from experiments.report.runs import load_results  # deferred: pandas (~0.5 s)

    if out is not None:  # figures go into --out: never into a run folder of an input
        refuse_inputs(out / "figure.png", results_dirs)
    if len(results_dirs) > 1 and out is None:
        raise ConfigError(
            f"{len(results_dirs)} folders given and no --out; the outcome figure across folders "
            "belongs to none of them: pass --out DIR"
        )
    distinct = list(dict.fromkeys(results_dirs))
    if len(distinct) == 1 and len(results_dirs) > 1:
        raise ConfigError(
            f"'{results_dirs[0]}' given {len(results_dirs)} times; pass distinct folders"
        )
    folders = [load_results(path) for path in distinct]
    try:
        if len(folders) > 1:
            plotted = plot_across(folders, out)
        else:
            (results,) = folders
            if results.averaged.empty:
                typer.echo(
                    f"note: no completed or diverged run in '{results_dirs[0]}'; "
                    "only the run-status figure is drawn",
                    err=True,
                )
            plotted = plot_all(
                results,
                out if out is not None else Path(results_dirs[0]) / "figures",
                normalisation=declared_normalisation(results_dirs[0]),
            )
    except OSError as err:
        raise ConfigError(f"cannot write figures to '{out}': {err.strerror}") from None
    for reason in plotted.skipped.values():
        typer.echo(f"note: {reason}", err=True)
    for paths in plotted.written.values():
        for path in paths:
            typer.echo(f"wrote {path}")
