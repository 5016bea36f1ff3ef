"""Seeds -> one row of statistics per group, with tests against the baseline and the bold rule.

:func:`summarize` builds the numeric table (a DataFrame, one row per group);
:mod:`experiments.report.render` turns it into Markdown, LaTeX, CSV or JSON.

What a row holds (runs of the group whose status is in
:data:`~experiments.report.results.AVERAGED`; the others are counted in ``not_averaged``, never
averaged):

* a **rate** (``unstable``, ``diverged``, ``collapsed``, ``reached_threshold``: 0/1 per run):
  ``k`` of ``n`` runs (runs where it is undefined left out of n), with the exact Clopper-Pearson
  interval, and a two-sided Fisher's exact test of ``k/n`` against the baseline's;
* any other figure: the statistic over seeds (``--stat``) with a seeded percentile-bootstrap
  interval, the probability of improvement over the baseline, and a two-sided Mann-Whitney U test
  against the baseline's seeds.

The baseline of a row is the group equal to it but for the baseline key (default ``variant=none``),
so comparisons stay within a stratum (e.g. one ``regime``). The p-values of one column are
Holm-Bonferroni adjusted over the rows compared with a baseline in the table.

Bold rule (option "best and not significantly worse"): in each column with a direction and each
stratum, the best value is bold, and so is every row not significantly worse than it: the row is
tested against the best row (Fisher's exact test for rates, Mann-Whitney U otherwise, two-sided),
the p-values Holm-adjusted over the rows compared with the best in that stratum, and a row is
significantly worse when its adjusted p < :data:`ALPHA`. When that would bold every row of the
stratum (nothing separates them, the common case with a handful of seeds) none is bold. Why this
rule rather than "bold only what is significantly best": with 3 to 10 seeds almost nothing is
significantly best, so that rule would leave nearly every table plain and a reader could not tell
"tied" from "not run"; this rule says which rows the data do set apart, and never singles out a
best that is within noise of the others.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pandas as pd

from experiments.errors import ConfigError, unknown_choice
from experiments.report.results import AVERAGED, Results, group_label
from experiments.report.significance import fisher_p, holm, mann_whitney_p
from experiments.report.stats import (
    STATS,
    binomial_ci,
    bootstrap_ci,
    probability_of_improvement,
    statistic,
)
from experiments.store import STATUSES

__all__ = [
    "ALPHA",
    "DEFAULT_METRICS",
    "METRICS",
    "Metric",
    "compared_key",
    "summarize",
    "varying_keys",
]

ALPHA = 0.05
"""Significance level of the bold rule (after the Holm adjustment)."""


@dataclasses.dataclass(frozen=True)
class Metric:
    """How a stability figure is summarised and shown.

    Attributes:
      header: two short header lines (the LaTeX table stacks them; Markdown joins them).
      higher_is_better: the direction for bold and P(better); None: no direction (no bold).
      rate: a 0/1 verdict per run, summarised as k/n with an exact interval and Fisher's test.
    """

    header: tuple[str, str]
    higher_is_better: bool | None
    rate: bool = False

    @property
    def label(self) -> str:
        """The header as one line, e.g. ``steps to threshold``."""
        return " ".join(h for h in self.header if h)


METRICS = {
    "unstable": Metric(("unstable", ""), False, rate=True),
    "diverged": Metric(("diverged", ""), False, rate=True),
    "collapsed": Metric(("collapsed", ""), False, rate=True),
    "reached_threshold": Metric(("reached", "threshold"), True, rate=True),
    "final_return": Metric(("final", "return"), True),
    "final_return_last": Metric(("last", "return"), True),
    "best_return": Metric(("best", "return"), True),
    "final_evals": Metric(("final", "evals"), None),
    "return_auc": Metric(("return", "AUC"), True),
    "steps_to_threshold": Metric(("steps to", "threshold"), False),
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
"""The table's metrics (stability figure name -> display); see :mod:`experiments.metrics`."""

DEFAULT_METRICS = (
    "unstable",
    "final_return",
    "steps_to_threshold",
    "grad_norm_p99",
    "hidden_norm_growth",
)


def _resolve_baseline(
    results: Results, baseline: str | None, keys: Sequence[str]
) -> tuple[str, str] | None:
    """``(key, value)`` the baseline groups share; None if no baseline is asked or found. A bare
    ``VALUE`` is one of ``variant``'s, or of the only key that varies (``keys``: the group keys
    that vary, :func:`varying_keys`); ``KEY=VALUE`` any group key's."""
    runs = results.runs
    if baseline is None:
        if "variant" in keys and (runs["variant"] == "none").any():
            return "variant", "none"
        return None
    if "=" in baseline:
        key, value = (s.strip() for s in baseline.split("=", 1))
        if key not in results.group_keys:
            raise unknown_choice("baseline key", key, results.group_keys)
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


