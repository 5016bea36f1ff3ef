"""The figures' look, shared by every figure: palette, line styles, fonts, size, legend, saving.

A compared value keeps one look in every figure: its colour, line style and marker are keyed by its
position in the registry of its key (:data:`experiments.gradients.VARIANTS` for ``variant``,
:data:`~experiments.gradients.PLACEMENTS` for ``variant.placement``), not by the order in which a
folder happens to list it, so ``scale_gradient`` is the same orange in the return curve, the
gradient-norm curve and the performance profile of any study. Colours are Okabe & Ito's
colour-blind-safe palette; line styles and markers differ as well, so the lines stay apart when
printed in grey.

Sizes are a paper's: a figure is :data:`COLUMN_WIDTH` inches wide (one column of a two-column
paper), fonts 7-8 pt, fonts embedded as TrueType in PDFs. Figures are built without ``pyplot`` (no
global figure registry, no interactive backend): rendering is Agg for PNG and the PDF backend for
PDF.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib as mpl
from matplotlib.figure import Figure

__all__ = [
    "COLUMN_WIDTH",
    "OKABE_ITO",
    "LEGEND_ROOM",
    "PANEL_HEIGHT",
    "STYLE",
    "figure_legend",
    "fold_label",
    "in_registry_order",
    "line_style",
    "registry_order",
    "save_figure",
    "value_styles",
]

OKABE_ITO = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#F0E442",  # yellow (last: weak on white)
)
"""Okabe & Ito (2008) colour-blind-safe palette."""

STYLE = {
    "font.size": 7,
    "axes.titlesize": 7.5,
    "axes.labelsize": 7,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "legend.title_fontsize": 7,
    "legend.frameon": False,
    "figure.titlesize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.linewidth": 0.6,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.4,
    "lines.linewidth": 1.1,
    "lines.markersize": 3.5,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "savefig.dpi": 300,
    "pdf.fonttype": 42,
    "figure.constrained_layout.h_pad": 0.03,
    "figure.constrained_layout.w_pad": 0.03,
}
"""matplotlib rc settings every figure is drawn and saved under (fonts >= 7 pt)."""

COLUMN_WIDTH = 3.3
"""Inches: the width of every figure, one column of a two-column paper."""

LEGEND_ROOM = 0.55
"""Inches below the panels that a figure keeps for its legend before it grows."""
PANEL_HEIGHT = 1.55
"""Inches: the height of one row of panels."""

_LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 1)))
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def line_style(i: int) -> dict:
    """Colour, line style and marker of the i-th look: palette, styles and markers cycle together,
    so two looks within ``len(OKABE_ITO)`` differ in all three."""
    return {
        "color": OKABE_ITO[i % len(OKABE_ITO)],
        "linestyle": _LINESTYLES[i % len(_LINESTYLES)],
        "marker": _MARKERS[i % len(_MARKERS)],
    }


def registry_order(key: str | None) -> tuple[str, ...]:
    """The registered names of ``key``'s values, in registration order; ``()`` for a key without a
    registry (its values are then ordered as the caller lists them)."""
    from experiments.gradients import PLACEMENTS, VARIANTS

    registries = {"variant": VARIANTS, "variant.placement": PLACEMENTS}
    return tuple(registries[key]) if key in registries else ()


def in_registry_order(key: str | None, values: Sequence[str]) -> tuple[str, ...]:
    """``values`` that ``key``'s registry holds, in its order, then the others as given (an arm
    with parameters, ``clipnorm (clipnorm=0.6)``, is not a registered name)."""
    registry = registry_order(key)
    return tuple([v for v in registry if v in values] + [v for v in values if v not in registry])


def value_styles(key: str | None, values: Sequence[str]) -> dict[str, dict]:
    """``{value: line_style(i)}``: ``i`` is the value's position in ``key``'s registry; values the
    registry does not hold follow it, in the order given.

    A value that is a registered name with its parameters (the table's arm label ``clipnorm
    (clipnorm=0.6)``) takes its name's look, unless two drawn values share that name: those
    follow the registry like unregistered values, so no two lines look alike. Where two drawn
    values' looks share a colour (positions 8 apart: ``depth_loss_scale``, position 9, and
    ``scale_gradient``, position 1), the one later in the registry takes the first colour that
    no drawn value has, keeping its line style and marker; every other value keeps its registry
    look. With more than 8 values drawn, colours repeat (line style and marker still differ).

    Args:
      key: the compared key (``variant``), or None.
      values: the values a figure draws.
    """
    order = list(registry_order(key))
    unique = list(dict.fromkeys(str(v) for v in values))
    names = [v.split(" (", 1)[0] for v in unique]
    look = {}
    for value, name in zip(unique, names, strict=True):
        if name in order and names.count(name) == 1:
            look[value] = order.index(name)
        else:
            order.append(value)
            look[value] = len(order) - 1
    styles = {value: line_style(look[value]) for value in unique}
    # Two drawn values whose looks fall on one colour (registry positions 8 apart: the palette
    # has 8) would be told apart by line style alone. Every drawn value keeps its own colour but
    # the later ones of such a pair, in registry order: each of those takes the first colour that
    # no drawn value has (its line style and marker stay), while there are colours to spare.
    owned = {look[value] % len(OKABE_ITO) for value in unique}
    spare = [i for i in range(len(OKABE_ITO)) if i not in owned]
    kept: set[int] = set()
    for value in sorted(unique, key=look.__getitem__):
        colour = look[value] % len(OKABE_ITO)
        if colour in kept and spare:
            styles[value] = {**styles[value], "color": OKABE_ITO[spare.pop(0)]}
        kept.add(colour)
    return {str(v): styles[str(v)] for v in values}


def fold_label(label: str, *, width: int = 20) -> str:
    """An arm's parameters on a line of their own when the label is longer than ``width``:
    ``clipnorm (clipnorm=0.6)`` -> ``clipnorm\n(clipnorm=0.6)``."""
    return label.replace(" (", "\n(") if len(label) > width else label


def figure_legend(fig: Figure, handles: list, labels: list[str], *, title: str | None = None):
    """One legend for the whole figure, below the panels (outside every data area)."""
    # an arm's parameters on a line of their own, so two columns fit the figure's width
    labels = [fold_label(label) for label in labels]
    longest = max((len(line) for label in labels for line in label.split("\n")), default=0)
    ncols = 2 if longest > 14 else 3
    ncols = min(ncols, len(labels)) or 1
    # the panels keep their height: the figure grows by what the legend needs beyond the room
    # panel_grid leaves it (LEGEND_ROOM), about 0.14 in a line of text at 7 pt
    lines = [label.count("\n") + 1 for label in labels]
    rows = [max(lines[i : i + ncols]) for i in range(0, len(lines), ncols)]
    needed = 0.14 * sum(rows) + ((0.22 + 0.14 * title.count("\n")) if title else 0.05)
    if needed > LEGEND_ROOM:
        width, height = fig.get_size_inches()
        fig.set_size_inches(width, height + needed - LEGEND_ROOM)
    return fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncols=ncols,
        title=title,
        handlelength=2.6,
        columnspacing=1.2,
    )


def save_figure(fig: Figure, out_dir: str | Path, name: str) -> list[Path]:
    """Writes ``<out_dir>/<name>.png`` and ``.pdf``; returns the two paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.png", out_dir / f"{name}.pdf"]
    with mpl.rc_context(STYLE):
        for path in paths:
            # no date or version stamp: the same figure gives the same bytes
            stamp = {"Software": None} if path.suffix == ".png" else {"CreationDate": None}
            fig.savefig(path, metadata=stamp)
    return paths
