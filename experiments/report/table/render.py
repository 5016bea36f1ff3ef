"""The table of :func:`~experiments.report.table.summarize.summarize` as Markdown, LaTeX, CSV,
JSON or HTML (the Markdown table's cells, what Jupyter shows).

Markdown and LaTeX show, per group: the keys that vary (keys every run shares go into the caption),
``n`` (runs of the design, when groups differ), and per metric three things: the estimate with its
interval (a rate as ``k/n [CI]``, steps to threshold as the cumulative incidence of reaching the
threshold by the end ``[CI] (k/n)``, another figure as the statistic ``[CI]``), the contrast with
the stratum's baseline (``Δ [CI]``) and its Holm-adjusted p (``p_adj``, ``*`` when confirmatory);
then the excluded runs when there are any. An estimate is bold exactly when its printed ``p_adj``
is below alpha (:func:`format_p` prints as many digits as that comparison needs). The caption
(:func:`~experiments.report.table.caption.table_caption`) names the runs, the rules, the contrasts,
the tests, the correction and its m.

Markdown: one column per item, caption below; stable (the same folder gives the same bytes). LaTeX
(:mod:`~experiments.report.table.latex`): ``table`` floats that compile in a plain
``\\documentclass{article}`` with ``\\usepackage{booktabs}`` and nothing else, each metric one
column whose cell stacks the estimate, its interval and p_adj (``layout="full"``: and Δ with its
interval; the default ``compact`` shows the headline endpoints and names the rest), a short
caption, split by metric, stratum or rows wherever the text width or a page needs it; the full
caption with ``methods="full"``. CSV and JSON carry every number (``k``, ``n``, ``ci_low``,
``ci_high``, ``delta``, ``delta_low``, ``delta_high``, ``p``, ``p_adjusted``, ``m``, ``bold`` ...).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from experiments.base.errors import unknown_choice
from experiments.report.table.caption import table_caption
from experiments.report.table.latex import LAYOUTS, METHODS, latex_metrics, latex_table
from experiments.report.table.markup import html_table, markdown_table
from experiments.report.table.metrics import METRICS

if TYPE_CHECKING:
    from experiments.report.table.summarize import Table

__all__ = ["FORMATS", "LAYOUTS", "METHODS", "format_number", "format_p", "render", "table_caption"]

FORMATS = ("md", "latex", "csv", "json", "html")
_DASH = "—"
_ARROW = {True: " ↑", False: " ↓", None: ""}


def format_number(value: float) -> str:
    """Three significant figures or so, without scientific notation for everyday sizes.

    ``0.8123 -> 0.812``, ``0.8 -> 0.800``, ``3.14159 -> 3.14``, ``12.34 -> 12.3``, ``475.3 -> 475``,
    ``12345.6 -> 12,346``, ``1.5e6 -> 1.5e+06``, NaN -> ``—``.
    """
    if value is None or not math.isfinite(value):
        return _DASH
    magnitude = abs(value)
    if magnitude >= 1e5:
        return f"{value:.3g}"
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:#.3g}"  # "#": trailing zeros kept, 0.8 -> 0.800


def format_p(p: float, *, alpha: float | None = None) -> str:
    """Two decimals from 0.1, two significant figures below; more where fewer would put the printed
    value on the other side of ``alpha`` than the value itself (so bold, ``p < alpha``, agrees with
    the printed number).

    ``0.4857 -> 0.49``, ``1 -> 1.00``, ``0.0456 -> 0.046``, ``0.0079 -> 0.0079``,
    ``0.0002 -> <0.001``, NaN -> ``—``; with ``alpha=0.05``: ``0.0496 -> 0.0496`` (not ``0.05``),
    ``0.0504 -> 0.050``.
    """
    if p is None or not math.isfinite(p):
        return _DASH
    if p < 0.001 and (alpha is None or alpha > 0.001):
        return "<0.001"
    text = f"{p:.2f}" if p >= 0.1 else f"{p:.2g}"
    digits = 2
    while alpha is not None and (float(text) < alpha) != (p < alpha) and digits < 15:
        digits += 1
        text = f"{p:#.{digits}g}"
    return text


@dataclasses.dataclass(frozen=True)
class _Cell:
    lines: tuple[str, ...]  # the value, then its interval and notes (smaller, below, in LaTeX)
    bold: bool = False  # the first line
    joiner: str = " "  # how Markdown puts the lines on one line
    tex: tuple[str, ...] | None = None  # other lines for LaTeX, if it shows less


def _interval(low: float, high: float, fmt=format_number) -> str:
    if not math.isfinite(low):
        return f"[{_DASH}]"
    return f"[{fmt(low)}, {'∞' if high == math.inf else fmt(high)}]"


def _signed(value: float) -> str:
    """``+0.500``, ``-0.500`` (a difference shows its sign), ``0`` unsigned."""
    value = value + 0.0  # -0.0 -> 0.0
    text = format_number(value)
    return f"+{text}" if math.isfinite(value) and value > 0 else text


def _estimate(row: pd.Series, name: str) -> _Cell:
    """The metric's estimate with its interval, bold when its contrast is significant."""
    bold = bool(row[f"{name}_bold"])
    n, low, high = row[f"{name}_n"], row[f"{name}_ci_low"], row[f"{name}_ci_high"]
    kind = METRICS[name].kind
    if not n:
        return _Cell((_DASH,))
    if kind == "rate":
        return _Cell((f"{row[f'{name}_k']}/{n}", _interval(low, high, lambda v: f"{v:.2f}")), bold)
    if kind == "time":  # the cumulative incidence by the end, its interval, k/n reached first
        ci = _interval(low, high, lambda v: f"{v:.2f}")
        return _Cell((f"{row[name]:.2f}", ci, f"({row[f'{name}_k']}/{n})"), bold)
    ci = _interval(low, high) if n > 1 else f"[{_DASH}]"
    notes = (f"(n={n})",) if n < row["seeds"] else ()
    imputed = row.get(f"{name}_imputed", 0)
    notes += (f"({imputed} imputed)",) if imputed else ()
    return _Cell((format_number(row[name]), ci, *notes), bold)


