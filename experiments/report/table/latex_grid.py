"""A grid of stacked cells as LaTeX ``table`` floats that fit a 10pt article's page, for the
tables besides ``gradlab table``'s (``gradlab pool``'s): the columns after the keys in blocks
within the text width (each block repeats the keys), the rows in chunks within the page, the
blocks packed into floats (:func:`~experiments.report.table.latex_layout.plan`); the first float
has the caption and the label, every further one says "Table N continued" and has ``label:k``;
the method text, where there is one, is a paragraph after them. Nothing is cut. Needs only
``\\usepackage{booktabs}``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from experiments.report.table import latex_layout as geometry
from experiments.report.table.markup import latex_breakable, latex_stack, latex_text

__all__ = ["GridCell", "grid_floats", "wrap_label"]

GridCell = tuple[tuple[str, ...], bool]
"""A cell as plain text: its lines (the first at ``\\footnotesize``, the others ``\\scriptsize``
below it; a key cell's all at ``\\footnotesize``) and whether the first is bold."""


def wrap_label(label: str, chars: int = 10) -> str:
    """``label`` broken into lines (``\\n``) after ``_`` or a space so that a line holds at most
    ``chars`` characters where the pieces allow: ``space_invaders -> space_\\ninvaders``."""
    pieces, piece = [], ""
    for c in label:
        piece += c
        if c in "_ ":
            pieces.append(piece)
            piece = ""
    pieces.append(piece)
    lines = [""]
    for piece in filter(None, pieces):
        if lines[-1] and len(lines[-1] + piece) > chars:
            lines.append("")
        lines[-1] += piece
    return "\n".join(line.rstrip() for line in lines)


def _width(header: tuple[str, str], cells: Sequence[GridCell], *, key: bool) -> float:
    """An upper estimate of a column's width in pt: its header lines and every cell's lines."""
    texts = [geometry.text_width(line) for part in header for line in part.split("\n")]
    for lines, bold in cells:
        texts.append(geometry.text_width(lines[0], "bold" if bold else "footnotesize"))
        size = "footnotesize" if key else "scriptsize"
        texts += [geometry.text_width(line, size) for line in lines[1:]]
    return max(texts) + geometry.COLUMN_SEP


def _head(text: str) -> str:
    lines = [latex_text(line) for line in text.split("\n")]
    return latex_stack(lines, "c")


def _cell(cell: GridCell, *, key: bool) -> str:
    lines, bold = cell
    texts = [latex_text(line) for line in lines]
    if bold:
        texts[0] = rf"\textbf{{{texts[0]}}}"
    if not key:
        texts[1:] = [rf"\scriptsize {t}" for t in texts[1:]]
    return latex_stack(texts, "l" if key else "r")


def _tabular(
    headers: list[tuple[str, str]], body: list[list[GridCell]], keys: int, block: geometry.Block
) -> str:
    columns = list(range(keys)) + [keys + j for j in block.metrics]
    heads = pd.MultiIndex.from_tuples([tuple(map(_head, headers[j])) for j in columns])
    cells = [[_cell(body[r][j], key=j < keys) for j in columns] for r in block.rows]
    styler = pd.DataFrame(cells, columns=heads).style.hide(axis="index")
    fmt = "@{}" + "l" * keys + "r" * (len(columns) - keys) + "@{}"
    return styler.to_latex(hrules=True, column_format=fmt, multicol_align="c")


def grid_floats(
    headers: list[tuple[str, str]],
    body: list[list[GridCell]],
    *,
    caption: str,
    label: str,
    keys: int = 1,
    method: str | None = None,
) -> str:
    """The grid as ``table`` floats, each within the text width and the page, and the method
    text as a paragraph after them.

    Args:
      headers: ``[C]`` ``(top, bottom)`` plain text; ``\\n`` breaks a line; equal neighbouring
        tops are merged into one heading over their columns.
      body: ``[R][C]`` cells.
      caption: the first float's caption as plain text (escaped here).
      label: the first float's label; a further float's is ``label:k``.
      keys: the first ``keys`` columns are repeated in every block (left-aligned).
      method: plain text, a paragraph after the floats ("Table N, method. ..."); None: none.
    """
    widths = [_width(h, [row[j] for row in body], key=j < keys) for j, h in enumerate(headers)]
    groups = geometry.metric_groups(sum(widths[:keys]), widths[keys:], most=len(widths))
    lines = [[len(row[j][0]) for j in range(keys, len(headers))] for row in body]
    floats = geometry.plan(
        lines,
        [0] * len(body),
        groups,
        lead_lines=[max(len(row[j][0]) for j in range(keys)) for row in body],
        first_caption=geometry.caption_height(caption),
        later_caption=geometry.caption_height("Table 99 continued."),
    )
    out = []
    for p, blocks in enumerate(floats, start=1):
        head = latex_breakable(caption) if p == 1 else rf"Table~\ref{{{label}}} continued."
        tabulars = "\\par\\medskip\n".join(_tabular(headers, body, keys, b) for b in blocks)
        out.append(
            "\\begin{table}\n\\centering\n\\sloppy\n"
            f"\\caption{{{head}}}\n\\footnotesize\n\\setlength{{\\tabcolsep}}{{2pt}}\n"
            f"\\label{{{label if p == 1 else f'{label}:{p}'}}}\n{tabulars}\\end{{table}}\n"
        )
    if method is not None:
        out.append(
            f"\\par\\medskip\\noindent{{\\sloppy\\textbf{{Table~\\ref{{{label}}}, method.}} "
            f"{latex_breakable(method)}\\par}}\n"
        )
    return "".join(out)
