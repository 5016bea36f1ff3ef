"""Seeds -> one row per group: statistic with bootstrap CI, seed count, diverged k/n, probability of
improvement over a baseline; rendered as Markdown, LaTeX (booktabs), CSV or JSON.

:func:`summarize` builds the numeric table (a DataFrame, one row per group); :func:`render` turns it
into text. Only finished runs (completed or diverged) enter the statistics; running, failed and
timed-out runs are counted in a ``not_finished`` column, never averaged. A metric undefined for some
runs (e.g. the final loss of a diverged run) is estimated from the others and its ``n`` is shown.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from experiments.errors import ConfigError, unknown_choice
from experiments.report.markup import latex_escape, markdown_table
from experiments.report.results import FINISHED, STATUSES, Results, group_label
from experiments.report.stats import STATS, bootstrap_ci, probability_of_improvement, statistic

__all__ = [
    "DEFAULT_METRICS",
    "FORMATS",
    "METRICS",
    "Metric",
    "format_number",
    "render",
    "summarize",
]


@dataclasses.dataclass(frozen=True)
class Metric:
    """How a stability figure is shown.

    Attributes:
      label: the column header.
      higher_is_better: True/False gives the direction for bold and P(better); None: no direction.
    """

    label: str
    higher_is_better: bool | None


METRICS = {
    "final_return": Metric("final return", True),
    "return_auc": Metric("return AUC", True),
    "reached_threshold": Metric("reached threshold", True),
    "steps_to_threshold": Metric("steps to threshold", False),
    "final_loss": Metric("final loss", False),
    "loss_auc": Metric("loss AUC", False),
    "grad_norm_median": Metric("grad norm median", False),
    "grad_norm_p99": Metric("grad norm p99", False),
    "grad_norm_max": Metric("grad norm max", False),
    "spike_count": Metric("grad spikes", False),
    "grad_hidden_ratio": Metric("hidden grad K/0", None),
    "hidden_norm_growth": Metric("hidden norm K/0", None),
    "wall_time_s": Metric("wall time (s)", False),
}
"""The table's metrics (stability figure name -> display); see :mod:`experiments.metrics`."""

DEFAULT_METRICS = ("final_return", "return_auc", "final_loss", "grad_norm_p99")
FORMATS = ("md", "latex", "csv", "json")
_STAT_LABEL = {"mean": "mean", "iqm": "IQM", "median": "median"}
_DASH = "—"


def _resolve_baseline(results: Results, baseline: str | None) -> tuple[str, str] | None:
    """``(key, value)`` the baseline groups share; None if no baseline is asked or found."""
    keys = results.group_keys
    if baseline is None:
        runs = results.runs
        if "variant" in keys and (runs["variant"] == "none").any():
            return "variant", "none"
        return None
    if "=" in baseline:
        key, value = (s.strip() for s in baseline.split("=", 1))
        if key not in keys:
            raise unknown_choice("baseline key", key, keys)
    elif "variant" in keys or len(keys) == 1:
        key, value = ("variant" if "variant" in keys else keys[0]), baseline
    else:
        raise ConfigError(
            f"baseline {baseline!r} is ambiguous: the groups vary {', '.join(keys) or 'nothing'}; "
            "pass --baseline KEY=VALUE"
        )
    values = sorted(results.runs[key].unique())
    if value not in values:
        raise unknown_choice(f"baseline {key}", value, values)
    return key, value


def _status_note(statuses: pd.Series) -> str:
    counts = statuses.value_counts()
    return ", ".join(f"{counts[s]} {s}" for s in STATUSES if s not in FINISHED and counts.get(s, 0))


