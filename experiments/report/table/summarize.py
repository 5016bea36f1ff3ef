"""Seeds -> one typed :class:`Table`: a row of statistics per group, each arm contrasted with its
stratum's baseline.

:func:`summarize` builds the table: its numeric rows (:attr:`Table.rows`, one per group) and what
they mean (the design, the runs counted, the families: the other fields);
:mod:`experiments.report.table.render` turns it into Markdown, LaTeX, CSV or JSON, and
:mod:`experiments.report.table.caption` says what it holds. The runs that count:
:mod:`~experiments.report.table.design`; a group's cells: :mod:`~experiments.report.table.cells`;
the contrasts, their tests and the family: :mod:`experiments.report.statistics.contrasts`.

On an arm's row, per metric, the contrast with its stratum's baseline, the Holm-adjusted p-value
within the contrast's family (``_p_adjusted``) and ``_bold``: exactly ``_p_adjusted < alpha``.
Nothing else sets bold: no second test, no "best" row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from experiments.base.errors import ConfigError, unknown_choice
from experiments.report.runs.counting import counting_notes
from experiments.report.runs.results import AVERAGED, Results, group_label
from experiments.report.statistics.contrasts import (
    ANALYSES,
    RATE_TESTS,
    Confirmatory,
    ContrastOptions,
    adjust,
    check_choice,
    compared_key,
    pair_by_seed,
    resolve_baseline,
    varying_keys,
)
from experiments.report.statistics.equivalence import Margin, equivalence_cells, with_verdicts
from experiments.report.statistics.intervals import STATS
from experiments.report.table.cells import contrast_cells, estimate_cells
from experiments.report.table.design import (
    check_alpha,
    check_margins,
    check_metrics,
    constants,
    design_frame,
    status_note,
)
from experiments.report.table.metrics import DEFAULT_METRICS

__all__ = ["ALPHA", "Confirmed", "Table", "summarize"]

ALPHA = 0.05
"""The default significance level: a cell is bold when its Holm-adjusted p is below it."""


@dataclasses.dataclass(frozen=True)
class Confirmed:
    """A confirmatory cell of the table: the arm's group and the metric."""

    group: str
    metric: str


@dataclasses.dataclass(frozen=True)
class Table:
    """What :func:`summarize` gives: the numeric rows and everything needed to read them.

    Attributes:
      rows: one row per group. Columns: the group keys; ``group``; ``runs`` (all statuses);
        ``seeds`` (runs of the design); ``excluded`` (the others) and ``excluded_note`` (e.g.
        ``"1 failed, 1 running"``); ``is_baseline``; ``stratum`` (an index) and
        ``stratum_label``. Per metric ``m``: ``m`` (the statistic, the rate k/n, or the
        cumulative incidence by the end), ``m_n`` (runs with a value), ``m_ci_low``,
        ``m_ci_high``; ``m_k`` for a rate (events) and steps to threshold (runs that reached it
        before diverging); ``m_imputed`` for a final return (runs given the declared return);
        and the contrast: ``m_delta``, ``m_delta_low``, ``m_delta_high``, ``m_p``,
        ``m_p_adjusted``, ``m_m`` (its family's size), ``m_confirmatory``, ``m_bold``
        (``m_p_adjusted < alpha``). Per metric with a margin: ``m_margin``, ``m_tost_p``,
        ``m_tost_p_adjusted`` (Holm, in the same families), ``m_equiv_low``, ``m_equiv_high``
        (the 1 - 2 alpha interval of Δ) and ``m_verdict``.
      metrics: the metrics shown, in order (names in
        :data:`~experiments.report.table.metrics.METRICS`).
      stat: the statistic of the value metrics.
      baseline: ``KEY=VALUE`` of the baseline; None: no contrast.
      ablation: the folder's ablation (the LaTeX label), or None.
      group_keys: the keys that define a group.
      shown_keys: the group keys that vary (the others are in ``constants``).
      constants: settings every run shares (key -> value), the task included.
      compared_key: the key compared within a stratum; None: no contrast.
      strata_keys: the keys that vary besides the compared one.
      confidence: the level of every interval.
      alpha: the significance level of bold.
      analysis: ``independent`` or ``paired``.
      rate_test: the exact test of two rates.
      m: metric -> stratum label -> the exploratory family's size.
      confirmatory: the declared confirmatory cells.
      diverged_return: task -> the return a diverged run counted as.
      excluded: the runs outside the design by status (``"1 failed, 1 running"``).
      counting: sentences naming the job folders without a summary, the runs without a shown
        figure and the duplicates left out
        (:func:`~experiments.report.runs.counting.counting_notes`).
      threshold: the one declared threshold of the runs, else None.
      no_threshold: no run has one (failed = unstable).
      margins: metric -> its declared equivalence :class:`Margin`.
      threshold_recorded: the one threshold the runs recorded (``failed_v1``), else None.
      no_threshold_recorded: no run recorded one.
      audit: why a study's folder declares nothing confirmatory (its audit fails), or None.
    """

    rows: pd.DataFrame
    metrics: tuple[str, ...]
    stat: str
    baseline: str | None
    ablation: str | None
    group_keys: tuple[str, ...]
    shown_keys: tuple[str, ...]
    constants: dict[str, str]
    compared_key: str | None
    strata_keys: tuple[str, ...]
    confidence: float
    alpha: float
    analysis: str
    rate_test: str
    m: dict[str, dict[str, int]]
    confirmatory: tuple[Confirmed, ...]
    diverged_return: dict[str, float]
    excluded: str
    counting: tuple[str, ...]
    threshold: float | None
    no_threshold: bool
    margins: dict[str, Margin]
    threshold_recorded: float | None
    no_threshold_recorded: bool
    audit: str | None = None

    def to_markdown(self) -> str:
        """The table as ``gradlab table`` prints it (Markdown, caption below)."""
        from experiments.report.table.render import render

        return render(self, fmt="md")

    def to_latex(self, *, methods: str = "short", layout: str = "compact") -> str:
        """The table as ``gradlab table -f latex`` writes it (``methods="full"``: as with
        ``--caption full``, the method text after the floats; ``layout="full"``: as with
        ``--layout full``, every endpoint with Δ and its CI)."""
        from experiments.report.table.render import render

        return render(self, fmt="latex", methods=methods, layout=layout)

    def to_html(self) -> str:
        """The Markdown table's cells as an HTML table, its caption below."""
        from experiments.report.table.render import render

        return render(self, fmt="html")

    def _repr_markdown_(self) -> str:  # Jupyter shows the table as the CLI prints it
        return self.to_markdown()

    def _repr_html_(self) -> str:  # what Jupyter prefers: the same cells, bold the same
        return self.to_html()


