"""Publication figures of one results folder: the runs' returns, gradient norms, loss, per-depth
gradients, and (from their modules) final returns
(:mod:`~experiments.report.figures.final_returns`), run
outcomes (:mod:`~experiments.report.figures.run_status`) and performance profiles
(:mod:`~experiments.report.figures.profile`).

Every figure follows the same rules (``docs/figures.md`` shows each one and its caption):

* **small multiples**: one panel per regime (per combination of the varying keys other than the
  compared one, :mod:`experiments.report.figures.layout`), one line per variant, y shared across
  panels;
  the return figure goes further, one panel per arm and regime, since it draws every run;
* **one look per variant**: colour (Okabe-Ito), line style and marker keyed by the variant's
  position in the variant registry, the same in every figure
  (:mod:`experiments.report.figures.style`);
* **one legend per figure**, below the panels, outside every data area;
* **every run counts** in returns: a diverged run contributes its task's random-policy return from
  its divergence on (:mod:`experiments.report.figures.itt`), an ``x`` marking where it diverged; no
  mean of returns is drawn (an outcome where runs learn or diverge is bimodal, and its mean
  matches no run). Gradient-norm and loss curves have no value for a diverged run after its
  divergence: they show the runs still training, the ``x`` marks where each run stopped, and the
  panel title says how many diverged;
* **bands inside the support, and only over >= 10 runs**: a seeded percentile bootstrap of the
  mean over runs (:mod:`experiments.report.figures.bands`), which never leaves the range of the
  data;
  log-scale quantities (gradient norms) are averaged and bootstrapped in log10 (the line is the
  geometric mean); a line over fewer than 10 runs has no band;
* **a paper's size**: 3.3 in wide, fonts >= 7 pt, PNG (300 dpi) and PDF.

Figures are built without ``pyplot`` (no global figure registry), so tests can inspect them.
Per-step data come from :func:`experiments.report.figures.curves.run_curves` (``metrics.jsonl``, or
the
committed ``curves.csv.gz`` on a fresh clone).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import matplotlib as mpl
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from experiments.base.errors import ConfigError
from experiments.report.figures.bands import mean_band
from experiments.report.figures.curves import run_curves
from experiments.report.figures.drawing import (
    DARK,
    GREY,
    diverged_steps,
    divergence_handle,
    log_y,
    mark_divergences,
    mark_run_divergences,
    panel_title,
    plot_line,
    variant_legend,
    with_lines,
)
from experiments.report.figures.final_returns import final_returns
from experiments.report.figures.itt import itt_matrix, run_random_return
from experiments.report.figures.layout import layout_of, panel_grid
from experiments.report.figures.normalised import normalised_curves
from experiments.report.figures.profile import check_profile_runs, performance_profiles
from experiments.report.figures.run_status import outcome_counts, outcome_counts_across
from experiments.report.figures.style import (
    OKABE_ITO,
    STYLE,
    figure_legend,
    fold_label,
    save_figure,
)
from experiments.report.runs.results import Results, load_curves

__all__ = [
    "OKABE_ITO",
    "Plotted",
    "arm_panels",
    "final_returns",
    "hidden_grad_by_depth",
    "normalised_curves",
    "outcome_counts",
    "outcome_counts_across",
    "performance_profiles",
    "plot_across",
    "plot_all",
    "return_curves",
    "save_figure",
    "survivor_curves",
]

_ARM_PANEL_HEIGHT = 1.2  # inches per row of arm panels
_RUN_ALPHA = 0.35


def arm_panels(runs: pd.DataFrame, layout) -> list[tuple[str, str, pd.DataFrame]]:
    """``(arm, title, runs)`` per small multiple: one panel per arm (line value) and regime
    (combination of the other varying keys), arm-major in legend order, so that with two regimes
    each row of a two-column grid is one arm and each column one regime. The title is the arm and
    the regime's values (``scale_gradient, stress``)."""
    regimes = list(layout.panels(runs))
    out = []
    for value in layout.values:
        for label, panel in regimes:
            members = panel[panel[layout.line_key].astype(str) == value]
            if len(members):
                where = ", ".join(part.split("=", 1)[-1] for part in label.split(", "))
                out.append((value, f"{value}, {where}" if label else value, members))
    return out


