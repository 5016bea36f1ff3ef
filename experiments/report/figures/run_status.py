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

Where the runs record a final return, each panel has a second axis beside its bars, on the same
rows: every run of the arm as a point at its final return, intention to treat (a diverged run at
its task's random-policy return, drawn as an ``x``, as the table counts it), coloured by its
outcome class, with the arm's mean as a black tick and the task's threshold dashed. An arm whose
bars are all "held" can still end lower: the points show it (Study 4's Breakout).
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
from experiments.report.runs.results import AVERAGED, Results, intention_to_treat
from experiments.verdicts import CLASSES

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
_JITTER = 0.28  # half the vertical spread of a row's points, in rows


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
        (
            label,
            outcome_table(panel, layout.line_key, layout.values),
            _returns(panel, layout.line_key),
        )
        for label, panel in panels
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
    return _draw(
        [(t, outcome_table(p, "variant", values), _returns(p, "variant")) for t, p in tables],
        values,
    )


def _returns(runs: pd.DataFrame, line_key: str) -> pd.DataFrame | None:
    """The points of a panel's return axis: per finished run (completed or diverged), its arm,
    its final return intention to treat (:func:`~experiments.report.runs.results.
    intention_to_treat`: the table's figure), whether it was imputed, and its segment; None when
    no run of the panel records a final return (no axis is drawn). A diverged run whose task
    declares no random-policy return is left out (``value`` NaN), and said in the panel."""
    if "final_return" not in runs:
        return None
    done = runs[runs["status"].isin(AVERAGED)]
    finals = pd.to_numeric(done["final_return"], errors="coerce")
    if done.empty or finals.isna().all():
        return None
    frame = done.assign(
        final_return=finals,
        diverged=done["diverged"] if "diverged" in done else (done["status"] == "diverged"),
        task=done["task"] if "task" in done else None,
        reward_scale=done["reward_scale"] if "reward_scale" in done else 1.0,
    )
    try:
        values, imputed, _ = intention_to_treat(frame, "final_return")
    except ConfigError:  # no declared return for a diverged run's task: not drawn, said
        imputed = (pd.to_numeric(frame["diverged"], errors="coerce").fillna(0) >= 0.5).to_numpy()
        imputed |= finals.isna().to_numpy()
        values = np.where(imputed, np.nan, finals.to_numpy(dtype=float))
    return pd.DataFrame({
        "arm": done[line_key].astype(str).to_numpy(),
        "value": values,
        "imputed": imputed,
        "segment": done.apply(_segment, axis=1).to_numpy() if len(done) else [],
        "threshold": pd.to_numeric(done["threshold"], errors="coerce").to_numpy(dtype=float),
    })  # fmt: skip


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


def _draw(
    tables: list[tuple[str, pd.DataFrame, pd.DataFrame | None]], values: Sequence[str]
) -> Figure:
    """The stacked bars of ``(panel title, [arms, segments] counts, return points)`` per panel;
    where any panel has return points, each panel's bars have its return axis beside them."""
    shown = [s for s in SEGMENTS if any(t[s].sum() for _, t, _ in tables)]
    n_values = len(values)
    most = max(int(t.sum(axis=1).max()) for _, t, _ in tables)
    points = [p for _, _, p in tables if p is not None]
    with mpl.rc_context(STYLE):
        if points:
            fig, pairs = _paired_grid(len(tables), height=_ROW * n_values + 0.5)
        else:
            fig, axes = panel_grid(len(tables), height=_ROW * n_values + 0.5)
            pairs = [(ax, None) for ax in axes]
        for (ax, beside), (label, counts, dots) in zip(pairs, tables, strict=False):
            _bars(ax, counts, values, shown, most, label)
            if beside is not None:
                _points(beside, dots, values)
        handles = [mpl.patches.Patch(edgecolor="#262626", linewidth=0.4, **OUTCOME_STYLES[s])
                   for s in shown]  # fmt: skip
        labels = [s.replace("_", " ") for s in shown]
        title = (
            "run outcome (counts of n runs)\nunder each bar: failed (not held) rate [exact 95% CI]"
        )
        if points:
            handles += [
                mpl.lines.Line2D(
                    [], [], linestyle="none", marker="x", color="#262626", markersize=4
                ),
                mpl.lines.Line2D([], [], linestyle="none", marker="|", color="black", markersize=9),
                mpl.lines.Line2D([], [], color=_GREY, linestyle="--", linewidth=0.7),
            ]
            labels += ["diverged (random-policy return)", "arm mean (every run)",
                       "threshold"]  # fmt: skip
            title += "\nright: each run's final return, coloured by its outcome"
        figure_legend(fig, handles, labels, title=title)
    return fig


_GREY = "#555555"


def _paired_grid(n: int, *, height: float) -> tuple[Figure, list[tuple]]:
    """A figure of ``n`` rows, each a bar axis and a return axis beside it on the same rows
    (y shared across the figure); the bar axes share x; each return axis has its own x (a
    panel is a task or a regime: their returns differ in scale)."""
    from experiments.report.figures.style import COLUMN_WIDTH, LEGEND_ROOM

    fig = Figure(figsize=(COLUMN_WIDTH, height * n + LEGEND_ROOM), layout="constrained")
    axes = fig.subplots(n, 2, sharey=True, squeeze=False, width_ratios=(3, 2))
    for ax in axes[1:, 0]:
        ax.sharex(axes[0, 0])
    return fig, [(row[0], row[1]) for row in axes]


def _span(dots: pd.DataFrame) -> tuple[float, float]:
    """A return axis' x range: every drawn point and the threshold inside it."""
    drawn = np.concatenate([dots["value"].to_numpy(float), dots["threshold"].to_numpy(float)])
    drawn = drawn[np.isfinite(drawn)]
    if not len(drawn):
        return (0.0, 1.0)
    low, high = float(drawn.min()), float(drawn.max())
    pad = 0.05 * (high - low) if high > low else 0.5
    return (low - pad, high + pad)


def _points(ax, dots: pd.DataFrame | None, values: Sequence[str]) -> None:
    """One panel's return axis: each run a point on its arm's row (seeded jitter, so the same
    folder gives the same figure), its arm's mean a black tick, the threshold dashed."""
    ax.set_xlabel("final return")
    ax.grid(axis="y", visible=False)
    ax.tick_params(axis="y", left=False)
    if dots is None:
        return
    span = _span(dots)
    ax.set_xlim(*span)
    rng = np.random.default_rng(0)
    for row, arm in enumerate(values):
        mine = dots[dots["arm"] == arm]
        drawn = mine[np.isfinite(mine["value"].to_numpy(float))]
        if not len(mine):
            continue
        y = row + rng.uniform(-_JITTER, _JITTER, len(drawn))
        for (segment, imputed), part in drawn.groupby(["segment", "imputed"], sort=False):
            at = y[np.isin(drawn.index, part.index)]
            colour = OUTCOME_STYLES.get(segment, {}).get("facecolor", "#8A8A8A")
            if imputed:
                ax.scatter(part["value"], at, s=10, marker="x", color="#262626", linewidths=0.6,
                           zorder=3, label=f"{arm}: {segment}, imputed")  # fmt: skip
            else:
                ax.scatter(part["value"], at, s=8, color=colour, edgecolors="#262626",
                           linewidths=0.2, zorder=3, label=f"{arm}: {segment}")  # fmt: skip
        if len(drawn) == len(mine):
            mean = float(drawn["value"].mean())
            ax.plot([mean, mean], [row - 0.4, row + 0.4], color="black", linewidth=1.2, zorder=4,
                    label=f"{arm}: mean")  # fmt: skip
        else:  # a diverged run without a declared return: no mean drawn, said
            ax.text(span[0], row + 0.45, f"{len(mine) - len(drawn)} diverged, no return declared",
                    fontsize=6, color="#404040")  # fmt: skip
    for level in sorted({t for t in dots["threshold"].to_numpy(float) if np.isfinite(t)}):
        ax.axvline(level, color=_GREY, linestyle="--", linewidth=0.7)


def _bars(ax, counts: pd.DataFrame, values: Sequence[str], shown: list[str], most: int,
          label: str) -> None:  # fmt: skip
    """One panel's stacked bars (module docstring)."""
    n_values = len(values)
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
