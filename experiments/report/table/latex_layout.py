"""Where a LaTeX table breaks so that nothing is cut: its metric columns into blocks that fit the
text width, each block's rows into chunks that fit a page (whole strata first, e.g. one regime a
chunk; a stratum taller than a page by rows), and the blocks into ``table`` floats, each within
the page's text height.

Sizes are estimated in TeX points from the printed text, for the smallest page gradlab promises
to fit: a plain 10pt ``article`` on letter paper (345pt by 550pt; A4 is taller, a two-column
class's ``table*`` is wider and as tall). Every estimate errs on the large side: a text's width
is the sum of its characters' widths in cmr10 scaled to the size
(``tests/report/test_latex_layout.py``
holds it against pdflatex's own), a line of a cell 9.5pt (8pt after the first in a tight
stack). ``tests/report/test_report_latex.py`` compiles the committed tables with pdflatex where
one is
installed and finds neither "Float too large" nor an overfull box.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

__all__ = [
    "COLUMN_SEP",
    "FLOAT_HEIGHT",
    "TEXT_WIDTH",
    "TIGHT_LINE",
    "Block",
    "block_height",
    "caption_height",
    "metric_groups",
    "plan",
    "row_chunks",
    "text_width",
]

TEXT_WIDTH = 345.0  # pt: \textwidth of a one-column 10pt article
FLOAT_HEIGHT = 530.0  # pt: \textheight of a 10pt letter article (550pt) less a margin of error
LINE = 9.5  # pt: every line of a cell (\footnotesize strut, also under \scriptsize)
TIGHT_LINE = 8.0  # pt: a line after a cell's first in a tight stack (the compact layout)
ROW = 0.5  # pt: a row's strut below its last line
HEAD = 34.0  # pt: the two header lines and the booktabs rules of one tabular
GAP = 8.0  # pt: \par\medskip between two tabulars of one float
MAX_METRICS = 3  # metric columns a full-layout block holds at most (three stacked cells fit 345pt)
_CMR10 = {  # pt: each printable ASCII character's width in LaTeX's default font (cmr10), rounded up
    **dict.fromkeys("il!',.:;[]`|", 2.78), **dict.fromkeys("fj", 3.06),
    **dict.fromkeys("- ", 3.34), "_": 3.6, "I": 3.62, **dict.fromkeys("t()", 3.89), "r": 3.92,
    "s": 3.95, **dict.fromkeys("cez", 4.45), "?": 4.73,
    **dict.fromkeys("0123456789ago$\"*/\\^{}~", 5.01), "J": 5.14,
    **dict.fromkeys("kqvxy", 5.28), **dict.fromkeys("bdhnpuS", 5.56), "Z": 6.12,
    "L": 6.26, "F": 6.53, **dict.fromkeys("EP", 6.81), "B": 7.09, **dict.fromkeys("wCT", 7.23),
    "R": 7.37, **dict.fromkeys("AHNUVXY", 7.51), "D": 7.64, **dict.fromkeys("KOQ&+<=>@", 7.78),
    "G": 7.85, **dict.fromkeys("m#%", 8.34), "M": 9.17, "W": 10.28,
}  # fmt: skip
_OTHER = 10.0  # pt: any other character (Δ, ↑, α, ∞, ...: at most 10pt in cmr10 or its math)
# each size's widest ratio to cmr10 over these characters (cmr8, cmbx8, cmr7), 2% more for kerns
_SCALE = {"normalsize": 1.02, "footnotesize": 0.87, "bold": 1.10, "scriptsize": 0.88}
COLUMN_SEP = 4.0  # pt: \tabcolsep of 2pt on either side
_WRAP = 25.0  # pt: a caption line may end this short of the width (the next word did not fit)


@dataclasses.dataclass(frozen=True)
class Block:
    """One ``tabular``: the lead columns (keys, n), these metric columns and these rows.

    Attributes:
      metrics: positions in the table's metrics.
      rows: positions in the table's rows.
      tail: the block carries the trailing column (the excluded runs).
    """

    metrics: tuple[int, ...]
    rows: tuple[int, ...]
    tail: bool


def text_width(text: str, size: str = "footnotesize") -> float:
    """An upper estimate of ``text``'s printed width in pt at ``size`` (``footnotesize``,
    ``bold`` (footnotesize bold), ``scriptsize`` or ``normalsize``): each character's width in
    cmr10 (:data:`_CMR10`), scaled to the size."""
    return _SCALE[size] * sum(_CMR10.get(c, _OTHER) for c in text)


def caption_height(text: str, *, width: float = TEXT_WIDTH) -> float:
    """An upper estimate of a ``\\caption``'s height in pt: the skip above it and its lines at
    ``\\normalsize`` (12pt apart), one line more than the characters fill at :data:`_WRAP` short
    of the width (word wrap)."""
    lines = math.ceil(text_width("Table 99: " + text, "normalsize") / (width - _WRAP)) + 1
    return 17.0 + 12.0 * (lines - 1)


def metric_groups(
    lead: float,
    widths: Sequence[float],
    tail: float = 0.0,
    *,
    width: float = TEXT_WIDTH,
    most: int = MAX_METRICS,
) -> list[tuple[int, ...]]:
    """The metrics in blocks side by side with the lead columns: in order, at most ``most`` a
    block, fewer where their columns would pass ``width``.

    Args:
      lead: the lead columns' width in pt (keys, n).
      widths: ``[M]`` each metric column's width in pt.
      tail: the trailing column's width (excluded runs), carried by the last block.
      width: the text width in pt.
      most: metric columns a block holds at most (the compact layout: as many as fit).

    Returns:
      Tuples of metric positions, each non-empty; one metric a block where even one is wider
      than the room left (the table cannot be narrower than its lead and one metric).
    """
    groups: list[list[int]] = []
    used = lead
    for i, w in enumerate(widths):
        extra = tail if i == len(widths) - 1 else 0.0
        if groups and len(groups[-1]) < most and used + w + extra <= width:
            groups[-1].append(i)
            used += w
        else:
            groups.append([i])
            used = lead + w
    return [tuple(g) for g in groups]


def block_height(lines: Sequence[int], *, pitch: float = LINE) -> float:
    """A tabular's height in pt: its header and rules, and ``lines[r]`` lines for each row, the
    first :data:`LINE` high, each further one ``pitch`` (:data:`TIGHT_LINE` in a tight stack)."""
    return HEAD + sum(LINE + pitch * (n - 1) + ROW for n in lines)


def row_chunks(
    lines: Sequence[int], strata: Sequence[int], *, room: float, pitch: float = LINE
) -> list[tuple[int, ...]]:
    """The rows in chunks whose tabular fits ``room`` pt: all in one if they fit; else whole
    strata, consecutive ones together while they fit; a stratum that alone does not fit, by rows.

    Args:
      lines: ``[R]`` lines of each row (the most any of its cells stacks).
      strata: ``[R]`` each row's stratum; rows of a stratum are consecutive.
      room: the height a tabular may take.
      pitch: a cell's line after its first (:func:`block_height`).

    Returns:
      Tuples of row positions, in order, together every row once.
    """
    rows = list(range(len(lines)))
    if block_height(lines, pitch=pitch) <= room:
        return [tuple(rows)]
    pieces: list[list[int]] = []  # whole strata, or a stratum's rows where it alone is too tall
    for stratum in dict.fromkeys(strata):
        members = [r for r in rows if strata[r] == stratum]
        if block_height([lines[r] for r in members], pitch=pitch) <= room:
            pieces.append(members)
            continue
        piece: list[int] = []
        for r in members:
            if piece and block_height([lines[i] for i in [*piece, r]], pitch=pitch) > room:
                pieces.append(piece)
                piece = []
            piece.append(r)
        pieces.append(piece)
    chunks: list[list[int]] = []
    for piece in pieces:
        joined = [*chunks[-1], *piece] if chunks else piece
        if chunks and block_height([lines[r] for r in joined], pitch=pitch) <= room:
            chunks[-1] = joined
        else:
            chunks.append(list(piece))
    return [tuple(c) for c in chunks]


def plan(
    lines: Sequence[Sequence[int]],
    strata: Sequence[int],
    groups: Sequence[tuple[int, ...]],
    *,
    lead_lines: Sequence[int] | None = None,
    first_caption: float,
    later_caption: float,
    height: float = FLOAT_HEIGHT,
    pitch: float = LINE,
) -> list[list[Block]]:
    """The floats: each metric group's rows in chunks (:func:`row_chunks`), then the blocks in
    that order (group by group), consecutive ones in one float while it stays within ``height``.

    Args:
      lines: ``[R][M]`` lines of each row's cell of each metric.
      strata: ``[R]`` each row's stratum.
      groups: the metric groups (:func:`metric_groups`); the last carries the tail column.
      lead_lines: ``[R]`` lines of each row's lead cells (keys stacked in one cell); default 1.
      first_caption: the first float's caption height in pt.
      later_caption: a continued float's caption height in pt.
      height: the height a float may take in pt.
      pitch: a cell's line after its first (:func:`block_height`).

    Returns:
      Floats, each a list of :class:`Block`; every (row, metric) cell in exactly one block.
    """
    lead = list(lead_lines) if lead_lines is not None else [1] * len(lines)
    room = height - max(first_caption, later_caption)
    blocks = []
    for g, group in enumerate(groups):
        tall = [max([lead[r], *(lines[r][m] for m in group)]) for r in range(len(lines))]
        for chunk in row_chunks(tall, strata, room=room, pitch=pitch):
            size = block_height([tall[r] for r in chunk], pitch=pitch)
            blocks.append((Block(tuple(group), chunk, tail=g == len(groups) - 1), size))
    floats: list[list[Block]] = []
    used = 0.0
    for block, size in blocks:
        if floats and used + GAP + size <= height:
            floats[-1].append(block)
            used += GAP + size
        else:
            used = (later_caption if floats else first_caption) + size
            floats.append([block])
    return floats