def summarize(
    results: Results,
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    stat: str = "mean",
    baseline: str | None = None,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per group with the statistics of each metric over its finished seeds.

    Args:
      results: from :func:`~experiments.report.results.load_results`.
      metrics: names in :data:`METRICS`.
      stat: ``mean``, ``iqm`` or ``median``.
      baseline: ``VALUE`` (of the ``variant`` key, or of the only group key) or ``KEY=VALUE``; each
        group is compared with the group equal to it but for that key. None: ``variant=none`` if
        present, else no comparison.
      confidence: the bootstrap interval's level.
      n_resamples: bootstrap resamples per interval.
      seed: seeds each interval's generator (same folder, same table).

    Returns:
      Columns: the group keys; ``group``; ``runs`` (all statuses); ``seeds`` (finished runs);
      ``diverged``; ``is_baseline``; ``not_finished`` (e.g. ``"1 running, 1 failed"``); per
      metric ``m``: ``m`` (the statistic), ``m_ci_low``, ``m_ci_high``, ``m_n`` (seeds with a
      finite value), ``m_p_better`` (P(better than the baseline), NaN without one).
      ``attrs`` holds ``metrics``, ``stat``, ``baseline``, ``ablation``, ``group_keys``,
      ``confidence``.

    Raises:
      ConfigError: an unknown metric, statistic or baseline, or no finished run in the folder.
    """
    for name in metrics:
        if name not in METRICS:
            raise unknown_choice("metric", name, METRICS)
    if stat not in STATS:
        raise unknown_choice("statistic", stat, STATS)
    if not metrics:
        raise ConfigError(f"no metric chosen; choose from: {', '.join(METRICS)}")
    runs = results.runs
    if not runs["status"].isin(FINISHED).any():
        raise ConfigError(
            f"no finished (completed or diverged) run in '{results.root}': "
            f"{_status_note(runs['status'])}"
        )
    base = _resolve_baseline(results, baseline)
    keys = list(results.group_keys)
    groups = list(runs.groupby("group", sort=False))
    by_label = dict(groups)
    rows = []
    for label, members in groups:
        finished = members[members["status"].isin(FINISHED)]
        group = {k: members[k].iloc[0] for k in keys}
        row = {**group, "group": label, "runs": len(members), "seeds": len(finished)}
        row["diverged"] = int((finished["status"] == "diverged").sum())
        row["not_finished"] = _status_note(members["status"])
        base_runs = None
        row["is_baseline"] = base is not None and group[base[0]] == base[1]
        if base is not None:
            base_label = group_label({**group, base[0]: base[1]})
            if base_label != label and base_label in by_label:
                base_runs = by_label[base_label]
                base_runs = base_runs[base_runs["status"].isin(FINISHED)]
        for name in metrics:
            x = finished[name].to_numpy(dtype=float)
            low, high = bootstrap_ci(
                x, stat=stat, confidence=confidence, n_resamples=n_resamples, seed=seed
            )
            row[name] = statistic(x, stat=stat)
            row[f"{name}_ci_low"], row[f"{name}_ci_high"] = low, high
            row[f"{name}_n"] = int(np.isfinite(x).sum())
            direction = METRICS[name].higher_is_better
            row[f"{name}_p_better"] = (
                probability_of_improvement(
                    x, base_runs[name].to_numpy(dtype=float), higher_is_better=direction
                )
                if base_runs is not None and direction is not None
                else float("nan")
            )
        rows.append(row)
    table = pd.DataFrame(rows)
    if len(keys) <= 1:  # the baseline row first; with several keys the strata stay together
        table = table.sort_values("is_baseline", ascending=False, kind="stable")
        table = table.reset_index(drop=True)
    table.attrs.update(
        metrics=list(metrics),
        stat=stat,
        baseline=None if base is None else f"{base[0]}={base[1]}",
        ablation=results.ablation,
        group_keys=keys,
        confidence=confidence,
    )
    return table


def format_number(value: float) -> str:
    """Three significant figures or so, without scientific notation for everyday sizes.

    ``0.8123 -> 0.812``, ``3.14159 -> 3.14``, ``12.34 -> 12.3``, ``475.3 -> 475``,
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
    return f"{value:.3g}"


def _best(table: pd.DataFrame, name: str) -> pd.Series:
    """Bool per row: holds the best value of ``name`` (ties all best; none if all equal)."""
    direction = METRICS[name].higher_is_better
    values = table[name]
    if direction is None or values.notna().sum() < 2:
        return pd.Series(False, index=table.index)
    best = values.max() if direction else values.min()
    if values.min() == values.max():
        return pd.Series(False, index=table.index)  # all tied: nothing stands out
    return values == best


def _cells(table: pd.DataFrame) -> tuple[list[tuple[str, str]], list[list[str]], list[list[bool]]]:
    """The shown table: column headers (top, bottom), cell strings, and bold flags."""
    keys, metrics = table.attrs["group_keys"], table.attrs["metrics"]
    show_p = table.attrs["baseline"] is not None
    show_notes = bool(table["not_finished"].astype(bool).any())
    level = f"{_STAT_LABEL[table.attrs['stat']]} [{round(100 * table.attrs['confidence'])}% CI]"
    headers = [("", k) for k in keys or ["group"]] + [("", "seeds"), ("", "diverged")]
    for name in metrics:
        metric = METRICS[name]
        arrow = {True: " ↑", False: " ↓", None: ""}[metric.higher_is_better]
        headers.append((metric.label + arrow, level))
        if show_p:
            headers.append((metric.label + arrow, "P(better)"))
    if show_notes:
        headers.append(("", "not finished"))
    best = {name: _best(table, name) for name in metrics}
    cells, bold = [], []
    for i, row in table.iterrows():
        line = [str(row[k]) for k in keys or ["group"]]
        line += [str(row["seeds"]), f"{row['diverged']}/{row['seeds']}"]
        flags = [False] * len(line)
        for name in metrics:
            value, n = row[name], row[f"{name}_n"]
            if not math.isfinite(value):
                text = _DASH
            else:
                low, high = row[f"{name}_ci_low"], row[f"{name}_ci_high"]
                ci = f"[{format_number(low)}, {format_number(high)}]" if n > 1 else f"[{_DASH}]"
                text = f"{format_number(value)} {ci}"
                if n < row["seeds"]:
                    text += f" (n={n})"
            line.append(text)
            flags.append(bool(best[name][i]))
            if show_p:
                p = row[f"{name}_p_better"]
                shown = f"{p:.2f}" if math.isfinite(p) else _DASH
                line.append("base" if row["is_baseline"] else shown)
                flags.append(False)
        if show_notes:
            line.append(row["not_finished"] or _DASH)
            flags.append(False)
        cells.append(line)
        bold.append(flags)
    return headers, cells, bold


def _caption(table: pd.DataFrame) -> str:
    attrs = table.attrs
    what = f"{_STAT_LABEL[attrs['stat']]} over seeds"
    ci = f"{round(100 * attrs['confidence'])}% percentile-bootstrap CI in brackets"
    text = f"{attrs['ablation'] or 'runs'}: {what}, {ci}; diverged runs k/n; best value in bold"
    if attrs["baseline"] is not None:
        text += f"; P(better): probability a seed beats a seed of {attrs['baseline']}"
    return text + "."


def _latex(table: pd.DataFrame, *, caption: str | None, label: str | None) -> str:
    headers, cells, bold = _cells(table)
    arrows = {" ↑": r" $\uparrow$", " ↓": r" $\downarrow$"}

    def header(text: str) -> str:
        for arrow, tex in arrows.items():
            if text.endswith(arrow):
                return latex_escape(text[: -len(arrow)]) + tex
        return latex_escape(text)

    columns = pd.MultiIndex.from_tuples([(header(a), header(b)) for a, b in headers])
    body = [[latex_escape(c.replace(_DASH, "--")) for c in line] for line in cells]
    frame = pd.DataFrame(body, columns=columns)
    css = pd.DataFrame(
        [["textbf: --rwrap;" if b else "" for b in flags] for flags in bold],
        index=frame.index,
        columns=columns,
    )
    n_keys = max(1, len(table.attrs["group_keys"]))
    styler = frame.style.hide(axis="index").apply(lambda _: css, axis=None)
    return styler.to_latex(
        hrules=True,
        column_format="l" * n_keys + "r" * (len(headers) - n_keys),
        caption=latex_escape(caption if caption is not None else _caption(table)),
        label=label if label is not None else f"tab:{table.attrs['ablation'] or 'runs'}",
        position_float="centering",
        multicol_align="c",
    )


def _markdown(table: pd.DataFrame) -> str:
    headers, cells, bold = _cells(table)
    names = [b if not a else (a if b.endswith("CI]") else b) for a, b in headers]
    body = [
        [f"**{c}**" if b else c for c, b in zip(line, flags, strict=True)]
        for line, flags in zip(cells, bold, strict=True)
    ]
    n_keys = max(1, len(table.attrs["group_keys"]))
    align = ["left"] * n_keys + ["right"] * (len(headers) - n_keys)
    return markdown_table(names, body, align=align) + f"\n\n{_caption(table)}\n"


def render(
    table: pd.DataFrame, *, fmt: str, caption: str | None = None, label: str | None = None
) -> str:
    """The table as text.

    Args:
      table: from :func:`summarize`.
      fmt: ``md`` (GitHub Markdown, best in bold, caption below), ``latex`` (pandas Styler,
        booktabs rules, best in ``\\textbf``, caption and label; needs
        ``\\usepackage{booktabs}``), ``csv`` or ``json`` (every numeric column, NaN as null).
      caption: LaTeX caption (escaped here); default describes the statistics.
      label: LaTeX label; default ``tab:<ablation>``.

    Raises:
      ConfigError: an unknown format.
    """
    if fmt == "md":
        return _markdown(table)
    if fmt == "latex":
        return _latex(table, caption=caption, label=label)
    if fmt == "csv":
        return table.to_csv(index=False)
    if fmt == "json":
        records = json.loads(table.to_json(orient="records"))
        meta = {k: table.attrs[k] for k in ("ablation", "stat", "baseline", "metrics")}
        return json.dumps(
            {**meta, "confidence": table.attrs["confidence"], "rows": records}, indent=2
        )
    raise unknown_choice("format", fmt, FORMATS)
