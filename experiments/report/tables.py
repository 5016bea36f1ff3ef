"""Seeds -> one row of statistics per group, each arm contrasted with its stratum's baseline.

:func:`summarize` builds the numeric table (a DataFrame, one row per group);
:mod:`experiments.report.render` turns it into Markdown, LaTeX, CSV or JSON;
:mod:`experiments.report.contrasts` holds the contrasts, their tests and the family.

The runs of the design are those whose status is in
:data:`~experiments.report.results.AVERAGED` (completed or diverged); every one of them counts
(intention to treat). A crashed, timed-out or unfinished run is not a run of the design: it is
counted in ``excluded``, never averaged. Per metric, a row holds:

* a **rate** (``failed``, ``lost_after_learning``, ``never_learned``, ``learned``, ``failed_v1``,
  ``unstable``, ``diverged``, ``collapsed``, ``reached_threshold``: 0/1
  per run): ``k`` of ``n`` runs (a run where the verdict is undefined is left out of n) with the
  exact Clopper-Pearson interval;
* **steps to threshold**, reaching the threshold with divergence as a competing event
  (:mod:`experiments.report.competing`): the Aalen-Johansen cumulative incidence of reaching it
  (before diverging) by the end of the budget, over every run, with its log(-log) interval and
  ``k`` (runs that reached it first) of ``n``;
* any other figure: the statistic over runs (``stat``) with a seeded percentile-bootstrap
  interval. The final returns count every run: a diverged run, or one without a final return,
  counts as the task's declared return for diverged runs
  (:func:`~experiments.report.results.intention_to_treat`).

And, on an arm's row, the contrast with its stratum's baseline
(:mod:`~experiments.report.contrasts`): the difference (``_delta``) with its interval, the p-value
of the declared test (``_p``; Gray's test for steps to threshold, whose Δ is the difference of the
two cumulative incidences by the end, with a MOVER interval), the
Holm-adjusted p-value within the contrast's family (``_p_adjusted``) and ``_bold``: exactly
``_p_adjusted < alpha``. Nothing else sets bold: no second test, no "best" row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.base.errors import ConfigError, unknown_choice
from experiments.jobs.summary import STATUSES
from experiments.report.competing import (
    Incidence,
    competing_times,
    cumulative_incidence,
    gray_test,
    incidence_difference,
)
from experiments.report.contrasts import (
    ANALYSES,
    RATE_TESTS,
    Confirmatory,
    adjust,
    check_choice,
    compared_key,
    pair_by_seed,
    rate_contrast,
    resolve_baseline,
    value_contrast,
    varying_keys,
)
from experiments.report.counting import counting_notes
from experiments.report.endpoints import OUTCOME_ENDPOINTS
from experiments.report.equivalence import Margin, equivalence_cells, with_verdicts
from experiments.report.results import AVERAGED, Results, group_label, intention_to_treat
from experiments.report.stats import STATS, binomial_ci, bootstrap_ci, statistic

__all__ = [
    "ALPHA",
    "DEFAULT_METRICS",
    "METRICS",
    "Metric",
    "check_alpha",
    "compared_key",
    "design_runs",
    "summarize",
    "varying_keys",
]

ALPHA = 0.05
"""The default significance level: a cell is bold when its Holm-adjusted p is below it."""


@dataclasses.dataclass(frozen=True)
class Metric:
    """How a stability figure is summarised and shown.

    Attributes:
      header: two short header lines (the LaTeX table stacks them; Markdown joins them).
      higher_is_better: the direction shown by the header's arrow; None: no direction.
      kind: ``rate`` (a 0/1 verdict per run: k/n, exact interval, risk difference), ``time``
        (reaching the threshold, divergence competing: cumulative incidence by the end of the
        budget, its difference, Gray's test) or ``value``.
      itt: the figure is a final return: a diverged run, or one without a value, counts as the
        declared return for diverged runs.
    """

    header: tuple[str, str]
    higher_is_better: bool | None
    kind: str = "value"
    itt: bool = False

    @property
    def rate(self) -> bool:
        """A 0/1 verdict per run."""
        return self.kind == "rate"

    @property
    def label(self) -> str:
        """The header as one line, e.g. ``steps to threshold``."""
        return " ".join(h for h in self.header if h)


METRICS = {
    "failed": Metric(("failed", ""), False, kind="rate"),
    "lost_after_learning": Metric(("lost after", "learning"), False, kind="rate"),
    "never_learned": Metric(("never", "learned"), False, kind="rate"),
    "learned": Metric(("learned", ""), True, kind="rate"),
    "failed_v1": Metric(("failed", "(v1)"), False, kind="rate"),
    "unstable": Metric(("unstable", ""), False, kind="rate"),
    "diverged": Metric(("diverged", ""), False, kind="rate"),
    "collapsed": Metric(("collapsed", ""), False, kind="rate"),
    "reached_threshold": Metric(("reached", "threshold"), True, kind="rate"),
    "final_return": Metric(("final", "return"), True, itt=True),
    "final_return_last": Metric(("last", "return"), True, itt=True),
    "best_return": Metric(("best", "return"), True),
    "final_evals": Metric(("final", "evals"), None),
    "return_auc": Metric(("return", "AUC"), True),
    "steps_to_threshold": Metric(("reached by", "end (CIF)"), True, kind="time"),
    "final_loss": Metric(("final", "loss"), False),
    "loss_auc": Metric(("loss", "AUC"), False),
    "grad_norm_median": Metric(("grad norm", "median"), False),
    "grad_norm_p99": Metric(("grad norm", "p99"), False),
    "grad_norm_max": Metric(("grad norm", "max"), False),
    "spike_count": Metric(("grad", "spikes"), False),
    "grad_hidden_ratio": Metric(("hidden", "grad K/0"), None),
    "hidden_norm_growth": Metric(("hidden", "norm K/0"), None),
    "wall_time_s": Metric(("wall", "time (s)"), False),
}
"""The table's metrics (figure name -> display); see :mod:`experiments.verdicts.stability` and
``failed`` in
:mod:`experiments.report.results`."""

DEFAULT_METRICS = (
    "failed",
    "lost_after_learning",
    "never_learned",
    "final_return",
    "steps_to_threshold",
    "grad_norm_p99",
)


def status_note(statuses: pd.Series) -> str:
    """``"1 failed, 1 running"``: the runs of each status outside :data:`AVERAGED`, then any
    status a summary cannot hold (a job folder without one: ``1 without summary``)."""
    counts = statuses.value_counts()
    known = [s for s in STATUSES if s not in AVERAGED]
    other = sorted(str(s) for s in counts.index if s not in STATUSES)
    return ", ".join(f"{counts[s]} {s}" for s in [*known, *other] if counts.get(s, 0))


def _constants(results: Results) -> dict[str, str]:
    """Settings every run shares: group keys with one value, and the task when not a key."""
    runs = results.runs
    out = {k: str(runs[k].iloc[0]) for k in results.group_keys if runs[k].nunique() == 1}
    tasks = runs["task"].dropna().unique()
    if "task" not in results.group_keys and len(tasks) == 1:
        out["task"] = str(tasks[0])
    return out


def check_alpha(alpha: float) -> float:
    """``alpha`` as a float in (0, 1), or one ConfigError naming it and the range."""
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0.0 < alpha < 1.0:
        raise ConfigError(
            f"alpha={alpha!r} is out of range; expected a number in (0, 1), e.g. 0.05"
        )
    return float(alpha)


def _design(runs: pd.DataFrame, metrics: Sequence[str], override: float | None) -> tuple:
    """The runs of the design with the intention-to-treat returns and the times to the threshold
    (``_time``, ``_event``) filled in; and the declared returns used (task -> value)."""
    design = runs[runs["status"].isin(AVERAGED)].copy()
    _check_thresholds(design, metrics)
    declared: dict[str, float] = {}
    for name in metrics:
        if METRICS[name].itt:
            values, imputed, used = intention_to_treat(design, name, override=override)
            design[name], design[f"{name}_imputed"] = values, imputed
            declared.update(used)
    if any(METRICS[name].kind == "time" for name in metrics):
        design["_time"], design["_cause"] = competing_times(design)
    return design, declared


def _check_thresholds(design: pd.DataFrame, metrics: Sequence[str]) -> None:
    """An outcome endpoint asked of runs whose task declares no competence threshold (``task=gym``
    with any gymnasium id): one line naming the task and the endpoints that need none."""
    wanted = [m for m in metrics if m in OUTCOME_ENDPOINTS]
    if not wanted or design.empty:
        return
    missing = design[design["threshold"].isna()]
    if missing.empty:
        return
    tasks = sorted({str(t) for t in missing["task"]})
    raise ConfigError(
        f"{wanted[0]} needs the task's competence threshold, and task {tasks[0]!r} declares none "
        f"({len(missing)} run(s), e.g. {Path(str(missing['path'].iloc[0])).name}); a registered "
        "task (catch, cartpole, a MinAtar game) has one; for this folder choose unstable, "
        "diverged, collapsed, final_return or another figure"
    )


def _incidence(runs: pd.DataFrame, confidence: float) -> Incidence:
    """The cumulative incidence of reaching the threshold before diverging, by the end of the
    budget (the largest step a run of ``runs`` was watched to)."""
    time, cause = runs["_time"].to_numpy(dtype=float), runs["_cause"].to_numpy(dtype=int)
    return cumulative_incidence(time, cause, confidence=confidence)


def design_runs(
    results: Results, metrics: Sequence[str], diverged_return: float | None = None
) -> pd.DataFrame:
    """The runs :func:`summarize` counts (completed or diverged), each metric as it counts it:
    a final return with the declared return for a diverged run, or one without a value.

    Raises:
      ConfigError: a diverged run whose task declares no return.
    """
    return _design(results.runs, metrics, diverged_return)[0]


def _cells(name: str, runs: pd.DataFrame, *, stat: str, confidence: float, **boot) -> dict:
    """The estimate of one metric over one group's runs, with its interval."""
    kind = METRICS[name].kind
    if kind == "time":
        cif = _incidence(runs, confidence)
        return {name: cif.estimate, f"{name}_k": cif.k, f"{name}_n": cif.n,
                f"{name}_ci_low": cif.low, f"{name}_ci_high": cif.high}  # fmt: skip
    x = runs[name].to_numpy(dtype=float)
    if kind == "rate":
        defined = x[np.isfinite(x)]
        k, n = int((defined >= 0.5).sum()), len(defined)
        low, high = binomial_ci(k, n, confidence=confidence)
        return {name: k / n if n else float("nan"), f"{name}_k": k, f"{name}_n": n,
                f"{name}_ci_low": low, f"{name}_ci_high": high}  # fmt: skip
    low, high = bootstrap_ci(x, stat=stat, confidence=confidence, **boot)
    out = {name: statistic(x, stat=stat), f"{name}_n": int(np.isfinite(x).sum()),
           f"{name}_ci_low": low, f"{name}_ci_high": high}  # fmt: skip
    if METRICS[name].itt:
        out[f"{name}_imputed"] = int(runs[f"{name}_imputed"].sum())
    return out


def _contrast(name: str, arm: pd.DataFrame, base: pd.DataFrame, **options) -> dict:
    """The contrast of one metric, arm minus baseline: ``_delta``, its interval, ``_p``."""
    kind = METRICS[name].kind
    if kind == "time":
        both = pd.concat([arm, base])
        group = np.repeat([0, 1], [len(arm), len(base)])
        p = gray_test(both["_time"].to_numpy(float), both["_cause"].to_numpy(int), group).p
        confidence = options["confidence"]
        delta, low, high = incidence_difference(
            _incidence(arm, confidence), _incidence(base, confidence)
        )
    else:
        x, y = arm[name].to_numpy(dtype=float), base[name].to_numpy(dtype=float)
        if kind == "rate":
            options.pop("stat")
            delta, low, high, p = rate_contrast(x, y, **options)
        else:
            options.pop("rate_test")
            delta, low, high, p = value_contrast(x, y, **options)
    return {f"{name}_delta": delta, f"{name}_delta_low": low, f"{name}_delta_high": high,
            f"{name}_p": p}  # fmt: skip


def _check_margins(
    margins: Mapping[str, Margin], metrics: Sequence[str], analysis: str
) -> dict[str, Margin]:
    """The margins, each of a rate or value metric of the table, in an independent analysis."""
    choices = [m for m in metrics if METRICS[m].kind != "time"]
    for name in margins:
        if name not in choices:
            raise unknown_choice("equivalence margin endpoint", name, choices)
    if margins and analysis != "independent":
        raise ConfigError(
            f"an equivalence margin needs --analysis independent (TOST of two independent "
            f"samples), not {analysis!r}"
        )
    return dict(margins)


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
) -> pd.DataFrame:
    """One row per group: each metric over its runs, and its contrast with the stratum's baseline.

    Args:
      results: from :func:`~experiments.report.results.load_results`.
      metrics: names in :data:`METRICS`.
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
        (:mod:`~experiments.report.equivalence`): that metric's contrasts also get two one-sided
        tests against ±margin, the (1 - 2 alpha) interval of Δ and a verdict.

    Returns:
      Columns: the group keys; ``group``; ``runs`` (all statuses); ``seeds`` (runs of the design);
      ``excluded`` (the others) and ``excluded_note`` (e.g. ``"1 failed, 1 running"``);
      ``is_baseline``; ``stratum`` (an index) and ``stratum_label``. Per metric ``m``: ``m`` (the
      statistic, the rate k/n, or the cumulative incidence by the end), ``m_n`` (runs with a value),
      ``m_ci_low``, ``m_ci_high``; ``m_k`` for a rate (events) and steps to threshold (runs that
      reached it before diverging); ``m_imputed`` for a final return (runs given the declared
      return); and the contrast: ``m_delta``, ``m_delta_low``, ``m_delta_high``,
      ``m_p``, ``m_p_adjusted``, ``m_m`` (its family's size), ``m_confirmatory``, ``m_bold``
      (``m_p_adjusted < alpha``). ``attrs``: ``metrics``, ``stat``, ``baseline``, ``ablation``,
      ``group_keys``, ``shown_keys``, ``constants``, ``compared_key``, ``strata_keys``,
      ``confidence``, ``alpha``, ``analysis``, ``rate_test``, ``m`` (metric -> stratum label ->
      the exploratory family's size), ``confirmatory`` (``[{"group", "metric"}]``),
      ``diverged_return`` (task -> the value used), ``excluded``, ``counting`` (sentences naming
      the job folders without a summary, the runs without a shown figure and the duplicates left
      out: :func:`~experiments.report.counting.counting_notes`), ``threshold`` (the one
      threshold of the runs, else None), ``no_threshold`` (no run has one: failed = unstable),
      ``margins`` (metric -> :class:`Margin`). Per metric with a margin: ``m_margin``,
      ``m_tost_p``, ``m_tost_p_adjusted`` (Holm, in the same families), ``m_equiv_low``,
      ``m_equiv_high`` (the 1 - 2 alpha interval of Δ) and ``m_verdict``.

    Raises:
      ConfigError: an unknown metric, statistic, analysis, test, baseline or confirmatory
        contrast; alpha outside (0, 1); no run of the design; a stratum whose baseline has no run;
        unmatched seeds in a paired analysis; a diverged run whose task declares no return; steps
        to threshold on a run whose summary lacks the steps it needs (``steps``,
        ``diverged_step``).
    """
    for name in metrics:
        if name not in METRICS:
            raise unknown_choice("metric", name, METRICS)
    if not metrics:
        raise ConfigError(f"no metric chosen; choose from: {', '.join(METRICS)}")
    check_choice("statistic", stat, tuple(STATS))
    check_choice("analysis", analysis, ANALYSES)
    check_choice("rate test", rate_test, RATE_TESTS)
    alpha = check_alpha(alpha)
    margins = _check_margins(margins or {}, metrics, analysis)
    runs = results.runs
    if not runs["status"].isin(AVERAGED).any():
        raise ConfigError(
            f"no completed or diverged run in '{results.root}' (none to average): "
            f"{status_note(runs['status'])}"
        )
    keys = list(results.group_keys)
    varying = varying_keys(runs, keys)
    base = resolve_baseline(results, baseline, varying)
    compared = compared_key(varying, base)
    if margins and base is None:
        raise ConfigError("an equivalence margin needs a baseline to contrast with: --baseline")
    strata_keys = [k for k in varying if k != compared] if compared is not None else []
    design, declared = _design(runs, metrics, diverged_return)
    groups = list(runs.groupby("group", sort=False))
    arms = {label: design[design["group"] == label] for label, _ in groups}
    boot = {"n_resamples": n_resamples, "seed": seed}
    options = {"analysis": analysis, "rate_test": rate_test, "stat": stat,
               "confidence": confidence, **boot}  # fmt: skip
    rows, stratum_ids = [], {}
    for label, members in groups:
        runs_of_arm = arms[label]
        group = {k: members[k].iloc[0] for k in keys}
        stratum_label = group_label({k: group[k] for k in strata_keys})
        stratum = stratum_ids.setdefault(stratum_label, len(stratum_ids))
        row = {**group, "group": label, "runs": len(members), "seeds": len(runs_of_arm)}
        row["excluded"] = len(members) - len(runs_of_arm)
        row["excluded_note"] = status_note(members["status"])
        row["is_baseline"] = base is not None and group[base[0]] == base[1]
        row.update(stratum=stratum, stratum_label=stratum_label)
        for name in metrics:
            row.update(_cells(name, runs_of_arm, stat=stat, confidence=confidence, **boot))
        if base is not None and not row["is_baseline"]:
            base_label = group_label({**group, base[0]: base[1]})
            if base_label not in arms or arms[base_label].empty:
                choices = sorted({str(v) for v in design[base[0]]} - {base[1]})
                raise ConfigError(
                    f"baseline {base[0]}={base[1]} has no completed or diverged run in stratum "
                    f"'{stratum_label}', so '{label}' has nothing to be contrasted with; pass "
                    f"--baseline with one of: {', '.join(choices) or '(none)'}"
                )
            arm_runs, base_runs = runs_of_arm, arms[base_label]
            if analysis == "paired":
                where = f"'{stratum_label}': {group[base[0]]} vs {base[1]}"
                arm_runs, base_runs = pair_by_seed(arm_runs, base_runs, where=where)
            for name in metrics:
                row.update(_contrast(name, arm_runs, base_runs, **options))
                if name in margins:
                    x, y = arm_runs[name].to_numpy(dtype=float), base_runs[name].to_numpy(float)
                    row.update(equivalence_cells(name, x, y, margins[name], alpha=alpha))
        rows.append(row)
    table = pd.DataFrame(rows)
    # the baseline row first within its stratum; strata in the folder's order
    table = table.sort_values(["stratum", "is_baseline"], ascending=[True, False], kind="stable")
    table = table.reset_index(drop=True)
    cells = _confirmatory_rows(
        table, confirmatory or [], compared=compared, keys=keys, metrics=metrics
    )
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
            for label in stratum_ids
        }  # fmt: skip
    table = with_verdicts(table, margins, alpha=alpha)
    constants = _constants(results)
    thresholds = runs["threshold"].dropna().unique()
    recorded = runs["threshold_recorded"].dropna().unique()
    table.attrs.update(
        metrics=list(metrics),
        stat=stat,
        baseline=None if base is None else f"{base[0]}={base[1]}",
        ablation=results.ablation,
        group_keys=keys,
        shown_keys=[k for k in keys if k not in constants],
        constants=constants,
        compared_key=compared,
        strata_keys=strata_keys,
        confidence=confidence,
        alpha=alpha,
        analysis=analysis,
        rate_test=rate_test,
        m=sizes,
        confirmatory=[{"group": table.at[i, "group"], "metric": n} for i, n in cells],
        diverged_return=declared,
        excluded=status_note(runs["status"]),
        counting=counting_notes(runs, metrics, results.duplicates),
        threshold=float(thresholds[0]) if len(thresholds) == 1 else None,
        no_threshold=len(thresholds) == 0,
        margins=dict(margins),
        threshold_recorded=float(recorded[0]) if len(recorded) == 1 else None,
        no_threshold_recorded=len(recorded) == 0,
    )
    return table
