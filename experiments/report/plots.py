"""Publication figures of one results folder: learning curves, gradient norms, per-depth gradients,
divergence counts, and (from :mod:`experiments.report.profile`) performance profiles. PNG and PDF.

Every function returns a :class:`matplotlib.figure.Figure` built without ``pyplot`` (no global
figure registry, no interactive backend), so tests can inspect it. Style
(:mod:`experiments.report.style`): the Okabe-Ito colour-blind-safe palette, 9-10 pt fonts,
labelled axes with units, a legend, fonts embedded as TrueType in PDFs.

Curves are aggregated over the averaged runs (completed or diverged) of each group: per run, steps
are averaged into at most ``n_bins`` bins; per bin, the mean over seeds is drawn with a 95%
Student-t confidence band (mean ± t * sem; no band with one seed). Log-scale quantities (gradient
norms) are aggregated in log space: the line is the geometric mean.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy import stats

from experiments.report.profile import performance_profiles
from experiments.report.results import AVERAGED, Results, load_curves
from experiments.report.style import OKABE_ITO, SIZE, STYLE, line_style, save_figure
from experiments.store import STATUSES

__all__ = [
    "OKABE_ITO",
    "divergence_counts",
    "hidden_grad_by_depth",
    "learning_curve",
    "performance_profiles",
    "plot_all",
    "save_figure",
]

_STATUS_COLOURS = {
    "completed": "#009E73",
    "diverged": "#D55E00",
    "failed": "#777777",
    "timeout": "#E69F00",
    "running": "#56B4E9",
}
_CONFIDENCE = 0.95


def _mean_band(values: np.ndarray) -> tuple[float, float, float]:
    """``(mean, low, high)`` of ``[N]`` values: a 95% Student-t interval; NaN band if N < 2."""
    n = len(values)
    mean = float(np.mean(values)) if n else float("nan")
    if n < 2:
        return mean, float("nan"), float("nan")
    half = stats.t.ppf(0.5 + _CONFIDENCE / 2, n - 1) * np.std(values, ddof=1) / np.sqrt(n)
    return mean, mean - half, mean + half


def _binned(curves: pd.DataFrame, key: str, *, n_bins: int) -> pd.DataFrame:
    """Per (group, job, x): the run's mean of ``key`` in each step bin (x = the bin's centre).

    Steps are used as they are when there are at most ``n_bins`` distinct ones (evaluations).
    """
    data = curves[["group", "job", "step", key]].dropna()
    data = data[np.isfinite(data[key])]
    steps = data["step"].to_numpy(dtype=float)
    if data["step"].nunique() <= n_bins:
        data = data.assign(x=steps)
    else:
        low, high = steps.min(), steps.max()
        width = (high - low) / n_bins
        index = np.minimum(((steps - low) // width).astype(int), n_bins - 1)
        data = data.assign(x=low + (index + 0.5) * width)
    return data.groupby(["group", "job", "x"], sort=False)[key].mean().reset_index()


class _PlainLogFormatter(mpl.ticker.LogFormatter):
    """Matplotlib's choice of which log ticks to label, written ``0.6``, ``2``, ``40``."""

    def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
        return f"{x:g}"


def _log_y(ax) -> None:
    """Log y axis; minor ticks labelled when the axis spans less than a decade."""
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(_PlainLogFormatter(labelOnlyBase=False))
    ax.yaxis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4)))


def _legend(ax, results: Results) -> None:
    if ax.get_legend_handles_labels()[0]:
        title = ", ".join(results.group_keys) or None
        ax.legend(title=title, loc="best")


def learning_curve(
    results: Results,
    curves: pd.DataFrame,
    key: str,
    *,
    ylabel: str,
    log: bool = False,
    threshold: float | None = None,
    n_bins: int = 100,
) -> Figure:
    """One line per group: the mean of ``key`` over seeds against the step, with a 95% band.

    Args:
      results: the folder (for group order and legend title).
      curves: from :func:`~experiments.report.results.load_curves`, with column ``key``.
      key: the per-step metric, e.g. ``eval/return``.
      ylabel: the y axis label, with units.
      log: log y axis, aggregated as a geometric mean.
      threshold: a dashed horizontal line (the task's success return), if given.
      n_bins: at most this many points per run.

    Returns:
      The figure; ``ax.get_lines()`` holds one line per group with data (plus the threshold line).
    """
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=SIZE, layout="constrained")
        ax = fig.add_subplot()
        binned = _binned(curves, key, n_bins=n_bins) if key in curves else pd.DataFrame()
        for i, group in enumerate(results.runs["group"].unique()):
            data = binned[binned["group"] == group] if len(binned) else binned
            if data.empty:
                continue
            points = []
            for x, at_x in data.groupby("x"):
                v = at_x[key].to_numpy(dtype=float)
                v = np.log10(v[v > 0]) if log else v
                points.append((x, *_mean_band(v)))
            x, mean, low, high = np.asarray(points).T
            if log:
                mean, low, high = 10**mean, 10**low, 10**high
            n = data["job"].nunique()
            ax.plot(x, mean, label=f"{group} (n={n})", **line_style(i))
            ax.fill_between(x, low, high, alpha=0.2, color=line_style(i)["color"], linewidth=0)
        if threshold is not None:
            ax.axhline(threshold, color="#555555", linestyle="--", linewidth=1, label="threshold")
        if log:
            _log_y(ax)
        ax.set_xlabel("training step")
        ax.set_ylabel(ylabel)
        band = "geometric mean" if log else "mean"
        ax.set_title(f"{band} over seeds, 95% CI band", loc="left")
        _legend(ax, results)
    return fig


