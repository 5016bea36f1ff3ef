"""Drawing helpers the figure modules share: a line with its band and identity markers, divergence
marks, panel titles, the figure's variant legend, log axes. Internal to :mod:`experiments.report`.
"""

from __future__ import annotations

import math

import matplotlib as mpl
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from experiments.report.figures.layout import Layout
from experiments.report.figures.style import figure_legend

__all__ = [
    "DARK",
    "GREY",
    "divergence_handle",
    "diverged_steps",
    "log_y",
    "mark_divergences",
    "mark_run_divergences",
    "panel_title",
    "plot_line",
    "variant_legend",
    "with_lines",
]

GREY = "#555555"
DARK = "#262626"  # marks on the data: where a run diverged
_MARKS = 5  # markers per line (identity in grey print), staggered across lines


def diverged_steps(runs: pd.DataFrame) -> pd.Series:
    """Per run, its diverging step (NaN: did not diverge); a run diverged by its status but
    without a recorded step counts as diverged after its last step."""
    steps = pd.to_numeric(runs["diverged_step"], errors="coerce")
    by_status = (runs["status"] == "diverged") & steps.isna()
    fallback = pd.to_numeric(runs["steps"], errors="coerce").fillna(0) + 1
    return steps.where(~by_status, fallback)


def plot_line(ax, x, mean, low, high, style: dict, *, order: int) -> None:
    """The mean line with a few identity markers (staggered by ``order``) and its band."""
    every = max(1, len(x) // _MARKS)
    kw = {k: v for k, v in style.items() if k != "marker"}
    ax.plot(x, mean, marker=style["marker"], markevery=(order * every // 7 % every, every),
            markersize=3, **kw)  # fmt: skip
    if np.isfinite(low).any():
        ax.fill_between(x, low, high, alpha=0.18, color=style["color"], linewidth=0)


def mark_divergences(ax, x, mean, steps: np.ndarray, style: dict) -> None:
    """An ``x`` on the line at each divergence step (the line's value there, interpolated)."""
    steps = steps[np.isfinite(steps)]
    if not len(steps) or not len(x):
        return
    at = np.clip(steps, x[0], x[-1])
    y = np.interp(at, x, mean)
    ax.plot(at, y, linestyle="none", marker="x", markersize=4, markeredgewidth=1.0,
            color=style["color"], zorder=4)  # fmt: skip


def mark_run_divergences(ax, steps: np.ndarray, values: np.ndarray, diverged: np.ndarray) -> None:
    """An ``x`` on each run's line where it diverged (its value there, interpolated): ``values``
    ``[runs, steps]`` as drawn, ``diverged`` each run's diverging step (NaN: did not diverge)."""
    for row, step in zip(values, diverged, strict=True):
        if step == step and len(steps):
            x = float(np.clip(step, steps[0], steps[-1]))
            ax.plot([x], [np.interp(x, steps, row)], linestyle="none", marker="x", markersize=3,
                    markeredgewidth=0.7, color=DARK, zorder=4)  # fmt: skip


def panel_title(ax, label: str, runs: pd.DataFrame) -> None:
    """``label`` over ``n=5 each, 2 diverged`` (runs per line; diverged runs in the panel)."""
    n = runs.groupby("_line").size()
    each = f"n={n.iloc[0]} each" if n.nunique() == 1 else f"n={n.min()}-{n.max()} each"
    detail = f"{each}, {int(diverged_steps(runs).notna().sum())} diverged"
    ax.set_title(f"{label}\n{detail}" if label else detail, loc="left")


def variant_legend(fig: Figure, layout: Layout, extra: list[tuple[Line2D, str]]) -> None:
    handles = [Line2D([], [], **layout.styles[v], markersize=3) for v in layout.values]
    labels = list(layout.values)
    for handle, label in extra:
        handles.append(handle)
        labels.append(label)
    title = None if layout.line_key == "group" else layout.line_key
    figure_legend(fig, handles, labels, title=title)


def divergence_handle() -> tuple[Line2D, str]:
    return Line2D([], [], linestyle="none", marker="x", color=GREY, markersize=4), "run diverged"


def with_lines(runs: pd.DataFrame, layout: Layout) -> pd.DataFrame:
    return runs.assign(_line=runs[layout.line_key].astype(str))


class _PlainLogFormatter(mpl.ticker.LogFormatter):
    """Matplotlib's choice of which log ticks to label, written ``0.6``, ``2``, ``40`` on an axis
    within [0.01, 1000], and every label ``10^k`` on an axis beyond (``1e+05`` is not a paper's
    notation, and one axis does not mix the two)."""

    def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
        low, high = sorted((abs(vmin), abs(vmax)))
        if 1e-2 <= low and high <= 1e3:
            return f"{x:g}"
        exponent = math.log10(abs(x))
        if abs(exponent - round(exponent)) < 1e-9:
            return rf"$10^{{{round(exponent)}}}$"
        mantissa, power = f"{x:.0e}".split("e")
        return rf"${mantissa}\times10^{{{int(power)}}}$"


def log_y(ax) -> None:
    """Log y axis; minor ticks labelled when the axis spans less than a decade."""
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(_PlainLogFormatter(labelOnlyBase=False))
    ax.yaxis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4)))