def compared_key(keys: Sequence[str], base: tuple[str, str] | None) -> str | None:
    """The key whose values are compared within a stratum: the baseline's, else ``variant``, else
    the only key; None: the whole table is one stratum.

    ``keys`` are the keys that *vary* across the runs: a key a sweep holds constant (e.g.
    ``variant=scale_gradient`` in ``ablation=scale_placement``) compares nothing, and making it
    the compared key would put every row in a stratum of its own (see :func:`varying_keys`)."""
    if base is not None:
        return base[0]
    if "variant" in keys:
        return "variant"
    return keys[0] if len(keys) == 1 else None


def varying_keys(runs: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """The group keys with more than one value among ``runs``."""
    return [k for k in keys if runs[k].nunique(dropna=False) > 1]


def status_note(statuses: pd.Series) -> str:
    """``"1 failed, 1 running"``: the runs of each status outside :data:`AVERAGED`."""
    counts = statuses.value_counts()
    return ", ".join(f"{counts[s]} {s}" for s in STATUSES if s not in AVERAGED and counts.get(s, 0))


def _constants(results: Results) -> dict[str, str]:
    """Settings every run shares: group keys with one value, and the task when not a key."""
    runs = results.runs
    out = {k: str(runs[k].iloc[0]) for k in results.group_keys if runs[k].nunique() == 1}
    tasks = runs["task"].dropna().unique()
    if "task" not in results.group_keys and len(tasks) == 1:
        out["task"] = str(tasks[0])
    return out


def _rate(x: np.ndarray) -> tuple[int, int]:
    """``(k, n)``: runs with the verdict 1, and runs where it is defined."""
    defined = x[np.isfinite(x)]
    return int((defined >= 0.5).sum()), len(defined)


def _compare(name: str, x: np.ndarray, y: np.ndarray) -> float:
    """Two-sided p-value of the per-run values ``x`` against ``y`` (Fisher or Mann-Whitney)."""
    if METRICS[name].rate:
        return fisher_p(*_rate(x), *_rate(y))
    return mann_whitney_p(x, y)


def _cells(name: str, x: np.ndarray, *, stat: str, confidence: float, **boot) -> dict:
    """The estimate of one metric over one group's runs ``x`` ``[N]``, with its interval."""
    if METRICS[name].rate:
        k, n = _rate(x)
        low, high = binomial_ci(k, n, confidence=confidence)
        rate = k / n if n else float("nan")
        return {name: rate, f"{name}_k": k, f"{name}_n": n,
                f"{name}_ci_low": low, f"{name}_ci_high": high}  # fmt: skip
    low, high = bootstrap_ci(x, stat=stat, confidence=confidence, **boot)
    return {name: statistic(x, stat=stat), f"{name}_n": int(np.isfinite(x).sum()),
            f"{name}_ci_low": low, f"{name}_ci_high": high}  # fmt: skip


def _bold(table: pd.DataFrame, values: dict, name: str, strata: list[list[int]]) -> pd.Series:
    """The bold flags of one column (the rule in the module docstring)."""
    bold = pd.Series(False, index=table.index)
    direction = METRICS[name].higher_is_better
    if direction is None:
        return bold
    for rows in strata:
        have = [i for i in rows if table.at[i, f"{name}_n"] > 0 and np.isfinite(table.at[i, name])]
        estimates = table.loc[have, name]
        if len(have) < 2 or estimates.min() == estimates.max():
            continue  # nothing to compare, or all tied: nothing stands out
        best = estimates.max() if direction else estimates.min()
        top = [i for i in have if estimates[i] == best]
        others = [i for i in have if i not in top]
        p = holm([_compare(name, values[i][name], values[top[0]][name]) for i in others])
        kept = top + [i for i, q in zip(others, p, strict=True) if not q < ALPHA]
        if len(kept) < len(have):
            bold[kept] = True
    return bold


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
    """One row per group with the statistics of each metric over its averaged runs.

    Args:
      results: from :func:`~experiments.report.results.load_results`.
      metrics: names in :data:`METRICS`.
      stat: ``mean``, ``iqm`` or ``median`` (of the non-rate metrics; a rate is always k/n).
      baseline: ``VALUE`` (of the ``variant`` key, or of the only group key) or ``KEY=VALUE``; each
        group is compared with the group equal to it but for that key. None: ``variant=none`` if
        present, else no comparison.
      confidence: the level of every interval.
      n_resamples: bootstrap resamples per interval.
      seed: seeds each interval's generator (same folder, same table).

    Returns:
      Columns: the group keys; ``group``; ``runs`` (all statuses); ``seeds`` (averaged runs);
      ``not_averaged`` (their count) and ``not_averaged_note`` (e.g. ``"1 failed, 1 running"``);
      ``is_baseline``; ``stratum`` (an index: rows compared with each other). Per metric ``m``:
      ``m`` (the statistic, or the rate k/n), ``m_n`` (runs with a value), ``m_ci_low``,
      ``m_ci_high``, ``m_p`` (the test against the baseline; NaN without one), ``m_p_adjusted``
      (Holm over the column), ``m_bold``; a rate adds ``m_k``, other metrics ``m_p_better``.
      ``attrs``: ``metrics``, ``stat``, ``baseline``, ``ablation``, ``group_keys``, ``shown_keys``
      (the keys that vary), ``constants`` (key -> the value every run shares), ``compared_key``,
      ``confidence``, ``alpha``, ``compared`` (metric -> rows in its Holm family),
      ``not_averaged``, ``threshold`` (when every run shares one).

    Raises:
      ConfigError: an unknown metric, statistic or baseline, or no averaged run in the folder.
    """
    for name in metrics:
        if name not in METRICS:
            raise unknown_choice("metric", name, METRICS)
    if stat not in STATS:
        raise unknown_choice("statistic", stat, STATS)
    if not metrics:
        raise ConfigError(f"no metric chosen; choose from: {', '.join(METRICS)}")
    runs = results.runs
    if not runs["status"].isin(AVERAGED).any():
        raise ConfigError(
            f"no completed or diverged run in '{results.root}' (none to average): "
            f"{status_note(runs['status'])}"
        )
    keys = list(results.group_keys)
    varying = varying_keys(runs, keys)
    base = _resolve_baseline(results, baseline, varying)
    compared = compared_key(varying, base)
    strata_keys = [k for k in varying if k != compared] if compared is not None else []
    groups = list(runs.groupby("group", sort=False))
    averaged = {label: m[m["status"].isin(AVERAGED)] for label, m in groups}
    rows, values, stratum_ids = [], [], {}
    for label, members in groups:
        finished = averaged[label]
        group = {k: members[k].iloc[0] for k in keys}
        stratum = stratum_ids.setdefault(tuple(group[k] for k in strata_keys), len(stratum_ids))
        row = {**group, "group": label, "runs": len(members), "seeds": len(finished)}
        row["not_averaged"] = len(members) - len(finished)
        row["not_averaged_note"] = status_note(members["status"])
        row["is_baseline"] = base is not None and group[base[0]] == base[1]
        row["stratum"] = stratum
        base_runs = None
        if base is not None:
            base_label = group_label({**group, base[0]: base[1]})
            if base_label != label and base_label in averaged:
                base_runs = averaged[base_label]
        x = {name: finished[name].to_numpy(dtype=float) for name in metrics}
        for name in metrics:
            boot = {"n_resamples": n_resamples, "seed": seed}
            row.update(_cells(name, x[name], stat=stat, confidence=confidence, **boot))
            y = None if base_runs is None else base_runs[name].to_numpy(dtype=float)
            row[f"{name}_p"] = float("nan") if y is None else _compare(name, x[name], y)
            if not METRICS[name].rate:
                direction = METRICS[name].higher_is_better
                row[f"{name}_p_better"] = (
                    probability_of_improvement(x[name], y, higher_is_better=direction)
                    if y is not None and direction is not None
                    else float("nan")
                )
        rows.append(row)
        values.append(x)
    table = pd.DataFrame(rows)
    strata = [list(table.index[table["stratum"] == s]) for s in range(len(stratum_ids))]
    compared_rows = {}
    for name in metrics:
        table[f"{name}_p_adjusted"] = holm(table[f"{name}_p"].to_numpy(dtype=float))
        table[f"{name}_bold"] = _bold(table, dict(enumerate(values)), name, strata)
        compared_rows[name] = int(table[f"{name}_p"].notna().sum())
    # the baseline row first within its stratum; strata in the folder's order
    table = table.sort_values(["stratum", "is_baseline"], ascending=[True, False], kind="stable")
    table = table.reset_index(drop=True)
    constants = _constants(results)
    thresholds = runs["threshold"].dropna().unique()
    table.attrs.update(
        metrics=list(metrics),
        stat=stat,
        baseline=None if base is None else f"{base[0]}={base[1]}",
        ablation=results.ablation,
        group_keys=keys,
        shown_keys=[k for k in keys if k not in constants],
        constants=constants,
        compared_key=compared,
        confidence=confidence,
        alpha=ALPHA,
        compared=compared_rows,
        not_averaged=status_note(runs["status"]),
        threshold=float(thresholds[0]) if len(thresholds) == 1 else None,
    )
    return table
