"""Publication figures of one results folder: return curves, gradient norms, loss, per-depth
gradients, run status and (from :mod:`experiments.report.profile`) performance profiles.

Every figure follows the same rules (``docs/figures.md`` shows each one and its caption):

* **small multiples**: one panel per regime (per combination of the varying keys other than the
  compared one, :mod:`experiments.report.layout`), one line per variant, y shared across panels;
* **one look per variant**: colour (Okabe-Ito), line style and marker keyed by the variant's
  position in the variant registry, the same in every figure (:mod:`experiments.report.style`);
* **one legend per figure**, below the panels, outside every data area;
* **every run counts** in return curves: a diverged run contributes its task's random-policy
  return from its divergence on (:mod:`experiments.report.itt`), so a line's n is constant; an
  ``x`` on the line marks each divergence. Gradient-norm and loss curves have no value for a
  diverged run after its divergence: they show the runs still training, the ``x`` marks where
  each run stopped, and the panel title says how many diverged;
* **bands inside the support**: a seeded percentile bootstrap of the mean over runs
  (:mod:`experiments.report.bands`), which never leaves the range of the data; log-scale
  quantities (gradient norms) are averaged and bootstrapped in log10 (the line is the geometric
  mean);
* **a paper's size**: 3.3 in wide, fonts >= 7 pt, PNG (300 dpi) and PDF.

Figures are built without ``pyplot`` (no global figure registry), so tests can inspect them.
Per-step data come from :func:`experiments.report.curves.run_curves` (``metrics.jsonl``, or the
committed ``curves.csv.gz`` on a fresh clone).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from experiments.jobs.summary import STATUSES
from experiments.report.bands import mean_band
from experiments.report.curves import run_curves
from experiments.report.drawing import (
    GREY,
    STATUS_STYLES,
    diverged_steps,
    divergence_handle,
    log_y,
    mark_divergences,
    panel_title,
    plot_line,
    variant_legend,
    with_lines,
)
from experiments.report.itt import itt_matrix, run_random_return
from experiments.report.layout import layout_of, panel_grid
from experiments.report.profile import performance_profiles
from experiments.report.results import AVERAGED, Results, load_curves
from experiments.report.style import OKABE_ITO, STYLE, figure_legend, save_figure

__all__ = [
    "OKABE_ITO",
    "divergence_counts",
    "hidden_grad_by_depth",
    "performance_profiles",
    "plot_all",
    "return_curves",
    "save_figure",
    "survivor_curves",
]


def return_curves(
    results: Results,
    curves: pd.DataFrame,
    *,
    random_return_value: float | None = None,
    threshold: float | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Figure:
    """Evaluation return per panel (regime), one line per variant: the mean over **every** run
    (intention to treat) with a 95% percentile-bootstrap band.

    Args:
      results: the folder.
      curves: from :func:`~experiments.report.curves.run_curves`, with ``eval/return``.
      random_return_value: the task's random-policy episode return (unscaled); None: from the
        task registry. Needed only when a run diverged.
      threshold: a dashed horizontal line (the task's success return), if given.
      n_resamples: bootstrap resamples per band.
      seed: seeds every band (same folder, same figure).

    Returns:
      The figure: one axes per panel; per line ``ax.get_lines()`` holds the mean line (label the
      variant, ``get_xdata``: evaluation steps) then, if runs diverged, their ``x`` marks.
    """
    runs = results.averaged
    layout = layout_of(runs, results.group_keys)
    panels = list(layout.panels(with_lines(runs, layout)))
    evals = curves.dropna(subset=["eval/return"]) if "eval/return" in curves else curves
    diverged = any(diverged_steps(runs).notna())
    with mpl.rc_context(STYLE):
        fig, axes = panel_grid(len(panels))
        for ax, (label, panel) in zip(axes, panels, strict=False):
            for order, (value, members) in enumerate(layout.lines(panel)):
                members = members.assign(diverged_step=diverged_steps(members))
                fill = {
                    run.job: run_random_return(run.path, explicit=random_return_value)
                    for run in members.itertuples()
                    if run.diverged_step == run.diverged_step
                }
                steps, values = itt_matrix(evals[evals["job"].isin(members["job"])], members, fill)
                if not len(steps):
                    continue
                mean, low, high = mean_band(values, n_resamples=n_resamples, seed=seed)
                style = layout.styles[value]
                plot_line(ax, steps, mean, low, high, style, order=order)
                ax.get_lines()[-1].set_label(value)
                mark_divergences(ax, steps, mean, members["diverged_step"].to_numpy(float), style)
            panel_title(ax, label, panel)
            if threshold is not None:
                ax.axhline(threshold, color=GREY, linestyle="--", linewidth=0.7)
            for level in sorted(set(_fills(runs, random_return_value)) if diverged else ()):
                ax.axhline(level, color=GREY, linestyle=":", linewidth=0.8)
            ax.set_xlabel("training step")
        for ax in axes[:: min(2, len(axes))]:
            ax.set_ylabel("evaluation return")
        extra = []
        if threshold is not None:
            extra.append((Line2D([], [], color=GREY, linestyle="--", linewidth=0.7), "threshold"))
        if diverged:
            extra.append((Line2D([], [], color=GREY, linestyle=":", linewidth=0.8),
                          "random policy (diverged runs)"))  # fmt: skip
            extra.append(divergence_handle())
        variant_legend(fig, layout, extra)
    return fig


def _fills(runs: pd.DataFrame, explicit: float | None) -> list[float]:
    """The random-policy returns the diverged runs were held at."""
    steps = diverged_steps(runs)
    return [
        run_random_return(run.path, explicit=explicit)
        for run, step in zip(runs.itertuples(), steps, strict=True)
        if step == step
    ]


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
      curves: with column ``key`` (:func:`~experiments.report.curves.run_curves`).
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


def divergence_counts(results: Results) -> Figure:
    """Horizontal stacked bars per panel: runs per status for each variant, ``k/n diverged``.

    Returns:
      The figure; per panel one bar container per status present (in :data:`STATUSES` order).
    """
    runs = results.runs
    layout = layout_of(runs, results.group_keys)
    panels = list(layout.panels(with_lines(runs, layout)))
    statuses = [s for s in STATUSES if s in set(runs["status"])]
    n_values = len(layout.values)
    with mpl.rc_context(STYLE):
        fig, axes = panel_grid(len(panels), height=0.2 * n_values + 0.45)
        most = max(len(members) for _, p in panels for _, members in layout.lines(p))
        for ax, (label, panel) in zip(axes, panels, strict=False):
            counts = panel.groupby(["_line", "status"]).size().unstack(fill_value=0)
            counts = counts.reindex(index=list(layout.values), columns=statuses, fill_value=0)
            y = np.arange(n_values)
            left = np.zeros(n_values)
            for status in statuses:
                width = counts[status].to_numpy()
                ax.barh(y, width, left=left, label=status, height=0.65, edgecolor="#262626",
                        linewidth=0.4, **STATUS_STYLES[status])  # fmt: skip
                left += width
            for yi, value in zip(y, layout.values, strict=True):
                finished = int(counts.loc[value, [s for s in AVERAGED if s in counts]].sum())
                k = int(counts.loc[value].get("diverged", 0))
                ax.text(left[yi] + 0.15, yi, f"{k}/{finished}", va="center")
            ax.set_yticks(y, layout.values)
            ax.set_ylim(n_values - 0.5, -0.5)  # first value on top (set, not toggled: y is shared)
            ax.set_xlim(0, most * 1.35 + 0.5)
            ax.xaxis.get_major_locator().set_params(integer=True)
            ax.grid(axis="y", visible=False)
            ax.set_xlabel("runs (seeds)")
            if label:
                ax.set_title(label, loc="left")
        handles = [mpl.patches.Patch(edgecolor="#262626", linewidth=0.4, **STATUS_STYLES[s])
                   for s in statuses]  # fmt: skip
        figure_legend(fig, handles, statuses, title="status (k/n: diverged of finished runs)")
    return fig


def plot_all(
    results: Results,
    out_dir: str | Path,
    *,
    random_return_value: float | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
) -> dict[str, list[Path]]:
    """Every figure of the folder, as PNG and PDF.

    Figures: ``return`` (evaluation return, every run counted), ``grad_norm`` (global gradient
    norm, log y), ``loss`` (total loss, log y), ``hidden_grad_depth`` (gradient at the hidden
    state per depth; needs ``metrics.jsonl``), ``profile`` (performance profile of the final
    return), ``divergence`` (run status). A figure without data is skipped.

    Args:
      results: the folder.
      out_dir: where the files go.
      random_return_value: the task's random-policy episode return (unscaled), for a diverged
        run's return after its divergence; None: from the task registry.
      n_resamples: bootstrap resamples per band.
      seed: seeds every band.

    Returns:
      Figure name -> the written paths.
    """
    curves = run_curves(results.averaged)
    thresholds = results.runs["threshold"].dropna().unique()
    threshold = float(thresholds[0]) if len(thresholds) == 1 else None
    boot = {"n_resamples": n_resamples, "seed": seed}
    figures = {}

    def has(key: str) -> bool:
        return key in curves and curves[key].notna().any()

    if has("eval/return"):
        figures["return"] = return_curves(
            results, curves, threshold=threshold, random_return_value=random_return_value, **boot
        )
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
    if results.averaged["final_return"].notna().any():
        figures["profile"] = performance_profiles(results, **boot)
    figures["divergence"] = divergence_counts(results)
    return {name: save_figure(fig, out_dir, name) for name, fig in figures.items()}
