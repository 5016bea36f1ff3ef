"""The table of :func:`~experiments.report.tables.summarize` as Markdown, LaTeX, CSV or JSON.

Markdown and LaTeX show, per group: the keys that vary (keys every run shares go into the caption),
``n`` (runs averaged), each metric (a rate as ``k/n`` with its exact interval and the Holm-adjusted
Fisher p against the baseline; any other figure as the statistic with its bootstrap interval), and
the runs not averaged when there are any. The caption names the statistics, the tests, the
correction and the bold rule. LaTeX is a pandas Styler table that compiles in a plain
``\\documentclass{article}`` with ``\\usepackage{booktabs}`` and nothing else: ``\\small``, narrow
column gaps, two-line headers and each interval on a second line within its cell (a nested
``tabular``), so the default columns fit the text width. CSV and JSON carry every number
(``k``, ``n``, ``ci_low``, ``ci_high``, ``p``, ``p_adjusted``, ``bold`` ...).
"""

from __future__ import annotations

import dataclasses
import json
import math

import pandas as pd

from experiments.errors import unknown_choice
from experiments.metrics import COLLAPSE_FRACTION
from experiments.report.markup import latex_escape, markdown_table
from experiments.report.tables import METRICS

__all__ = ["FORMATS", "format_number", "format_p", "render", "table_caption"]

FORMATS = ("md", "latex", "csv", "json")
_STAT_LABEL = {"mean": "mean", "iqm": "IQM", "median": "median"}
_DASH = "—"
_ARROW = {True: " ↑", False: " ↓", None: ""}
_TEX = {"↑": r"$\uparrow$", "↓": r"$\downarrow$", "≥": r"$\geq$", "α": r"$\alpha$"}
_TEX.update({"—": "--", "–": "--"})
_RATE_MEANING = {
    "unstable": "diverged, or collapsed (final-window return fell "
    f"≥ {COLLAPSE_FRACTION:.0%} of the return range below the run's best window)",
    "diverged": "stopped by the divergence rule (non-finite or exploding loss)",
    "collapsed": f"final-window return ≥ {COLLAPSE_FRACTION:.0%} of the return range below the "
    "run's best window",
    "reached_threshold": "evaluation return reached the task's threshold",
}


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


def format_p(p: float) -> str:
    """Two decimals from 0.1, two significant figures below (so nothing rounds onto 0.05).

    ``0.4857 -> 0.49``, ``1 -> 1.00``, ``0.0456 -> 0.046``, ``0.0079 -> 0.0079``,
    ``0.0002 -> <0.001``, NaN -> ``—``.
    """
    if p is None or not math.isfinite(p):
        return _DASH
    if p < 0.001:
        return "<0.001"
    return f"{p:.2f}" if p >= 0.1 else f"{p:.2g}"


@dataclasses.dataclass(frozen=True)
class _Cell:
    lines: tuple[str, ...]  # the value, then its interval and notes (smaller, below, in LaTeX)
    bold: bool = False  # the first line
    joiner: str = " "  # how Markdown puts the lines on one line
    tex: tuple[str, ...] | None = None  # other lines for LaTeX, if it shows less


def _interval(low: float, high: float, fmt=format_number) -> str:
    return f"[{fmt(low)}, {fmt(high)}]" if math.isfinite(low) else f"[{_DASH}]"


def _metric_cell(row: pd.Series, name: str) -> _Cell:
    bold = bool(row[f"{name}_bold"])
    n, low, high = row[f"{name}_n"], row[f"{name}_ci_low"], row[f"{name}_ci_high"]
    if METRICS[name].rate:
        if not n:
            return _Cell((_DASH,))
        return _Cell((f"{row[f'{name}_k']}/{n}", _interval(low, high, lambda v: f"{v:.2f}")), bold)
    if not math.isfinite(row[name]):
        return _Cell((_DASH,))
    ci = _interval(low, high) if n > 1 else f"[{_DASH}]"
    fewer = (f"(n={n})",) if n < row["seeds"] else ()
    return _Cell((format_number(row[name]), ci, *fewer), bold)


def _versus(row: pd.Series, name: str) -> tuple[str, str]:
    """``(label, text)`` of the comparison with the baseline shown with a metric: the adjusted
    Fisher p of a rate, P(better) of another metric; ``base`` on the baseline's row."""
    if METRICS[name].rate:
        label, text = "p", format_p(row[f"{name}_p_adjusted"])
    else:
        p = row[f"{name}_p_better"]
        label, text = "P(better)", f"{p:.2f}" if math.isfinite(p) else _DASH
    return label, "base" if row["is_baseline"] else text