@dataclasses.dataclass(frozen=True)
class _Plan:
    """Who is contrasted with whom: the group keys, the baseline ``(key, value)``, the compared
    key and the strata keys."""

    keys: list[str]
    base: tuple[str, str] | None
    compared: str | None
    strata_keys: list[str]


def _plan(results: Results, baseline: str | None) -> _Plan:
    keys = list(results.group_keys)
    varying = varying_keys(results.runs, keys)
    base = resolve_baseline(results, baseline, varying)
    compared = compared_key(varying, base)
    strata_keys = [k for k in varying if k != compared] if compared is not None else []
    return _Plan(keys, base, compared, strata_keys)


def _rows(
    runs: pd.DataFrame, design: pd.DataFrame, plan: _Plan, metrics: Sequence[str],
    options: ContrastOptions, margins: Mapping[str, Margin], alpha: float,
) -> tuple[pd.DataFrame, dict[str, int]]:  # fmt: skip
    """One row per group (the baseline first within its stratum, strata in the folder's order),
    and stratum label -> its index."""
    groups = list(runs.groupby("group", sort=False))
    arms = {label: design[design["group"] == label] for label, _ in groups}
    rows, stratum_ids = [], {}
    for label, members in groups:
        group = {k: members[k].iloc[0] for k in plan.keys}
        stratum_label = group_label({k: group[k] for k in plan.strata_keys})
        stratum = stratum_ids.setdefault(stratum_label, len(stratum_ids))
        runs_of_arm = arms[label]
        row = {**group, "group": label, "runs": len(members), "seeds": len(runs_of_arm)}
        row["excluded"] = len(members) - len(runs_of_arm)
        row["excluded_note"] = status_note(members["status"])
        row["is_baseline"] = plan.base is not None and group[plan.base[0]] == plan.base[1]
        row.update(stratum=stratum, stratum_label=stratum_label)
        for name in metrics:
            row.update(estimate_cells(name, runs_of_arm, options))
        if plan.base is not None and not row["is_baseline"]:
            base_runs = _baseline_runs(arms, design, plan.base, group, label, stratum_label)
            row.update(_contrasts(runs_of_arm, base_runs, metrics, options, margins, alpha,
                                  where=f"'{stratum_label}': {group[plan.base[0]]} vs "
                                  f"{plan.base[1]}"))  # fmt: skip
        rows.append(row)
    table = pd.DataFrame(rows)
    table = table.sort_values(["stratum", "is_baseline"], ascending=[True, False], kind="stable")
    return table.reset_index(drop=True), stratum_ids


