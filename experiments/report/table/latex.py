"""The table as LaTeX for a paper: ``table`` floats of pandas Styler tabulars that compile in a
plain ``\\documentclass{article}`` with ``\\usepackage{booktabs}`` and nothing else, each within
the text width and the page (:mod:`~experiments.report.table.latex_layout` decides the breaks).

Each metric is one column whose cell stacks the estimate, its interval and p_adj (a nested
``tabular``), beside the lead columns (the keys that vary, n). Two layouts (:data:`LAYOUTS`):
``compact``, the default, shows of the default endpoints the headline ones
(:func:`latex_metrics`), as many side by side as the text width takes, the lines of a cell 8pt
apart (the main job: one float on one page), and names what it leaves out in the caption and in
a comment line; ``full`` shows every endpoint, each cell also Δ and its interval, in blocks of at
most three. A block too tall for a page is split by stratum (e.g. regime), then by rows;
consecutive blocks share a float while it fits (``\\sloppy``: a long key in the caption breaks a
line loosely rather than overfull). The first float carries the short caption
(:func:`~experiments.report.table.caption.short_caption`) and the label; every further float is
"continued", names its part (metrics, strata) and gets the label with ``:2``, ``:3`` ...
``methods="full"`` adds the full method text
(:func:`~experiments.report.table.caption.table_caption`) as a paragraph after the floats. A key
``name (settings)`` goes on two lines; keys wider than half the text width are stacked into one
``group`` cell, one ``key=value`` a line for the settings the group's runs set, each key by its
last dotted name where that is unique (the caption says so).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from experiments.base.errors import unknown_choice
from experiments.report.table import latex_layout as geometry
from experiments.report.table.caption import short_caption, table_caption
from experiments.report.table.markup import latex_breakable, latex_stack, latex_text
from experiments.report.table.metrics import DEFAULT_METRICS, HEADLINE_METRICS, METRICS

if TYPE_CHECKING:
    from experiments.report.table.summarize import Table

__all__ = ["LAYOUTS", "METHODS", "Cell", "latex_metrics", "latex_table"]

METHODS = ("short", "full")
"""``short``: the short caption only; ``full``: and the method text as a paragraph after it."""
LAYOUTS = ("compact", "full")
"""``compact``: the headline endpoints (:func:`latex_metrics`), each cell the estimate, its CI and
p_adj, as many metric columns side by side as the text width takes (the main job: one float on
one page); ``full``: every endpoint, each cell also Δ and its CI, at most three metric columns a
block (:data:`~experiments.report.table.latex_layout.MAX_METRICS`)."""

Cell = tuple[tuple[str, ...], bool]
"""A cell as plain text: its lines (the first at ``\\footnotesize``, the others smaller, below)
and whether the first is bold."""
_KEY_SHARE = 0.5  # keys wider than this share of the text width are stacked into one cell
_UNSET = "—"  # a group key its runs do not set (experiments.report.runs.results)


def latex_metrics(table: Table, layout: str) -> tuple[str, ...]:
    """The endpoints the ``layout`` shows: in ``compact``, of the default six
    (:data:`~experiments.report.table.metrics.DEFAULT_METRICS`) the headline ones
    (:data:`~experiments.report.table.metrics.HEADLINE_METRICS`) and any with a confirmatory
    contrast or an equivalence margin; endpoints chosen otherwise (``-m``), and ``full``: all."""
    if layout != "compact" or tuple(table.metrics) != DEFAULT_METRICS:
        return tuple(table.metrics)
    keep = {*HEADLINE_METRICS, *(c.metric for c in table.confirmatory), *table.margins}
    return tuple(m for m in table.metrics if m in keep)


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
        texts = [geometry.text_width(h) for h in self.headers[j]]
        for line in self.body:
            lines, bold = line[j]
            texts.append(geometry.text_width(lines[0], "bold" if bold else "footnotesize"))
            size = "footnotesize" if j < self.keys else "scriptsize"
            texts += [geometry.text_width(text, size) for text in lines[1:]]
        return max(texts) + geometry.COLUMN_SEP


def _split_settings(grid: _Grid) -> _Grid:
    """Each key cell ``name (settings)`` (a variant with its parameters) on two lines: the name,
    then ``(settings)``."""

    def split(cell: Cell) -> Cell:
        lines, bold = cell
        text = lines[0]
        if len(lines) > 1 or " (" not in text or not text.endswith(")"):
            return cell
        cut = text.index(" (")
        return (text[:cut], text[cut + 1 :]), bold

    body = [[split(c) if j < grid.keys else c for j, c in enumerate(line)] for line in grid.body]
    return dataclasses.replace(grid, body=body)


def _short_names(keys: Sequence[str]) -> dict[str, str]:
    """Each key by its last dotted part where no other key ends so:
    ``muzero.network.value_support_size -> value_support_size``."""
    last = [k.rsplit(".", 1)[-1] for k in keys]
    return {k: s if last.count(s) == 1 else k for k, s in zip(keys, last, strict=True)}


def _stack_keys(grid: _Grid, keys: Sequence[str]) -> tuple[_Grid, str]:
    """The key columns as one ``group`` column, where they are wider than :data:`_KEY_SHARE` of
    the text width: one ``key=value`` a line for the keys the group's runs set (a key they leave
    at its default, ``—``, is left out), each key by its short name (:func:`_short_names`); a
    lone ``group`` column: its label broken at each ``, ``. Else the grid as it is.

    Returns:
      The grid, and a sentence for the caption saying what the group cells leave out ("" if
      nothing).
    """
    wide = sum(grid.width(j) for j in range(grid.keys)) > _KEY_SHARE * geometry.TEXT_WIDTH
    if not wide or len(keys) == 1:  # one key: stacking it gains nothing
        return grid, ""
    note = ""
    if keys:
        names = _short_names(keys)
        lines = []
        for line in grid.body:
            values = [" ".join(c[0]) for c in line[: grid.keys]]
            set_ = [f"{names[k]}={v}" for k, v in zip(keys, values, strict=True) if v != _UNSET]
            lines.append(tuple(set_) or ("(defaults)",))
        prefixes = sorted({k[: -len(n)] for k, n in names.items() if n != k})
        short = f", named without {', '.join(prefixes)}" if prefixes else ""
        note = f"Group: the settings its runs set{short}; the others at their defaults."
    else:
        lines = [tuple(line[0][0][0].split(", ")) for line in grid.body]
    body = [
        [(text, False), *line[grid.keys :]] for text, line in zip(lines, grid.body, strict=True)
    ]
    headers = [("", "group"), *grid.headers[grid.keys :]]
    lead = grid.lead - grid.keys + 1
    stacked = dataclasses.replace(grid, headers=headers, body=body, keys=1, lead=lead)
    return stacked, note


def _tex_cell(cell: Cell, align: str, *, key: bool, tight: bool) -> str:
    lines, bold = cell
    texts = [latex_text(t) for t in lines]
    if bold:
        texts[0] = rf"\textbf{{{texts[0]}}}"
    if key:  # a stacked key cell's lines are all keys, as large (and as far apart) as the first
        return latex_stack(texts, align)
    texts[1:] = [rf"\scriptsize {t}" for t in texts[1:]]
    return latex_stack(texts, align, tight=tight)


def _tabular(grid: _Grid, block: geometry.Block, *, tight: bool) -> str:
    """One booktabs tabular: the lead columns, the block's metrics (and the tail), its rows;
    ``tight``: the metric cells' lines after the first 8pt apart."""
    columns = list(range(grid.lead)) + [grid.lead + m for m in block.metrics]
    columns += [len(grid.headers) - 1] if block.tail and grid.tail else []
    heads = pd.MultiIndex.from_tuples([tuple(map(latex_text, grid.headers[j])) for j in columns])
    cells = [
        [
            _tex_cell(
                grid.body[r][j], "l" if j < grid.keys else "r", key=j < grid.keys, tight=tight
            )  # fmt: skip
            for j in columns
        ]
        for r in block.rows
    ]
    styler = pd.DataFrame(cells, columns=heads).style.hide(axis="index")
    fmt = "@{}" + "l" * grid.keys + "r" * (len(columns) - grid.keys) + "@{}"
    return styler.to_latex(hrules=True, column_format=fmt, multicol_align="c")