def return_curves(
    results: Results,
    curves: pd.DataFrame,
    *,
    random_return_value: float | None = None,
    threshold: float | None = None,
) -> Figure:
    """Evaluation return of **every run**, one thin line per run, one panel per arm (and regime):
    no mean is drawn, since a bimodal outcome (runs that learn and runs that diverge) has a mean
    that matches no run.

    A run that diverged counts as its task's random-policy return from its divergence on
    (intention to treat, :mod:`experiments.report.figures.itt`), marked ``x`` where it diverged.

    Args:
      results: the folder.
      curves: from :func:`~experiments.report.figures.curves.run_curves`, with ``eval/return``.
      random_return_value: the task's random-policy episode return (unscaled); None: from the
        task registry. Needed only when a run diverged.
      threshold: a dashed horizontal line (the task's success return), if given.

    Returns:
      The figure: one axes per (arm, regime), titled ``arm, v`` over ``n=N, k diverged``; its
      lines labelled ``run`` (one per run, ``get_xdata``: evaluation steps, ``get_ydata``: that
      run's returns, intention to treat), then one ``x`` mark line per diverged run.
    """
    runs = results.averaged
    layout = layout_of(runs, results.group_keys)
    panels = arm_panels(with_lines(runs, layout), layout)
    evals = curves.dropna(subset=["eval/return"]) if "eval/return" in curves else curves
    diverged = any(diverged_steps(runs).notna())
    with mpl.rc_context(STYLE):
        fig, axes = panel_grid(len(panels), height=_ARM_PANEL_HEIGHT)
        for ax, (value, title, members) in zip(axes, panels, strict=False):
            members = members.assign(diverged_step=diverged_steps(members))
            fill = {
                run.job: run_random_return(run.path, explicit=random_return_value)
                for run in members.itertuples()
                if run.diverged_step == run.diverged_step
            }
            steps, values = itt_matrix(evals[evals["job"].isin(members["job"])], members, fill)
            colour = layout.styles[value]["color"]
            for row in values:
                ax.plot(steps, row, color=colour, linewidth=0.5, alpha=_RUN_ALPHA, label="run")
            mark_run_divergences(ax, steps, values, members["diverged_step"].to_numpy(float))
            k = int(members["diverged_step"].notna().sum())
            ax.set_title(f"{fold_label(title)}\nn={len(members)}, {k} diverged", loc="left")
            if threshold is not None:
                ax.axhline(threshold, color=GREY, linestyle="--", linewidth=0.7)
            for level in sorted(set(fill.values())):
                ax.axhline(level, color=GREY, linestyle=":", linewidth=0.8)
        for ax in axes[-min(2, len(axes)) :]:
            ax.set_xlabel("training step")
        for ax in axes[:: min(2, len(axes))]:
            ax.set_ylabel("evaluation return")
        handles = [(Line2D([], [], color=GREY, linewidth=0.6), "one run (colour: arm)")]
        if threshold is not None:
            handles.append((Line2D([], [], color=GREY, linestyle="--", linewidth=0.7),
                            "threshold"))  # fmt: skip
        if diverged:
            handles.append((Line2D([], [], color=GREY, linestyle=":", linewidth=0.8),
                            "random policy (diverged runs)"))  # fmt: skip
            handles.append((Line2D([], [], linestyle="none", marker="x", color=DARK,
                                   markersize=4), "run diverged"))  # fmt: skip
        figure_legend(fig, [h for h, _ in handles], [label for _, label in handles])
    return fig