def _baseline_runs(
    arms: dict[str, pd.DataFrame], design: pd.DataFrame, base: tuple[str, str], group: dict,
    label: str, stratum_label: str,
) -> pd.DataFrame:  # fmt: skip
    """The runs of the baseline in the arm's stratum; one ConfigError if it has none."""
    base_label = group_label({**group, base[0]: base[1]})
    if base_label not in arms or arms[base_label].empty:
        choices = sorted({str(v) for v in design[base[0]]} - {base[1]})
        raise ConfigError(
            f"baseline {base[0]}={base[1]} has no completed or diverged run in stratum "
            f"'{stratum_label}', so '{label}' has nothing to be contrasted with; pass "
            f"--baseline with one of: {', '.join(choices) or '(none)'}"
        )
    return arms[base_label]


def _contrasts(
    arm_runs: pd.DataFrame, base_runs: pd.DataFrame, metrics: Sequence[str],
    options: ContrastOptions, margins: Mapping[str, Margin], alpha: float, *, where: str,
) -> dict:  # fmt: skip
    """An arm's contrast cells with its baseline in every metric (runs paired by seed in a paired
    analysis), and the equivalence cells of a metric with a margin."""
    if options.analysis == "paired":
        arm_runs, base_runs = pair_by_seed(arm_runs, base_runs, where=where)
    out = {}
    for name in metrics:
        out.update(contrast_cells(name, arm_runs, base_runs, options))
        if name in margins:
            x, y = arm_runs[name].to_numpy(dtype=float), base_runs[name].to_numpy(float)
            out.update(equivalence_cells(name, x, y, margins[name], alpha=alpha))
    return out


def _confirmatory_rows(
    table: pd.DataFrame, confirmatory: Sequence[Confirmatory], *, compared: str | None,
    keys: Sequence[str], metrics: Sequence[str],
) -> list[tuple[int, str]]:  # fmt: skip
    """The ``(row, metric)`` of each declared confirmatory contrast."""
    arms = table[~table["is_baseline"]]
    if confirmatory and compared is None:
        raise ConfigError("a confirmatory contrast needs a baseline; the table has none")
    cells = []
    for stratum, arm, metric in confirmatory:
        if metric not in metrics:
            raise unknown_choice("confirmatory metric", metric, metrics)
        for key in stratum:
            if key not in keys:
                raise unknown_choice("confirmatory stratum key", key, keys)
        match = arms[arms[compared].astype(str) == str(arm)]
        for key, value in stratum.items():
            match = match[match[key].astype(str) == str(value)]
        if len(match) != 1:
            wanted = group_label({**{k: str(v) for k, v in stratum.items()}, compared: str(arm)})
            raise unknown_choice("confirmatory contrast", wanted, arms["group"].tolist())
        cells.append((int(match.index[0]), metric))
    if len(set(cells)) < len(cells):
        raise ConfigError("a confirmatory contrast is declared twice")
    return cells


def _families(
    table: pd.DataFrame, metrics: Sequence[str], cells: list[tuple[int, str]],
    strata: Sequence[str], alpha: float,
) -> dict[str, dict[str, int]]:  # fmt: skip
    """Holm within each family, into ``table``: ``m_p_adjusted``, ``m_m``, ``m_confirmatory`` and
    ``m_bold`` per metric (a contrast-less table gets NaN contrast columns first). Returns metric
    -> stratum label -> the exploratory family's size."""
    sizes: dict[str, dict[str, int]] = {}
    for name in metrics:
        if f"{name}_p" not in table:
            for suffix in ("delta", "delta_low", "delta_high", "p"):
                table[f"{name}_{suffix}"] = np.nan
        sure = {i for i, metric in cells if metric == name}
        families = [("confirmatory", i) if i in sure else ("stratum", s)
                    for i, s in enumerate(table["stratum"])]  # fmt: skip
        adjusted, m = adjust(table[f"{name}_p"].to_numpy(dtype=float), families)
        table[f"{name}_p_adjusted"], table[f"{name}_m"] = adjusted, m
        table[f"{name}_confirmatory"] = [i in sure for i in range(len(table))]
        table[f"{name}_bold"] = np.nan_to_num(adjusted, nan=1.0) < alpha
        exploratory = table[~table[f"{name}_confirmatory"]]
        sizes[name] = {
            label: int(exploratory.loc[exploratory["stratum_label"] == label, f"{name}_p"]
                       .notna().sum())
            for label in strata
        }  # fmt: skip
    return sizes


def _one(values: np.ndarray) -> float | None:
    """The one value of ``values`` as a float, else None."""
    return float(values[0]) if len(values) == 1 else None


