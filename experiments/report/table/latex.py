"""The table as LaTeX for a paper: ``table`` floats of pandas Styler tabulars that compile in a
plain ``\\documentclass{article}`` with ``\\usepackage{booktabs}`` and nothing else, each within
the text width and the page (:mod:`~experiments.report.table.latex_layout` decides the breaks).

Each metric is one column whose cell stacks the estimate, its interval, Δ, its interval and
p_adj (a nested ``tabular``), beside the lead columns (the keys that vary, n). Metrics go into
blocks of at most three side by side, fewer where the text width needs it; a block too tall for a
page is split by stratum (e.g. regime), then by rows; consecutive blocks share a float while it
fits (``\\sloppy``: a long key in the caption breaks a line loosely rather than overfull). The
first float carries the short caption
(:func:`~experiments.report.table.caption.short_caption`) and the label; every further float is
"continued", names its part (metrics, strata) and gets the label with ``:2``, ``:3`` ...
``methods="full"`` adds the full method text
(:func:`~experiments.report.table.caption.table_caption`) as a paragraph after the floats. Keys
wider than half the text width are stacked into one ``group`` cell, one ``key=value`` a line.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from experiments.base.errors import unknown_choice
from experiments.report.table import latex_layout as layout
from experiments.report.table.caption import short_caption, table_caption
from experiments.report.table.markup import latex_stack, latex_text
from experiments.report.table.metrics import METRICS

if TYPE_CHECKING:
    from experiments.report.table.summarize import Table

__all__ = ["METHODS", "Cell", "latex_table"]

METHODS = ("short", "full")
"""``short``: the short caption only; ``full``: and the method text as a paragraph after it."""

Cell = tuple[tuple[str, ...], bool]
"""A cell as plain text: its lines (the first at ``\\footnotesize``, the others smaller, below)
and whether the first is bold."""
_KEY_SHARE = 0.5  # keys wider than this share of the text width are stacked into one cell


def _width(header: tuple[str, str], cells: Sequence[Cell]) -> float:
    """An upper estimate of a column's width in pt: its header lines and every cell's lines."""
    texts = [layout.text_width(h) for h in header]
    for lines, _ in cells:
        texts.append(layout.text_width(lines[0]))
        texts += [layout.text_width(line, "scriptsize") for line in lines[1:]]
    return max(texts) + layout._COLUMN_SEP


@dataclasses.dataclass(frozen=True)
class _Grid:
    """The stacked table: ``headers[C]`` ``(top, bottom)``, ``body[R][C]`` cells, the first
    ``keys`` columns the keys (left-aligned), then ``lead - keys`` more lead columns (n), one
    column per metric, and the tail column (excluded runs) when ``tail``."""

    headers: list[tuple[str, str]]
    body: list[list[Cell]]
    keys: int
    lead: int
    tail: bool

    def width(self, j: int) -> float:
        """An upper estimate of column ``j``'s width in pt: its header and every cell's lines."""
        texts = [layout.text_width(h) for h in self.headers[j]]
        for line in self.body:
            lines = line[j][0]
            texts.append(layout.text_width(lines[0]))
            size = "footnotesize" if j < self.keys else "scriptsize"
            texts += [layout.text_width(text, size) for text in lines[1:]]
        return max(texts) + layout.COLUMN_SEP


def _stack_keys(grid: _Grid, keys: Sequence[str]) -> _Grid:
    """The key columns as one ``group`` column, one ``key=value`` a line (a lone ``group``
    column: its label broken at each ``, ``), where they are wider than :data:`_KEY_SHARE` of the
    text width; else the grid as it is."""
    wide = sum(grid.width(j) for j in range(grid.keys)) > _KEY_SHARE * layout.TEXT_WIDTH
    if not wide or len(keys) == 1:  # one key: stacking it gains nothing
        return grid
    if keys:
        lines = [
            tuple(f"{k}={c[0][0]}" for k, c in zip(keys, line[: grid.keys], strict=True))
            for line in grid.body
        ]
    else:
        lines = [tuple(line[0][0][0].split(", ")) for line in grid.body]
    body = [
        [(text, False), *line[grid.keys :]] for text, line in zip(lines, grid.body, strict=True)
    ]
    headers = [("", "group"), *grid.headers[grid.keys :]]
    lead = grid.lead - grid.keys + 1
    return dataclasses.replace(grid, headers=headers, body=body, keys=1, lead=lead)


def _tex_cell(cell: Cell, align: str, *, key: bool) -> str:
    lines, bold = cell
    texts = [latex_text(t) for t in lines]
    if bold:
        texts[0] = rf"\textbf{{{texts[0]}}}"
    if not key:  # a stacked key cell's lines are all keys, as large as the first
        texts[1:] = [rf"\scriptsize {t}" for t in texts[1:]]
    return latex_stack(texts, align)


def _breakable(text: str) -> str:
    """Plain text as LaTeX that may break after ``_`` and after a ``.`` before a letter, so a
    long key such as ``muzero.network.reward_support_size`` never overfills a caption line."""
    return re.sub(r"(\\_|\.(?=[A-Za-z]))", r"\1\\allowbreak{}", latex_text(text))


def _tabular(grid: _Grid, block: layout.Block) -> str:
    """One booktabs tabular: the lead columns, the block's metrics (and the tail), its rows."""
    columns = list(range(grid.lead)) + [grid.lead + m for m in block.metrics]
    columns += [len(grid.headers) - 1] if block.tail and grid.tail else []
    heads = pd.MultiIndex.from_tuples([tuple(map(latex_text, grid.headers[j])) for j in columns])
    cells = [
        [
            _tex_cell(grid.body[r][j], "l" if j < grid.keys else "r", key=j < grid.keys)
            for j in columns
        ]
        for r in block.rows
    ]
    styler = pd.DataFrame(cells, columns=heads).style.hide(axis="index")
    fmt = "@{}" + "l" * grid.keys + "r" * (len(columns) - grid.keys) + "@{}"
    return styler.to_latex(hrules=True, column_format=fmt, multicol_align="c")


