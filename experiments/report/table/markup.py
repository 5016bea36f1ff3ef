"""Text escaping, and Markdown and HTML table writers (``DataFrame.to_markdown`` needs
``tabulate``, which gradlab does not depend on)."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

__all__ = [
    "html_table",
    "latex_breakable",
    "latex_escape",
    "latex_stack",
    "latex_text",
    "markdown_table",
]

_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    """Escapes LaTeX's special characters: ``a_b -> a\\_b``, ``5% -> 5\\%``."""
    return "".join(_LATEX.get(c, c) for c in str(text))


_UNICODE = {"↑": r"$\uparrow$", "↓": r"$\downarrow$", "≥": r"$\geq$", "α": r"$\alpha$"}
_UNICODE.update({"—": "--", "–": "--", "Δ": r"$\Delta$", "∞": r"$\infty$", "×": r"$\times$"})
_UNICODE.update({"−": "-", "<": "$<$", "±": r"$\pm$"})


def latex_text(text: str) -> str:
    r"""Plain text as LaTeX: special characters escaped (:func:`latex_escape`), then arrows,
    dashes, Greek letters, ``∞``, ``×`` and ``<`` as LaTeX that plain pdflatex typesets:
    ``p<0.05 ↓ -> p$<$0.05 $\downarrow$``."""
    text = latex_escape(text)
    for char, tex in _UNICODE.items():
        text = text.replace(char, tex)
    return text


def latex_breakable(text: str) -> str:
    """Plain text as LaTeX (:func:`latex_text`) that may break after ``_`` and after a ``.``
    before a letter, so a long name such as ``muzero.network.reward_support_size`` never
    overfills a caption line."""
    return re.sub(r"(\\_|\.(?=[A-Za-z]))", r"\1\\allowbreak{}", latex_text(text))


def latex_stack(lines: list[str], align: str, *, tight: bool = False) -> str:
    """One table cell of several lines (LaTeX already): a nested ``tabular`` hanging from the
    row's baseline, aligned ``l`` or ``r``; a single line as it is. Lines are a ``\\footnotesize``
    line apart (9.5pt), ``tight``: 8pt after the first (a ``\\scriptsize`` line's own
    spacing)."""
    if len(lines) == 1:
        return lines[0]
    # {}: a line starting with [ is not a \\[length]
    inner = (r"\\[-1.5pt]{}" if tight else r"\\{}").join(lines)
    gap = r"\rule[-3pt]{0pt}{3pt}"  # a strut: space below the last line, before the next row
    return rf"\begin{{tabular}}[t]{{@{{}}{align}@{{}}}}{inner}{gap}\end{{tabular}}"


def _md_cell(text: str) -> str:
    return str(text).replace("|", r"\|").replace("\n", " ")


def markdown_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, align: Sequence[str] | None = None
) -> str:
    """A GitHub-flavoured Markdown table, columns padded to equal width.

    Args:
      header: ``[C]`` column names.
      rows: ``[R][C]`` cell strings (``|`` is escaped).
      align: ``[C]`` ``left`` or ``right`` per column; default all left.

    Returns:
      The table, lines joined by newlines, no trailing newline.
    """
    header = [_md_cell(h) for h in header]
    rows = [[_md_cell(c) for c in row] for row in rows]
    align = list(align) if align is not None else ["left"] * len(header)
    if any(len(row) != len(header) for row in rows) or len(align) != len(header):
        raise ValueError("every row and the alignment need one entry per header column")
    widths = [max([3, len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        padded = [
            c.rjust(w) if a == "right" else c.ljust(w)
            for c, w, a in zip(cells, widths, align, strict=True)
        ]
        return "| " + " | ".join(padded) + " |"

    rule = [
        "-" * (w - 1) + ":" if a == "right" else "-" * w for w, a in zip(widths, align, strict=True)
    ]
    return "\n".join([line(header), line(rule), *(line(row) for row in rows)])


def html_table(
    header: Sequence[str],
    rows: Sequence[Sequence[tuple[str, str, bool]]],
    *,
    align: Sequence[str],
    caption: str,
) -> str:
    """An HTML table (what Jupyter shows) with its caption as a paragraph below, every text
    escaped.

    Args:
      header: ``[C]`` column names.
      rows: ``[R][C]`` cells, each ``(first, rest, bold)``: the cell reads ``first + rest``, and
        ``first`` goes into ``<b>`` when ``bold`` (as Markdown bolds a cell's estimate alone).
      align: ``[C]`` ``left`` or ``right`` per column.
      caption: the paragraph below the table.
    """
    if any(len(row) != len(header) for row in rows) or len(align) != len(header):
        raise ValueError("every row and the alignment need one entry per header column")

    def cell(tag: str, side: str, first: str, rest: str = "", bold: bool = False) -> str:
        text = f"<b>{html.escape(first)}</b>" if bold else html.escape(first)
        return f'<{tag} style="text-align: {side}">{text}{html.escape(rest)}</{tag}>'

    head = "".join(cell("th", a, h) for h, a in zip(header, align, strict=True))
    body = "".join(
        "<tr>" + "".join(cell("td", a, *c) for c, a in zip(row, align, strict=True)) + "</tr>"
        for row in rows
    )
    return (
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n"
        f"<p>{html.escape(caption)}</p>\n"
    )