def _part(table: Table, blocks: list[geometry.Block]) -> str:
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
    layout: str = "full",
    left_out: Sequence[str] = (),
) -> str:
    """The table as ``table`` floats, each within a 10pt article's page, and with
    ``methods="full"`` the method text after them; in the ``compact`` layout a first line, a
    LaTeX comment, naming what is not shown and the flag that shows it.

    Args:
      table: from :func:`~experiments.report.table.summarize.summarize`.
      headers: ``[C]`` ``(top, bottom)``: the keys, n if shown, one per metric, the tail.
      body: ``[R][C]`` cells as plain text, in the table's row order.
      tail: the last column is the excluded runs'.
      caption: the first float's caption as plain text (escaped here); default
        :func:`~experiments.report.table.caption.short_caption`.
      label: the first float's label; default ``tab:<ablation>``.
      methods: one of :data:`METHODS`.
      layout: one of :data:`LAYOUTS`, as ``body`` was built: ``compact`` cells hold no Δ (the
        caption says so), and their metric columns go side by side as far as the width takes.
      left_out: the endpoints of the table not in ``table.metrics`` (named in the caption).

    Raises:
      ConfigError: ``methods`` not in :data:`METHODS`, or ``layout`` not in :data:`LAYOUTS`.
    """
    if methods not in METHODS:
        raise unknown_choice("caption", methods, METHODS)
    if layout not in LAYOUTS:
        raise unknown_choice("layout", layout, LAYOUTS)
    compact = layout == "compact"
    n_keys = len(table.shown_keys) or 1
    lead = len(headers) - len(table.metrics) - int(tail)
    grid = _split_settings(_Grid(headers, body, n_keys, lead, tail))
    grid, note = _stack_keys(grid, table.shown_keys)
    text = caption
    if text is None:
        text = short_caption(table, compact=compact, left_out=left_out) + (f" {note}" * bool(note))
    label = label if label is not None else f"tab:{table.ablation or 'runs'}"
    tail_width = grid.width(len(grid.headers) - 1) if tail else 0.0
    lead_width = sum(grid.width(j) for j in range(grid.lead))
    widths = [grid.width(grid.lead + m) for m in range(len(table.metrics))]
    most = len(widths) if compact else geometry.MAX_METRICS
    groups = geometry.metric_groups(lead_width, widths, tail_width, most=most)
    names = ", ".join(METRICS[m].label for m in table.metrics)
    longest = max(table.rows["stratum_label"], key=len)
    part = f" Part 99 of 99: {names}; {longest} (rows 999-999)."  # the longest a part's words get
    lines = [
        [len(grid.body[r][grid.lead + m][0]) for m in range(len(widths))] for r in range(len(body))
    ]
    lead_lines = [max(len(grid.body[r][j][0]) for j in range(grid.lead)) for r in range(len(body))]
    pitch = geometry.TIGHT_LINE if compact else geometry.LINE
    # a key cell's lines stay LINE apart: as many lines of the tight pitch as cover them
    lead_lines = [1 + math.ceil((n - 1) * geometry.LINE / pitch) for n in lead_lines]

    def plan(first: str, later: str) -> list[list[geometry.Block]]:
        return geometry.plan(
            lines,
            list(table.rows["stratum"]),
            groups,
            lead_lines=lead_lines,
            first_caption=geometry.caption_height(first),
            later_caption=geometry.caption_height(later),
            pitch=pitch,
        )

    floats = plan(text, text)  # one float: its caption says no part
    if len(floats) > 1:
        floats = plan(text + part, f"Table 99 continued.{part}")
    out = [_comment(table, left_out)] if compact else []
    for p, blocks in enumerate(floats, start=1):
        where = f"Part {p} of {len(floats)}: {_part(table, blocks)}."
        if p == 1:
            head = latex_breakable(text + (f" {where}" if len(floats) > 1 else ""))
            ref = label
        else:
            head = rf"Table~\ref{{{label}}} continued. " + latex_breakable(where)
            ref = f"{label}:{p}"
        tabulars = "\\par\\medskip\n".join(_tabular(grid, b, tight=compact) for b in blocks)
        out.append(
            "\\begin{table}\n\\centering\n\\sloppy\n"
            f"\\caption{{{head}}}\n\\footnotesize\n\\setlength{{\\tabcolsep}}{{2pt}}\n"
            f"\\label{{{ref}}}\n{tabulars}\\end{{table}}\n"
        )
    if methods == "full":
        method = latex_breakable(table_caption(table, stacked=True))
        out.append(
            f"\\par\\medskip\\noindent{{\\sloppy\\textbf{{Table~\\ref{{{label}}}, method.}} "
            f"{method}\\par}}\n"
        )
    return "".join(out)


def _comment(table: Table, left_out: Sequence[str]) -> str:
    """The compact layout's first line, for the author (a comment: not typeset): what it leaves
    out, and how to get it."""
    missing = ["Delta and its CI"] if table.baseline is not None else []
    missing += ["the TOST interval and p"] if table.margins else []
    missing += [METRICS[m].label for m in left_out]
    if not missing:
        return ""
    return (
        f"% compact layout, not shown: {', '.join(missing)}; every endpoint with Delta and its CI: "
        "gradlab table DIR -f latex --layout full (Table.to_latex(layout='full'))\n"
    )