def _delta(row: pd.Series, name: str) -> _Cell:
    if row["is_baseline"]:
        return _Cell(("base",))
    delta = row[f"{name}_delta"]
    if not math.isfinite(delta):
        return _Cell((_DASH,))
    low, high = row[f"{name}_delta_low"], row[f"{name}_delta_high"]
    share = METRICS[name].kind in ("rate", "time")  # a difference of two proportions
    fmt = (lambda v: f"{v:+.2f}" if round(v, 2) else "0.00") if share else _signed
    return _Cell((fmt(delta), _interval(low, high, fmt)))


def _p_adjusted(row: pd.Series, name: str, alpha: float) -> _Cell:
    if row["is_baseline"]:
        return _Cell(("base",))
    text = format_p(row[f"{name}_p_adjusted"], alpha=alpha)
    star = "*" if row[f"{name}_confirmatory"] and text != _DASH else ""
    return _Cell((text + star,))


def _equivalence(row: pd.Series, name: str, table: Table) -> list[_Cell]:
    """The equivalence cell of a metric with a margin (none without): the verdict, the
    (1 - 2 alpha) interval of Δ and the TOST p_adj; ``base`` on the baseline's row."""
    if name not in table.margins:
        return []
    if row["is_baseline"]:
        return [_Cell(("base",))]
    level = f"{round(100 * (1 - 2 * table.alpha))}%"
    fmt = (lambda v: f"{v:+.2f}") if METRICS[name].rate else _signed
    low, high = row[f"{name}_equiv_low"], row[f"{name}_equiv_high"]
    p = format_p(row[f"{name}_tost_p_adjusted"], alpha=table.alpha)
    return [_Cell((row[f"{name}_verdict"], f"{level} {_interval(low, high, fmt)}", f"p={p}"))]


