"""Small multiples: which key makes the panels, which the lines, and the grid of panels.

A figure compares the values of one key (``variant`` when it varies, else the only varying key) as
lines, in one panel per combination of the other varying keys (``regime=stress``), never every
regime x variant curve in one panel. Keys a sweep holds constant make neither panels nor lines.
Panels share their y axis, so heights compare across panels.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence

import matplotlib as mpl
import pandas as pd
from matplotlib.figure import Figure

from experiments.report.figures.style import (
    COLUMN_WIDTH,
    LEGEND_ROOM,
    PANEL_HEIGHT,
    STYLE,
    in_registry_order,
    value_styles,
)

__all__ = ["Layout", "layout_of", "panel_grid"]

_MAX_COLUMNS = 2


@dataclasses.dataclass(frozen=True)
class Layout:
    """How a figure splits runs.

    Attributes:
      line_key: the key whose values are the lines (``group`` when no key varies).
      panel_keys: the keys whose combinations are the panels (empty: one panel).
      values: the line values, in the order the legend lists them (registry order).
      styles: ``{value: line style}`` (:func:`~experiments.report.figures.style.value_styles`).
    """

    line_key: str
    panel_keys: tuple[str, ...]
    values: tuple[str, ...]
    styles: dict[str, dict]

    def panels(self, runs: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
        """``(title, runs of the panel)`` per panel, in the runs' order; title ``k=v, k=v``."""
        if not self.panel_keys:
            yield "", runs
            return
        for key, panel in runs.groupby(list(self.panel_keys), sort=False):
            key = key if isinstance(key, tuple) else (key,)
            yield ", ".join(f"{k}={v}" for k, v in zip(self.panel_keys, key, strict=True)), panel

    def lines(self, panel: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
        """``(value, runs of the line)`` per line of a panel, in legend order."""
        for value in self.values:
            members = panel[panel[self.line_key].astype(str) == value]
            if len(members):
                yield value, members


def layout_of(runs: pd.DataFrame, group_keys: Sequence[str]) -> Layout:
    """The layout of a figure over ``runs`` (``Results.runs`` or ``.averaged``).

    Args:
      runs: one row per run, with a column per group key and ``group``.
      group_keys: the swept keys except the seed.
    """
    varying = [k for k in group_keys if runs[k].nunique(dropna=False) > 1]
    if "variant" in varying:
        line_key = "variant"
    elif len(varying) == 1:
        line_key = varying[0]
    else:
        line_key = "group"  # several keys vary and none is the variant: one line per group
    panel_keys = tuple(k for k in varying if k != line_key) if line_key != "group" else ()
    seen = [str(v) for v in runs[line_key].unique()]
    return Layout(
        line_key, panel_keys, in_registry_order(line_key, seen), value_styles(line_key, seen)
    )


def panel_grid(n: int, *, height: float = PANEL_HEIGHT, sharey: bool = True) -> tuple[Figure, list]:
    """A figure :data:`~experiments.report.figures.style.COLUMN_WIDTH` wide with ``n`` panels, at
    most two
    per row, sharing x and (by default) y; unused cells hidden.

    Returns:
      ``(figure, the n visible axes)``.
    """
    ncols = min(_MAX_COLUMNS, max(n, 1))
    nrows = math.ceil(max(n, 1) / ncols)
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(COLUMN_WIDTH, height * nrows + LEGEND_ROOM), layout="constrained")
        axes = fig.subplots(nrows, ncols, sharex=True, sharey=sharey, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, list(axes[: max(n, 1)])