def summarize(
    results: Results,
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    stat: str = "mean",
    baseline: str | None = None,
    analysis: str = "independent",
    rate_test: str = "fisher",
    alpha: float = ALPHA,
    diverged_return: float | None = None,
    confirmatory: Sequence[Confirmatory] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
    margins: Mapping[str, Margin] | None = None,
) -> Table:
    """One row per group: each metric over its runs, and its contrast with the stratum's baseline.

    Args:
      results: from :func:`~experiments.report.runs.results.load_results`.
      metrics: names in :data:`~experiments.report.table.metrics.METRICS`.
      stat: ``mean``, ``iqm`` or ``median`` (of the value metrics and their differences).
      baseline: ``VALUE`` (of the ``variant`` key, or of the only key that varies) or
        ``KEY=VALUE``; each group is contrasted with the group equal to it but for that key (its
        stratum's baseline). None: ``variant=none`` if present, else no contrast.
      analysis: ``independent`` (arms as two samples) or ``paired`` (runs matched by seed within
        the stratum; a seed in one arm only is an error).
      rate_test: ``fisher`` or ``barnard``: the exact test of two rates (independent analysis).
      alpha: a cell is bold when its Holm-adjusted p is below it.
      diverged_return: the return a diverged run (or one without a final return) counts as in
        the final returns; None: the task registry's random-policy return.
      confirmatory: pre-registered contrasts ``(stratum, arm, metric)``, each tested alone (a
        family of m = 1); every other contrast is exploratory (Holm within its stratum).
      confidence: the level of every interval.
      n_resamples: bootstrap resamples per interval.
      seed: seeds each interval's generator (same folder, same table).
      margins: metric -> its declared equivalence margin
        (:mod:`~experiments.report.statistics.equivalence`): that metric's contrasts also get two
        one-sided tests against ±margin, the (1 - 2 alpha) interval of Δ and a verdict.

    Returns:
      The :class:`Table`: its rows and what they mean.

    Raises:
      ConfigError: an unknown metric, statistic, analysis, test, baseline or confirmatory
        contrast; alpha outside (0, 1); no run of the design; a stratum whose baseline has no run;
        unmatched seeds in a paired analysis; a diverged run whose task declares no return; steps
        to threshold on a run whose summary lacks the steps it needs (``steps``,
        ``diverged_step``).
    """
    check_metrics(metrics)
    check_choice("statistic", stat, tuple(STATS))
    check_choice("analysis", analysis, ANALYSES)
    check_choice("rate test", rate_test, RATE_TESTS)
    alpha = check_alpha(alpha)
    margins = check_margins(margins or {}, metrics, analysis)
    runs = results.runs
    if not runs["status"].isin(AVERAGED).any():
        raise ConfigError(
            f"no completed or diverged run in '{results.root}' (none to average): "
            f"{status_note(runs['status'])}"
        )
    plan = _plan(results, baseline)
    if margins and plan.base is None:
        raise ConfigError("an equivalence margin needs a baseline to contrast with: --baseline")
    design, declared = design_frame(runs, metrics, diverged_return)
    options = ContrastOptions(analysis, rate_test, stat, confidence, n_resamples, seed)
    table, strata = _rows(runs, design, plan, metrics, options, margins, alpha)
    cells = _confirmatory_rows(
        table, confirmatory or [], compared=plan.compared, keys=plan.keys, metrics=metrics
    )
    sizes = _families(table, metrics, cells, list(strata), alpha)
    fixed = constants(results)
    return Table(
        rows=with_verdicts(table, margins, alpha=alpha),
        metrics=tuple(metrics),
        stat=stat,
        baseline=None if plan.base is None else f"{plan.base[0]}={plan.base[1]}",
        ablation=results.ablation,
        group_keys=tuple(plan.keys),
        shown_keys=tuple(k for k in plan.keys if k not in fixed),
        constants=fixed,
        compared_key=plan.compared,
        strata_keys=tuple(plan.strata_keys),
        confidence=confidence,
        alpha=alpha,
        analysis=analysis,
        rate_test=rate_test,
        m=sizes,
        confirmatory=tuple(Confirmed(str(table.at[i, "group"]), n) for i, n in cells),
        diverged_return=declared,
        excluded=status_note(runs["status"]),
        counting=tuple(counting_notes(runs, metrics, results.duplicates)),
        threshold=_one(runs["threshold"].dropna().unique()),
        no_threshold=runs["threshold"].dropna().empty,
        margins=dict(margins),
        threshold_recorded=_one(runs["threshold_recorded"].dropna().unique()),
        no_threshold_recorded=runs["threshold_recorded"].dropna().empty,
    )