def _columns(
    table: Table,
    *,
    stacked: bool,
    metrics: Sequence[str] | None = None,
    excluded: bool = True,
    brief: bool = False,
) -> tuple[list[tuple[str, str]], list[list[_Cell]]]:
    """Headers ``(top, bottom)`` and rows of :class:`_Cell`.

    ``stacked`` (LaTeX): Δ and p_adj go below the estimate in its metric's cell rather than into
    columns of their own, which keeps the table within the text width; ``brief`` (stacked only):
    p_adj alone below the estimate's interval, without Δ and its interval (the TOST verdict
    without its interval and p). ``metrics``: these only (default: all); ``excluded``: the
    excluded runs' column, when any run was excluded.
    """
    metrics = table.metrics if metrics is None else metrics
    keys = list(table.shown_keys) or ["group"]
    show_n = table.rows["seeds"].nunique() > 1  # else the caption says n
    notes = excluded and bool(table.rows["excluded"].any())
    contrasts = table.baseline is not None
    headers = [("", k) for k in keys] + ([("", "n")] if show_n else [])
    for name in metrics:
        metric = METRICS[name]
        top, bottom = metric.header
        unit = {"rate": "k/n", "time": "CIF"}.get(metric.kind, "")
        bottom = (bottom or unit) + _ARROW[metric.higher_is_better]
        headers.append((top, bottom.strip()))
        if contrasts and not stacked:
            headers.append((metric.label, "Δ"))
            headers.append((metric.label, "p_adj"))
            if name in table.margins:
                headers.append((metric.label, "equivalence"))
    if notes:
        headers.append(("", "excluded"))
    body = []
    for _, row in table.rows.iterrows():
        line = [_Cell((str(row[k]),)) for k in keys]
        line += [_Cell((str(row["seeds"]),))] if show_n else []
        for name in metrics:
            cell = _estimate(row, name)
            if not contrasts:
                line.append(cell)
                continue
            delta = _delta(row, name)
            p = _p_adjusted(row, name, table.alpha)
            equivalent = _equivalence(row, name, table)
            if not stacked:
                line += [cell, *([delta] if delta is not None else []), p, *equivalent]
            elif row["is_baseline"]:
                line.append(dataclasses.replace(cell, lines=(*cell.lines, "base")))
            else:
                below = [f"Δ={delta.lines[0]}", *delta.lines[1:]] if not brief else []
                below = [] if below and below[0] == f"Δ={_DASH}" else below
                below += [f"p={p.lines[0]}"] if p.lines[0] != _DASH else []
                tost = equivalent[0].lines[: 1 if brief else None] if equivalent else ()
                below += [f"TOST {t}" for t in tost]
                line.append(dataclasses.replace(cell, lines=(*cell.lines, *below)))
        if notes:
            note, count = row["excluded_note"], str(row["excluded"])
            line.append(_Cell((note or _DASH,), tex=(count if note else _DASH,)))
        body.append(line)
    return headers, body


def _flat(table: Table) -> tuple[list[str], list[list[_Cell]], list[str]]:
    """The Markdown and HTML tables' column names, rows and alignments (one column per item)."""
    headers, body = _columns(table, stacked=False)
    names = [b if not a else f"{a} {b}".replace(" k/n", "") for a, b in headers]
    n_keys = len(table.shown_keys or ["group"])
    return names, body, ["left"] * n_keys + ["right"] * (len(headers) - n_keys)


def _markdown(table: Table) -> str:
    names, body, align = _flat(table)
    rows = []
    for line in body:
        texts = []
        for cell in line:
            first = f"**{cell.lines[0]}**" if cell.bold else cell.lines[0]
            texts.append(cell.joiner.join([first, *cell.lines[1:]]))
        rows.append(texts)
    return markdown_table(names, rows, align=align) + f"\n\n{table_caption(table)}\n"


