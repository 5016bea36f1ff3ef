"""The final-return figure: one dot per run, per arm, so a bimodal outcome shows as two clusters.

Per panel (regime), one row per arm (registry order, first on top); each run is a dot at its
**intention-to-treat** final return (the mean evaluation return over the final window; a run that
diverged counts as its task's random-policy return times its reward scale, drawn as an ``x``, and
the dotted line marks that return), spread vertically within its row by a seeded jitter so that
equal returns do not hide each other. No mean or band is drawn: where runs either learn or
diverge, a mean matches no run.
"""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from experiments.report.figures.drawing import DARK
from experiments.report.figures.layout import layout_of, panel_grid
from experiments.report.figures.profile import itt_final_returns
from experiments.report.figures.style import STYLE, figure_legend, fold_label
from experiments.report.runs.results import Results

__all__ = ["final_returns"]

_ROW = 0.3  # inches per arm
_JITTER = 0.36  # half the vertical spread of a row's dots, in rows
_GREY = "#555555"


def final_returns(
    results: Results,
    *,
    random_return_value: float | None = None,
    threshold: float | None = None,
    seed: int = 0,
) -> Figure:
    """One panel per regime; per arm, a row of dots, one per run, at its final return.

    Args:
      results: the folder (its completed and diverged runs).
      random_return_value: the random-policy return (unscaled); None: the task registry's.
      threshold: a dashed vertical line (the task's success return), if given.
      seed: seeds the vertical jitter (same folder, same figure).

    Returns:
      The figure; per panel, per arm up to two scatter collections, labelled ``arm`` (runs that
      did not diverge, ``get_offsets()[:, 0]``: their final returns) and ``arm: diverged`` (the
      diverged runs, at the random-policy return); the y tick labels are the arms.
    """
    runs = results.averaged
    layout = layout_of(runs, results.group_keys)
    values, imputed = itt_final_returns(runs, random_return_value=random_return_value)
    runs = runs.assign(_itt=values, _imputed=imputed)
    panels = list(layout.panels(runs))
    n_values = len(layout.values)
    rng = np.random.default_rng(seed)
    ends = [values.min(), values.max()] + ([threshold] if threshold is not None else [])
    low, high = min(ends), max(ends)
    pad = 0.05 * (high - low) if high > low else 0.5
    span = (low - pad, high + pad)  # every run, and the threshold, inside the panel
    with mpl.rc_context(STYLE):
        fig, axes = panel_grid(len(panels), height=_ROW * n_values + 0.5)
        for ax, (label, panel) in zip(axes, panels, strict=False):
            for row, value in enumerate(layout.values):
                members = panel[panel[layout.line_key].astype(str) == value]
                colour = layout.styles[value]["color"]
                for diverged in (False, True):
                    part = members[members["_imputed"] == diverged]
                    if not len(part):
                        continue
                    y = row + rng.uniform(-_JITTER, _JITTER, len(part))
                    if diverged:
                        style = {"marker": "x", "color": DARK, "linewidths": 0.6}
                    else:
                        style = {"marker": "o", "color": colour, "alpha": 0.6, "linewidths": 0}
                    name = f"{value}: diverged" if diverged else value
                    x = part["_itt"].to_numpy(float)
                    ax.scatter(x, y, s=6, zorder=3, label=name, **style)
            for level in sorted(set(panel.loc[panel["_imputed"], "_itt"].tolist())):
                ax.axvline(level, color=_GREY, linestyle=":", linewidth=0.8)
            if threshold is not None:
                ax.axvline(threshold, color=_GREY, linestyle="--", linewidth=0.7)
            n = panel.groupby(panel[layout.line_key].astype(str)).size()
            ax.set_yticks(np.arange(n_values), [fold_label(v) for v in layout.values])
            ax.set_ylim(n_values - 0.5, -0.5)  # first arm on top
            ax.set_xlim(*span)
            ax.grid(axis="y", visible=False)
            ax.set_xlabel("final return (every run)")
            each = f"n={n.iloc[0]} each" if n.nunique() == 1 else f"n={n.min()}-{n.max()} each"
            ax.set_title(f"{label}\n{each}" if label else each, loc="left")
        handles = [Line2D([], [], linestyle="none", marker="o", color=_GREY, markersize=3)]
        labels = ["one run (colour: arm)"]
        if imputed.any():
            handles += [Line2D([], [], linestyle="none", marker="x", color=DARK, markersize=4),
                        Line2D([], [], color=_GREY, linestyle=":", linewidth=0.8)]  # fmt: skip
            labels += ["run diverged", "random policy (diverged runs)"]
        if threshold is not None:
            handles.append(Line2D([], [], color=_GREY, linestyle="--", linewidth=0.7))
            labels.append("threshold")
        figure_legend(fig, handles, labels)
    return fig