def _columns(
    table: pd.DataFrame, *, p_better: bool, stacked: bool
) -> tuple[list[tuple[str, str]], list[list[_Cell]]]:
    """Headers ``(top, bottom)`` and rows of :class:`_Cell`.

    ``stacked`` (LaTeX): a comparison with the baseline goes below the interval in its metric's
    cell rather than into a column of its own, which keeps the table within the text width.
    """
    attrs = table.attrs
    keys = attrs["shown_keys"] or ["group"]
    show_n = table["seeds"].nunique() > 1  # else the caption says n
    notes = bool(table["not_averaged"].any())
    versus = [
        name
        for name in attrs["metrics"]
        if attrs["baseline"] is not None
        and (METRICS[name].rate or (p_better and METRICS[name].higher_is_better is not None))
    ]
    headers = [("", k) for k in keys] + ([("", "n")] if show_n else [])
    for name in attrs["metrics"]:
        metric = METRICS[name]
        top, bottom = metric.header
        bottom = (bottom or ("k/n" if metric.rate else "")) + _ARROW[metric.higher_is_better]
        headers.append((top, bottom.strip()))
        if name in versus and not stacked:
            headers.append((top, "p" if metric.rate else "P(better)"))
    if notes:
        headers.append(("not", "avg." if stacked else "averaged"))
    body = []
    for _, row in table.iterrows():
        line = [_Cell((str(row[k]),)) for k in keys]
        line += [_Cell((str(row["seeds"]),))] if show_n else []
        for name in attrs["metrics"]:
            cell = _metric_cell(row, name)
            if name not in versus:
                line.append(cell)
                continue
            label, text = _versus(row, name)
            if not stacked:
                line += [cell, _Cell((text,))]
            elif text != _DASH:
                below = text if text == "base" else f"{label}={text}"
                line.append(dataclasses.replace(cell, lines=(*cell.lines, below)))
            else:
                line.append(cell)
        if notes:
            note, count = row["not_averaged_note"], str(row["not_averaged"])
            line.append(_Cell((note or _DASH,), tex=(count if note else _DASH,)))
        body.append(line)
    return headers, body


def table_caption(table: pd.DataFrame, *, stacked: bool = False, p_better: bool = False) -> str:
    """What the table shows, the tests, the correction and the bold rule, in plain text.

    Args:
      table: from :func:`~experiments.report.tables.summarize`.
      stacked: intervals sit below their values (LaTeX) rather than beside them (Markdown).
      p_better: the table shows P(better) columns.
    """
    a = table.attrs
    level = f"{round(100 * a['confidence'])}%"
    where = "below" if stacked else "in brackets"
    fixed = ", ".join(f"{k}={v}" for k, v in a["constants"].items())
    parts = [f"{a['ablation'] or 'runs'}" + (f" ({fixed})" if fixed else "") + "."]
    total = int(table["not_averaged"].sum())
    seeds = table["seeds"].unique()
    n = f"n = {seeds[0]} runs averaged per group" if len(seeds) == 1 else "n: runs averaged"
    parts.append(
        f"{n} (completed or diverged)"
        + (f"; {total} more not averaged ({a['not_averaged']}): last column." if total else ".")
    )
    rates = [m for m in a["metrics"] if METRICS[m].rate]
    values = [m for m in a["metrics"] if not METRICS[m].rate]
    strata = [k for k in a["shown_keys"] if k != a["compared_key"]]
    same = f" of the same {', '.join(strata)}" if strata else ""
    for name in rates:
        parts.append(f"{METRICS[name].label}: {_RATE_MEANING[name]}.")
    if rates:
        text = f"Rates: k of n runs, exact Clopper–Pearson {level} CI {where}"
        if a["baseline"] is not None:
            counts = {a["compared"][r] for r in rates}
            m = (
                f"m={counts.pop()}"
                if len(counts) == 1
                else ", ".join(f"{METRICS[r].label} m={a['compared'][r]}" for r in rates)
            )
            text += (
                f"; p{' (below)' if stacked else ''}: two-sided Fisher's exact test against "
                f"{a['baseline']}{same}, "
                f"Holm–Bonferroni-adjusted over the rows compared ({m})"
            )
        parts.append(text + ".")
    if values:
        parts.append(
            f"{'Other columns' if rates else 'Cells'}: {_STAT_LABEL[a['stat']]} over runs, "
            f"{level} percentile-bootstrap CI {where} (n= where fewer runs had a value)."
        )
        if "steps_to_threshold" in values and a.get("threshold") is not None:
            parts.append(
                f"Steps to threshold: first evaluation with return ≥ {a['threshold']:g}, "
                "over the runs that reached it."
            )
    if p_better and a["baseline"] is not None:
        parts.append(
            f"P(better){' (below)' if stacked else ''}: probability that a run beats a run of "
            f"{a['baseline']}{same}."
        )
    per = f" and {', '.join(strata)}" if strata else ""
    parts.append(
        f"Bold: per column{per}, the best value and every row not significantly worse "
        "(two-sided Fisher's exact test for rates, Mann–Whitney U otherwise, against the best "
        f"row, Holm-adjusted, α = {a['alpha']:g}); no bold where nothing separates the rows."
    )
    return " ".join(parts)