def _part(table: Table, blocks: list[layout.Block]) -> str:
    """What a float of a split table holds: its metrics, and its strata where it lacks rows
    (``rows a-b`` where it holds part of one)."""
    metrics = dict.fromkeys(table.metrics[m] for b in blocks for m in b.metrics)
    text = ", ".join(METRICS[m].label for m in metrics)
    rows = sorted({r for b in blocks for r in b.rows})
    if len(rows) == len(table.rows):
        return text
    labels = table.rows["stratum_label"]
    keys = ", ".join(table.strata_keys)
    strata = []
    for label in dict.fromkeys(labels.iloc[rows]):
        members = [i for i in range(len(labels)) if labels.iloc[i] == label]
        held = [i for i in members if i in rows]
        whole = len(held) == len(members)
        named = f"{keys}={label}" if len(table.strata_keys) == 1 else f"{keys} {label}"
        strata.append(named if whole else f"{named} (rows {held[0] + 1}-{held[-1] + 1})")
    return f"{text}; {', '.join(strata)}"


def latex_table(
    table: Table,
    headers: list[tuple[str, str]],
    body: list[list[Cell]],
    *,
    tail: bool,
    caption: str | None = None,
    label: str | None = None,
    methods: str = "short",
) -> str:
    """The table as ``table`` floats, each within a 10pt article's page, and with
    ``methods="full"`` the method text after them.

    Args:
      table: from :func:`~experiments.report.table.summarize.summarize`.
      headers: ``[C]`` ``(top, bottom)``: the keys, n if shown, one per metric, the tail.
      body: ``[R][C]`` cells as plain text, in the table's row order.
      tail: the last column is the excluded runs'.
      caption: the first float's caption as plain text (escaped here); default
        :func:`~experiments.report.table.caption.short_caption`.
      label: the first float's label; default ``tab:<ablation>``.
      methods: one of :data:`METHODS`.

    Raises:
      ConfigError: ``methods`` not in :data:`METHODS`.
    """
    if methods not in METHODS:
        raise unknown_choice("caption", methods, METHODS)
    n_keys = len(table.shown_keys) or 1
    lead = len(headers) - len(table.metrics) - int(tail)
    grid = _stack_keys(_Grid(headers, body, n_keys, lead, tail), table.shown_keys)
    text = caption if caption is not None else short_caption(table)
    label = label if label is not None else f"tab:{table.ablation or 'runs'}"
    tail_width = grid.width(len(grid.headers) - 1) if tail else 0.0
    lead_width = sum(grid.width(j) for j in range(grid.lead))
    widths = [grid.width(grid.lead + m) for m in range(len(table.metrics))]
    groups = layout.metric_groups(lead_width, widths, tail_width)
    names = ", ".join(METRICS[m].label for m in table.metrics)
    longest = max(table.rows["stratum_label"], key=len)
    part = f"Part 99 of 99: {names}; {longest} (rows 999-999)."  # the longest a part's words get
    lines = [
        [len(grid.body[r][grid.lead + m][0]) for m in range(len(widths))] for r in range(len(body))
    ]
    floats = layout.plan(
        lines,
        list(table.rows["stratum"]),
        groups,
        lead_lines=[
            max(len(grid.body[r][j][0]) for j in range(grid.lead)) for r in range(len(body))
        ],
        first_caption=layout.caption_height(f"{text} {part}"),
        later_caption=layout.caption_height(f"Table 99 continued. {part}"),
    )
    out = []
    for p, blocks in enumerate(floats, start=1):
        where = f"Part {p} of {len(floats)}: {_part(table, blocks)}."
        if p == 1:
            head = _breakable(text + (f" {where}" if len(floats) > 1 else ""))
            ref = label
        else:
            head = rf"Table~\ref{{{label}}} continued. " + _breakable(where)
            ref = f"{label}:{p}"
        tabulars = "\\par\\medskip\n".join(_tabular(grid, b) for b in blocks)
        out.append(
            "\\begin{table}\n\\centering\n\\sloppy\n"
            f"\\caption{{{head}}}\n\\footnotesize\n\\setlength{{\\tabcolsep}}{{2pt}}\n"
            f"\\label{{{ref}}}\n{tabulars}\\end{{table}}\n"
        )
    if methods == "full":
        method = _breakable(table_caption(table, stacked=True))
        out.append(
            f"\\par\\medskip\\noindent{{\\sloppy\\textbf{{Table~\\ref{{{label}}}, method.}} "
            f"{method}\\par}}\n"
        )
    return "".join(out)
