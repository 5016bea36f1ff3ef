"""The figures' look, shared by every figure module: palette, line styles, fonts, size, saving.

Okabe-Ito colour-blind-safe palette (line styles vary beyond eight lines), 9-10 pt fonts, fonts
embedded as TrueType in PDFs. Figures are built without ``pyplot`` (no global figure registry, no
interactive backend): rendering is Agg for PNG and the PDF backend for PDF.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
from matplotlib.figure import Figure

__all__ = ["OKABE_ITO", "SIZE", "STYLE", "line_style", "save_figure"]

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
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "lines.linewidth": 1.5,
    "savefig.dpi": 200,
    "savefig.bbox": "tight",
    "pdf.fonttype": 42,
}
"""matplotlib rc settings every figure is drawn and saved under."""

SIZE = (4.8, 3.2)
"""Inches of one panel: one column of a two-column paper, slightly enlarged."""

_LINESTYLES = ("-", "--", ":", "-.")


def line_style(i: int) -> dict:
    """Colour and line style of the i-th line: the palette in order, then dashed, dotted ..."""
    return {
        "color": OKABE_ITO[i % len(OKABE_ITO)],
        "linestyle": _LINESTYLES[i // len(OKABE_ITO) % 4],
    }


def save_figure(fig: Figure, out_dir: str | Path, name: str) -> list[Path]:
    """Writes ``<out_dir>/<name>.png`` and ``.pdf``; returns the two paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.png", out_dir / f"{name}.pdf"]
    with mpl.rc_context(STYLE):
        for path in paths:
            fig.savefig(path)
    return paths