def _html(table: Table) -> str:
    """The Markdown table's cells as an HTML table (bold the same cells), its caption below."""
    names, body, align = _flat(table)
    rows = [
        [
            (cell.lines[0], "".join(cell.joiner + x for x in cell.lines[1:]), cell.bold)
            for cell in line
        ]
        for line in body
    ]
    return html_table(names, rows, align=align, caption=table_caption(table))


def _latex(table: Table, *, caption: str | None, label: str | None, methods: str, layout: str):
    """The LaTeX floats (:func:`~experiments.report.table.latex.latex_table`) of the endpoints
    ``layout`` shows, their cells ``brief`` in the compact layout."""
    if layout not in LAYOUTS:
        raise unknown_choice("layout", layout, LAYOUTS)
    shown = latex_metrics(table, layout)
    headers, body = _columns(table, stacked=True, metrics=shown, brief=layout == "compact")
    cells = [[(cell.tex or cell.lines, cell.bold) for cell in line] for line in body]
    tail = bool(table.rows["excluded"].any())
    view = dataclasses.replace(table, metrics=shown)
    left_out = tuple(m for m in table.metrics if m not in shown)
    return latex_table(view, headers, cells, tail=tail, caption=caption, label=label,
                       methods=methods, layout=layout, left_out=left_out)  # fmt: skip


def _json(table: Table) -> str:
    """Every numeric column (NaN as null), the table's settings beside the rows."""
    records = json.loads(table.rows.to_json(orient="records"))
    meta = {
        "ablation": table.ablation,
        "stat": table.stat,
        "baseline": table.baseline,
        "metrics": list(table.metrics),
        "confidence": table.confidence,
        "alpha": table.alpha,
        "analysis": table.analysis,
        "rate_test": table.rate_test,
        "constants": table.constants,
        "compared_key": table.compared_key,
        "strata_keys": list(table.strata_keys),
        "m": table.m,
        "confirmatory": [dataclasses.asdict(c) for c in table.confirmatory],
        "diverged_return": table.diverged_return,
        "excluded": table.excluded,
        "threshold": table.threshold,
    }
    return json.dumps({**meta, "rows": records}, indent=2)


def render(
    table: Table,
    *,
    fmt: str,
    caption: str | None = None,
    label: str | None = None,
    methods: str = "short",
    layout: str = "compact",
) -> str:
    """The table as text.

    Args:
      table: from :func:`~experiments.report.table.summarize.summarize`.
      fmt: ``md`` (GitHub Markdown, the full caption below), ``latex`` (``table`` floats of
        pandas Styler tabulars, booktabs rules, a short caption and a label; needs only
        ``\\usepackage{booktabs}``; split by metric, stratum or rows where a page needs it:
        :mod:`~experiments.report.table.latex`), ``csv`` or ``json`` (every numeric column,
        NaN as null, the table's settings beside the rows), ``html`` (the Markdown table's
        cells and caption, what Jupyter shows).
      caption: LaTeX caption (escaped here); default: the short caption
        (:func:`~experiments.report.table.caption.short_caption`).
      label: LaTeX label; default ``tab:<ablation>``.
      methods: LaTeX only: ``short`` (the short caption) or ``full`` (and the full method text,
        :func:`table_caption`, as a paragraph after the table).
      layout: LaTeX only, one of :data:`LAYOUTS`: ``compact`` (of the default endpoints the
        headline ones, :func:`~experiments.report.table.latex.latex_metrics`; each cell the
        estimate, its CI and p_adj; the main job on one page) or ``full`` (every endpoint, each
        cell also Δ and its CI, split into floats where a page needs it).

    Raises:
      ConfigError: an unknown format, ``methods`` or ``layout``.
    """
    if fmt == "md":
        return _markdown(table)
    if fmt == "latex":
        return _latex(table, caption=caption, label=label, methods=methods, layout=layout)
    if fmt == "csv":
        return table.rows.to_csv(index=False)
    if fmt == "json":
        return _json(table)
    if fmt == "html":
        return _html(table)
    raise unknown_choice("format", fmt, FORMATS)