def _tex(text: str) -> str:
    text = latex_escape(text)
    for char, tex in _TEX.items():
        text = text.replace(char, tex)
    return text


def _stack(lines: list[str], align: str) -> str:
    """One cell of several lines: a nested ``tabular`` hanging from the row's baseline."""
    if len(lines) == 1:
        return lines[0]
    inner = r"\\{}".join(lines)  # {}: a line starting with [ is not a \\[length]
    gap = r"\rule[-3pt]{0pt}{3pt}"  # a strut: space below the last line, before the next row
    return rf"\begin{{tabular}}[t]{{@{{}}{align}@{{}}}}{inner}{gap}\end{{tabular}}"


def _latex(table: pd.DataFrame, *, caption_text: str | None, label: str | None, **kw) -> str:
    headers, body = _columns(table, stacked=True, **kw)
    n_keys = len(table.attrs["shown_keys"] or ["group"])
    columns = pd.MultiIndex.from_tuples([(_tex(a), _tex(b)) for a, b in headers])
    cells = []
    for line in body:
        out = []
        for j, cell in enumerate(line):
            texts = [_tex(t) for t in (cell.tex or cell.lines)]
            if cell.bold:
                texts[0] = rf"\textbf{{{texts[0]}}}"
            texts[1:] = [rf"\scriptsize {t}" for t in texts[1:]]
            out.append(_stack(texts, "l" if j < n_keys else "r"))
        cells.append(out)
    styler = pd.DataFrame(cells, columns=columns).style.hide(axis="index")
    styler = styler.set_table_styles(
        [
            {"selector": "footnotesize", "props": ":;"},
            {"selector": "setlength", "props": r":{\tabcolsep}{2pt};"},
        ],
        overwrite=False,
    )
    text = caption_text if caption_text is not None else table_caption(table, stacked=True, **kw)
    return styler.to_latex(
        hrules=True,
        column_format="@{}" + "l" * n_keys + "r" * (len(headers) - n_keys) + "@{}",
        caption=_tex(text),
        label=label if label is not None else f"tab:{table.attrs['ablation'] or 'runs'}",
        position_float="centering",
        multicol_align="c",
    )


def _markdown(table: pd.DataFrame, **kw) -> str:
    headers, body = _columns(table, stacked=False, **kw)
    names = [
        b if not a or b in ("p", "P(better)") else f"{a} {b}".replace(" k/n", "")
        for a, b in headers
    ]
    rows = []
    for line in body:
        texts = []
        for cell in line:
            first = f"**{cell.lines[0]}**" if cell.bold else cell.lines[0]
            texts.append(cell.joiner.join([first, *cell.lines[1:]]))
        rows.append(texts)
    n_keys = len(table.attrs["shown_keys"] or ["group"])
    align = ["left"] * n_keys + ["right"] * (len(headers) - n_keys)
    return markdown_table(names, rows, align=align) + f"\n\n{table_caption(table, **kw)}\n"


def render(
    table: pd.DataFrame,
    *,
    fmt: str,
    caption: str | None = None,
    label: str | None = None,
    p_better: bool = False,
) -> str:
    """The table as text.

    Args:
      table: from :func:`~experiments.report.tables.summarize`.
      fmt: ``md`` (GitHub Markdown, caption below), ``latex`` (pandas Styler, booktabs rules,
        caption and label; needs only ``\\usepackage{booktabs}``), ``csv`` or ``json`` (every
        numeric column, NaN as null, the table's settings beside the rows).
      caption: LaTeX caption (escaped here); default: :func:`table_caption`.
      label: LaTeX label; default ``tab:<ablation>``.
      p_better: also show P(better) beside each metric with a direction (md and LaTeX).

    Raises:
      ConfigError: an unknown format.
    """
    if fmt == "md":
        return _markdown(table, p_better=p_better)
    if fmt == "latex":
        return _latex(table, caption_text=caption, label=label, p_better=p_better)
    if fmt == "csv":
        return table.to_csv(index=False)
    if fmt == "json":
        records = json.loads(table.to_json(orient="records"))
        meta = {k: table.attrs[k] for k in ("ablation", "stat", "baseline", "metrics")}
        meta.update({k: table.attrs[k] for k in ("confidence", "alpha", "constants", "compared")})
        return json.dumps({**meta, "rows": records}, indent=2)
    raise unknown_choice("format", fmt, FORMATS)