def hidden_grad_by_depth(results: Results, curves: pd.DataFrame) -> Figure:
    """Gradient norm at the hidden state against unroll depth k, one line per group.

    Per run: the median over steps of ``grad/hidden_depth_{k}``; per group: the geometric mean over
    seeds with a 95% band; log y axis.

    Returns:
      The figure; one line per group with data.
    """
    depth_keys = sorted(
        (c for c in curves.columns if c.startswith("grad/hidden_depth_")),
        key=lambda c: int(c.rsplit("_", 1)[1]),
    )
    depths = np.array([int(c.rsplit("_", 1)[1]) for c in depth_keys])
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=SIZE, layout="constrained")
        ax = fig.add_subplot()
        for i, group in enumerate(results.runs["group"].unique()):
            data = curves[curves["group"] == group]
            if data.empty or not depth_keys:
                continue
            per_run = data.groupby("job")[depth_keys].median()  # [runs, depths]
            bands = [_mean_band(np.log10(v[np.isfinite(v) & (v > 0)])) for v in per_run.T.values]
            mean, low, high = (10 ** np.asarray(bands)).T
            ax.plot(depths, mean, marker="o", label=f"{group} (n={len(per_run)})", **line_style(i))
            ax.fill_between(depths, low, high, alpha=0.2, color=line_style(i)["color"], linewidth=0)
        _log_y(ax)
        if len(depths):
            ax.set_xticks(depths)
        ax.set_xlabel("unroll depth k (dynamics steps)")
        ax.set_ylabel(r"$\|\partial L / \partial h_k\|_2$ (median over steps)")
        ax.set_title("gradient at the hidden state; geometric mean over seeds, 95% CI", loc="left")
        _legend(ax, results)
    return fig


def divergence_counts(results: Results) -> Figure:
    """Horizontal stacked bars: runs per status for each group, annotated ``k/n diverged``.

    Returns:
      The figure; one bar container per status present.
    """
    runs = results.runs
    groups = list(runs["group"].unique())
    counts = runs.groupby(["group", "status"]).size().unstack(fill_value=0)
    counts = counts.reindex(
        index=groups, columns=[s for s in STATUSES if s in counts], fill_value=0
    )
    with mpl.rc_context(STYLE):
        height = max(1.8, 0.45 * len(groups) + 1.0)
        fig = Figure(figsize=(SIZE[0], height), layout="constrained")
        ax = fig.add_subplot()
        y = np.arange(len(groups))
        left = np.zeros(len(groups))
        for status in counts.columns:
            width = counts[status].to_numpy()
            ax.barh(y, width, left=left, color=_STATUS_COLOURS[status], label=status, height=0.6)
            left += width
        for yi, group in zip(y, groups, strict=True):
            finished = counts.loc[group, [s for s in AVERAGED if s in counts]]
            k = int(counts.loc[group].get("diverged", 0))
            ax.text(left[yi] + 0.1, yi, f"{k}/{int(finished.sum())} diverged", va="center")
        ax.set_yticks(y, groups)
        ax.invert_yaxis()
        ax.set_xlim(0, left.max() * 1.45 + 0.5)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel("runs (seeds)")
        ax.set_title("run status per group", loc="left")
        fig.legend(loc="outside lower center", ncols=len(counts.columns))
    return fig


def plot_all(results: Results, out_dir: str | Path) -> dict[str, list[Path]]:
    """Every figure of the folder, as PNG and PDF.

    Figures: ``return`` (evaluation return), ``loss`` (total loss), ``grad_norm`` (global gradient
    norm, log y), ``hidden_grad_depth`` (gradient at the hidden state per depth), ``profile``
    (performance profile of the final return), ``divergence``. A figure without data (e.g. no
    evaluation ran) is skipped.

    Returns:
      Figure name -> the written paths.
    """
    curves = load_curves(results)
    thresholds = results.runs["threshold"].dropna().unique()
    threshold = float(thresholds[0]) if len(thresholds) == 1 else None
    figures = {}

    def has(key: str) -> bool:
        return key in curves and curves[key].notna().any()

    if has("eval/return"):
        figures["return"] = learning_curve(
            results,
            curves,
            "eval/return",
            ylabel="evaluation return (per episode)",
            threshold=threshold,
        )
    if has("loss/total"):
        figures["loss"] = learning_curve(
            results, curves, "loss/total", ylabel="total loss (mean over batch)"
        )
    if has("grad/global_norm"):
        figures["grad_norm"] = learning_curve(
            results, curves, "grad/global_norm", ylabel="global gradient norm (L2)", log=True
        )
    if any(c.startswith("grad/hidden_depth_") for c in curves.columns):
        figures["hidden_grad_depth"] = hidden_grad_by_depth(results, curves)
    if results.averaged["final_return"].notna().any():
        figures["profile"] = performance_profiles(results)
    figures["divergence"] = divergence_counts(results)
    return {name: save_figure(fig, out_dir, name) for name, fig in figures.items()}
