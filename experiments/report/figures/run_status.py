"""The run-status figure: every run of each arm by its outcome class, as counts out of n.

One horizontal stacked bar per arm (one panel per regime, arms in registry order, first on top),
its segments the runs of each class of :data:`experiments.verdicts.outcome.CLASSES` (``held``,
``lost``,
``diverged_after_learning``, ``diverged_before_learning``, ``never_learned``; the ``outcome``
column of :attr:`~experiments.report.runs.results.Results.runs`), then the runs that have none:

* ``no threshold``: a finished run of a task without a declared threshold (no class is defined);
* ``no outcome``: a finished run of a task with a threshold that lacks the figures its class needs
  (e.g. a learned run stopped before its final window);
* ``not finished``: a job that crashed, timed out, was interrupted or is still running (its
  status is not one of :data:`~experiments.report.runs.results.AVERAGED`); the design counts it.

So a bar's length is the arm's number of jobs, n, written at its end; under the bar, the arm's
failed rate there (did not learn and hold) with its exact 95% interval; each segment of at least
:data:`_LABELLED` of the longest bar carries its count inside, a narrower non-zero one above
it. Classes are coloured by what happened (blues: learned; oranges/reds, hatched: diverged;
grey: never learned), never in a variant's colour.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from experiments.base.errors import ConfigError
from experiments.report.figures.drawing import with_lines
from experiments.report.figures.layout import Layout, layout_of, panel_grid
from experiments.report.figures.style import STYLE, figure_legend, fold_label, in_registry_order
from experiments.report.runs.results import AVERAGED, Results
from experiments.verdicts.outcome import CLASSES

__all__ = ["OUTCOME_STYLES", "SEGMENTS", "outcome_counts", "outcome_counts_across", "outcome_table"]

SEGMENTS = (*CLASSES, "no threshold", "no outcome", "not finished")
"""The bar segments, in drawing order."""

OUTCOME_STYLES = {
    "held": {"facecolor": "#2166AC"},
    "lost": {"facecolor": "#92C5DE"},
    "diverged_after_learning": {"facecolor": "#F4A582", "hatch": "///"},
    "diverged_before_learning": {"facecolor": "#D6604D", "hatch": "xx"},
    "never_learned": {"facecolor": "#D9D9D9"},
    "no threshold": {"facecolor": "white", "hatch": "...."},
    "no outcome": {"facecolor": "white"},
    "not finished": {"facecolor": "#8A8A8A", "hatch": "\\\\\\\\"},
}
"""Bar style per segment: greys and hatches keep the classes apart in grey print."""
_DARK = {"held"}  # white count labels (hatched segments: dark on a white box)
_LABELLED = 0.06
_ROW = 0.34  # inches per arm (its bar, the rate under it)


def _segment(row: pd.Series) -> str:
    if row["status"] not in AVERAGED:
        return "not finished"
    outcome = row.get("outcome")
    if isinstance(outcome, str) and outcome in CLASSES:
        return outcome
    threshold = pd.to_numeric(pd.Series([row.get("threshold")]), errors="coerce").iloc[0]
    return "no threshold" if threshold != threshold else "no outcome"


def outcome_table(runs: pd.DataFrame, line_key: str, values: tuple[str, ...]) -> pd.DataFrame:
    """Runs per segment for each arm of one panel.

    Args:
      runs: ``[N]`` rows of ``Results.runs`` with ``status``, ``outcome``, ``threshold`` and
        ``line_key``.
      line_key: the compared key (``variant``).
      values: the arms, in the order the bars are drawn.

    Returns:
      ``[arms, segments]`` integer counts, index ``values``, columns :data:`SEGMENTS`; a row sums
      to the arm's number of jobs.
    """
    segments = runs.apply(_segment, axis=1) if len(runs) else pd.Series([], dtype=object)
    frame = pd.DataFrame({"arm": runs[line_key].astype(str), "segment": segments})
    counts = frame.groupby(["arm", "segment"]).size().unstack(fill_value=0)
    return counts.reindex(index=list(values), columns=list(SEGMENTS), fill_value=0).astype(int)


def outcome_counts(results: Results) -> Figure:
    """Horizontal stacked bars per panel (regime): each arm's jobs by outcome class.

    Returns:
      The figure; per panel one bar container per segment present anywhere in the figure (in
      :data:`SEGMENTS` order, ``container.get_label()`` the segment, bar widths the counts per arm
      top to bottom), the text ``n=N`` at each bar's end, and the count inside each wide segment.
    """
    runs = results.runs
    layout = layout_of(runs, results.group_keys)
    panels = list(layout.panels(with_lines(runs, layout)))
    tables = [
        (label, outcome_table(panel, layout.line_key, layout.values)) for label, panel in panels
    ]
    return _draw(tables, layout.values)


def outcome_counts_across(folders: Sequence[Results]) -> Figure:
    """The outcome figure over several folders (a study's tasks, each its own folder): one panel
    per folder (per folder and regime where a folder has several), titled by the folder's name
    less the part all the names share (``study_faithful_catch``, ``study_faithful_cartpole``:
    ``catch``, ``cartpole``), the same arms as rows in every panel.

    Arms are rows by their full label, in the registry's order as in one folder's figure:
    ``clipnorm (clipnorm=113)`` in one folder and ``clipnorm (clipnorm=203)`` in another are two
    rows, each with no bar in the panel where it did not run.

    Raises:
      ConfigError: fewer than two folders, or a folder whose runs do not record a variant (its
        rows would be another key's values, which are not arms). A folder of one arm is a panel
        of one bar.
    """
    if len(folders) < 2:
        raise ConfigError("the outcome figure across folders needs at least two folders")
    tables, seen = [], []
    names = _short_names([results.root.name for results in folders])
    for results, name in zip(folders, names, strict=True):
        runs = results.runs
        if "variant" not in results.group_keys:
            keys = ", ".join(results.group_keys) or "no key"
            raise ConfigError(
                f"folder '{results.root}' does not compare variants (it sweeps {keys}); the "
                "outcome figure across folders draws one row per arm"
            )
        varying = [k for k in results.group_keys if k != "variant" and runs[k].nunique() > 1]
        seen += [v for v in runs["variant"].astype(str).unique() if v not in seen]
        for label, panel in Layout("variant", tuple(varying), (), {}).panels(runs):
            tables.append((", ".join(t for t in (name, label) if t), panel))
    values = in_registry_order("variant", seen)
    return _draw([(t, outcome_table(p, "variant", values)) for t, p in tables], values)


def _short_names(names: Sequence[str]) -> list[str]:
    """``names`` less the prefix they all share, cut after its last ``_``, ``-`` or ``.``; the
    names themselves where that would leave one empty or two alike."""
    common = os.path.commonprefix(list(names))
    cut = max(common.rfind(c) for c in "_-.") + 1
    short = [n[cut:] for n in names]
    return short if all(short) and len(set(short)) == len(short) else list(names)


def _rate_label(row: pd.Series) -> str:
    """An arm's failed rate (every class but held: did not learn and hold) in one panel, with its
    exact 95% Clopper-Pearson interval, so each bar shows its uncertainty: ``0.19 [0.09, 0.33]``
    (the legend's title says what it is); empty where none of its runs has an outcome."""
    from experiments.report.statistics.intervals import binomial_ci

    classed = int(sum(row[c] for c in CLASSES))
    if not classed:
        return ""
    failed = classed - int(row["held"])
    low, high = binomial_ci(failed, classed)
    return f"{failed / classed:.2f} [{low:.2f}, {high:.2f}]"


def _draw(tables: list[tuple[str, pd.DataFrame]], values: Sequence[str]) -> Figure:
    """The stacked bars of ``(panel title, [arms, segments] counts)`` per panel."""
    shown = [s for s in SEGMENTS if any(t[s].sum() for _, t in tables)]
    n_values = len(values)
    most = max(int(t.sum(axis=1).max()) for _, t in tables)
    with mpl.rc_context(STYLE):
        fig, axes = panel_grid(len(tables), height=_ROW * n_values + 0.5)
        for ax, (label, counts) in zip(axes, tables, strict=False):
            y = np.arange(n_values)
            left = np.zeros(n_values)
            for segment in shown:
                width = counts[segment].to_numpy()
                ax.barh(y, width, left=left, label=segment, height=0.7, edgecolor="#262626",
                        linewidth=0.4, **OUTCOME_STYLES[segment])  # fmt: skip
                colour = "white" if segment in _DARK else "#1A1A1A"
                for yi, (x0, w) in enumerate(zip(left, width, strict=True)):
                    if w and w >= _LABELLED * most:
                        box = {"boxstyle": "round,pad=0.1", "facecolor": "white", "linewidth": 0}
                        ax.text(x0 + w / 2, yi, str(int(w)), ha="center", va="center",
                                color=colour, bbox=box if "hatch" in OUTCOME_STYLES[segment]
                                else None)  # fmt: skip
                    elif w:  # a sliver: its count above the bar, so no non-zero count is hidden
                        ax.text(x0 + w / 2, yi - 0.36, str(int(w)), ha="center", va="bottom",
                                fontsize=7, color="#1A1A1A")  # fmt: skip
                left = left + width
            for yi, total in enumerate(left):
                if total:
                    ax.text(total + most * 0.02, yi, f"n={int(total)}", va="center")
            for yi in range(n_values):  # under each bar, its failed rate and exact interval
                rate = _rate_label(counts.iloc[yi])
                if rate:
                    ax.text(0, yi + 0.5, rate, ha="left", va="center", fontsize=7,
                            color="#404040")  # fmt: skip
            ax.set_yticks(y, [fold_label(v) for v in values])
            # first arm on top (set, not toggled: y shared); room under the last bar for its rate
            ax.set_ylim(n_values - 0.1, -0.5)
            ax.set_xlim(0, most * 1.2 + 0.5)
            ax.xaxis.get_major_locator().set_params(integer=True)
            ax.grid(axis="y", visible=False)
            ax.set_xlabel("runs (seeds)")
            undefined = int(counts["no threshold"].sum())
            note = "no threshold: outcome undefined" if undefined == int(left.sum()) else ""
            title = "\n".join(t for t in (label, note) if t)
            if title:
                ax.set_title(title, loc="left")
        handles = [mpl.patches.Patch(edgecolor="#262626", linewidth=0.4, **OUTCOME_STYLES[s])
                   for s in shown]  # fmt: skip
        labels = [s.replace("_", " ") for s in shown]
        figure_legend(
            fig,
            handles,
            labels,
            title="run outcome (counts of n runs)\nunder each "
            "bar: failed (not held) rate [exact 95% CI]",
        )
    return fig