def _binned(curves: pd.DataFrame, key: str, *, n_bins: int, log: bool) -> pd.DataFrame:
    """Per (job, x): the run's mean of ``key`` (of log10 ``key`` when ``log``) in each step bin,
    x the bin's centre; steps are used as they are when there are at most ``n_bins``. Non-finite
    values (a diverging step) and, for ``log``, values <= 0 are left out."""
    data = curves[["job", "step", key]].dropna()
    data = data[np.isfinite(data[key]) & ((data[key] > 0) if log else True)]
    if log:
        data = data.assign(**{key: np.log10(data[key])})
    steps = data["step"].to_numpy(dtype=float)
    if data["step"].nunique() <= n_bins:
        data = data.assign(x=steps)
    else:
        low, high = steps.min(), steps.max()
        width = (high - low) / n_bins
        index = np.minimum(((steps - low) // width).astype(int), n_bins - 1)
        data = data.assign(x=low + (index + 0.5) * width)
    return data.groupby(["job", "x"], sort=True)[key].mean().reset_index()


def _survivor_band(matrix: pd.DataFrame, *, n_resamples: int, seed: int):
    """Mean and band per column of ``[runs, x]`` (NaN: the run had stopped), over the runs with a
    value there: one bootstrap per set of runs present."""
    values = matrix.to_numpy(dtype=float)
    mean, low, high = (np.full(values.shape[1], np.nan) for _ in range(3))
    present = np.isfinite(values)
    for pattern in {tuple(col) for col in present.T}:
        cols = np.flatnonzero((present.T == pattern).all(axis=1))
        rows = np.flatnonzero(pattern)
        if not len(rows):
            continue
        m, lo, hi = mean_band(values[np.ix_(rows, cols)], n_resamples=n_resamples, seed=seed)
        mean[cols], low[cols], high[cols] = m, lo, hi
    return matrix.columns.to_numpy(dtype=float), mean, low, high


def survivor_curves(
    results: Results,
    curves: pd.DataFrame,
    key: str,
    *,
    ylabel: str,
    log: bool = False,
    n_bins: int = 100,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Figure:
    """A training metric per panel, one line per variant over the runs still training at each
    step (a diverged run has no value after its divergence), with a 95% bootstrap band; an ``x``
    marks where each run diverged, and the panel title counts them.

    Args:
      results: the folder.
      curves: with column ``key`` (:func:`~experiments.report.figures.curves.run_curves`).
      key: ``grad/global_norm`` or ``loss/total``.
      ylabel: the y label, with units.
      log: log y axis, averaged in log10 (the line is the geometric mean).
      n_bins: at most this many points per run (per-run bin means).
      n_resamples: bootstrap resamples per band.
      seed: seeds every band.
    """
    runs = results.averaged
    layout = layout_of(runs, results.group_keys)
    panels = list(layout.panels(with_lines(runs, layout)))
    binned = _binned(curves, key, n_bins=n_bins, log=log)
    with mpl.rc_context(STYLE):
        fig, axes = panel_grid(len(panels))
        for ax, (label, panel) in zip(axes, panels, strict=False):
            for order, (value, members) in enumerate(layout.lines(panel)):
                data = binned[binned["job"].isin(members["job"])]
                if data.empty:
                    continue
                matrix = data.pivot(index="job", columns="x", values=key)
                x, mean, low, high = _survivor_band(matrix, n_resamples=n_resamples, seed=seed)
                if log:
                    mean, low, high = 10**mean, 10**low, 10**high
                style = layout.styles[value]
                plot_line(ax, x, mean, low, high, style, order=order)
                ax.get_lines()[-1].set_label(value)
                mark_divergences(ax, x, mean, diverged_steps(members).to_numpy(float), style)
            panel_title(ax, label, panel)
            if log:
                log_y(ax)
            ax.set_xlabel("training step")
        for ax in axes[:: min(2, len(axes))]:
            ax.set_ylabel(ylabel)
        diverged = any(diverged_steps(runs).notna())
        variant_legend(fig, layout, [divergence_handle()] if diverged else [])
    return fig


def hidden_grad_by_depth(
    results: Results, curves: pd.DataFrame, *, n_resamples: int = 2000, seed: int = 0
) -> Figure:
    """Gradient norm at the hidden state against unroll depth k, per panel, one line per variant.

    Per run: the median over its finite steps of ``grad/hidden_depth_{k}`` (a diverged run counts
    with the steps it trained); per line: the geometric mean over runs with a 95% bootstrap band
    (in log10); log y axis.
    """
    depth_keys = sorted(
        (c for c in curves.columns if c.startswith("grad/hidden_depth_")),
        key=lambda c: int(c.rsplit("_", 1)[1]),
    )
    depths = np.array([int(c.rsplit("_", 1)[1]) for c in depth_keys])
    runs = results.averaged
    layout = layout_of(runs, results.group_keys)
    panels = list(layout.panels(with_lines(runs, layout)))
    finite = curves[depth_keys].where(np.isfinite(curves[depth_keys]) & (curves[depth_keys] > 0))
    per_run = finite.assign(job=curves["job"]).groupby("job")[depth_keys].median()
    with mpl.rc_context(STYLE):
        fig, axes = panel_grid(len(panels))
        for ax, (label, panel) in zip(axes, panels, strict=False):
            for order, (value, members) in enumerate(layout.lines(panel)):
                # the depths these runs unrolled (a regime may unroll fewer), then whole runs
                runs_k = per_run.reindex(members["job"]).dropna(axis=1, how="all").dropna()
                if runs_k.empty:
                    continue
                logs = np.log10(runs_k.to_numpy(float))  # [runs, depths]
                mean, low, high = mean_band(logs, n_resamples=n_resamples, seed=seed)
                style = layout.styles[value]
                at = np.array([int(c.rsplit("_", 1)[1]) for c in runs_k.columns])
                plot_line(ax, at, 10**mean, 10**low, 10**high, style, order=order)
                ax.get_lines()[-1].set_label(value)
            panel_title(ax, label, panel)
            log_y(ax)
            if len(depths):
                ax.set_xticks(depths[:: 1 + (len(depths) - 1) // 6])
            ax.set_xlabel("unroll depth k")
        for ax in axes[:: min(2, len(axes))]:
            ax.set_ylabel(r"$\|\partial L / \partial h_k\|_2$")
        variant_legend(fig, layout, [])
    return fig


@dataclasses.dataclass(frozen=True)
class Plotted:
    """What :func:`plot_all` did.

    Attributes:
      written: figure name -> its written paths (PNG, PDF).
      skipped: figure name -> the one-line reason it was not drawn (a performance profile with
        an arm under 10 runs); a figure without data at all is neither written nor listed.
    """

    written: dict[str, list[Path]]
    skipped: dict[str, str]


def plot_all(
    results: Results,
    out_dir: str | Path,
    *,
    random_return_value: float | None = None,
    normalisation: Mapping[str, tuple[float, float]] | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Plotted:
    """Every figure of the folder, as PNG and PDF.

    Figures: ``return`` (evaluation return of every run, one panel per arm), ``final_return``
    (each run's final return, intention to treat, per arm), ``grad_norm`` (global gradient norm,
    log y), ``loss`` (total loss, log y), ``hidden_grad_depth`` (gradient at the hidden state per
    depth; needs ``metrics.jsonl``), ``profile`` (performance profile of the final return; only
    where every arm has >= 10 runs, else skipped with its reason), ``outcome`` (run status: the
    outcome classes per arm), and with ``normalisation`` ``normalised_return`` (each task's
    normalised evaluation return, every run and each arm's mean with its band:
    :func:`~experiments.report.figures.normalised.normalised_curves`). A figure without data is
    skipped silently.

    Args:
      results: the folder.
      out_dir: where the files go.
      random_return_value: the task's random-policy episode return (unscaled), for a diverged
        run's return after its divergence; None: from the task registry.
      normalisation: task -> ``(r_ref, r_rand)`` as a study's record declares them; None: no
        normalised figure.
      n_resamples: bootstrap resamples per band.
      seed: seeds every band.

    Returns:
      The written paths per figure and the skipped figures with their reasons.
    """
    curves = run_curves(results.averaged)
    thresholds = results.runs["threshold"].dropna().unique()
    threshold = float(thresholds[0]) if len(thresholds) == 1 else None
    boot = {"n_resamples": n_resamples, "seed": seed}
    itt = {"random_return_value": random_return_value}
    figures, skipped = {}, {}

    def has(key: str) -> bool:
        return key in curves and curves[key].notna().any()

    if has("eval/return"):
        figures["return"] = return_curves(results, curves, threshold=threshold, **itt)
    if normalisation is not None and has("eval/return"):
        figures["normalised_return"] = normalised_curves(
            results, curves, normalisation, n_resamples=n_resamples, seed=seed
        )
    if len(results.averaged):
        figures["final_return"] = final_returns(results, threshold=threshold, **itt)
    if has("grad/global_norm"):
        figures["grad_norm"] = survivor_curves(
            results, curves, "grad/global_norm", ylabel="global gradient norm", log=True, **boot
        )
    if has("loss/total"):
        # log y: a diverging step's loss (above the rule's factor x its early mean) would flatten
        # every other curve on a linear axis
        figures["loss"] = survivor_curves(
            results, curves, "loss/total", ylabel="total loss", log=True, **boot
        )
    full = load_curves(results)
    if any(c.startswith("grad/hidden_depth_") for c in full.columns):
        figures["hidden_grad_depth"] = hidden_grad_by_depth(results, full, **boot)
    if len(results.averaged):
        layout = layout_of(results.averaged, results.group_keys)
        try:
            check_profile_runs(results.averaged, layout)
        except ConfigError as err:
            skipped["profile"] = str(err)
        else:
            figures["profile"] = performance_profiles(results, **itt, **boot)
    figures["outcome"] = outcome_counts(results)
    written = {name: save_figure(fig, out_dir, name) for name, fig in figures.items()}
    return Plotted(written, skipped)


def plot_across(folders: list[Results], out_dir: str | Path) -> Plotted:
    """The figure that compares across several folders (a study's tasks): ``outcome``, one panel
    per folder (:func:`~experiments.report.figures.run_status.outcome_counts_across`). The other
    figures stay per folder: their returns are on each task's own scale.

    Returns:
      The written paths (PNG, PDF) under ``outcome``.
    """
    return Plotted({"outcome": save_figure(outcome_counts_across(folders), out_dir, "outcome")}, {})
