"""One group's cells of a metric: the estimate with its interval, and the contrast with its
stratum's baseline.

Per metric, a group's estimate is:

* a **rate** (0/1 per run): ``k`` of ``n`` runs (a run where the verdict is undefined is left out
  of n) with the exact Clopper-Pearson interval;
* **steps to threshold**, reaching the threshold with divergence as a competing event
  (:mod:`experiments.report.statistics.competing`): the Aalen-Johansen cumulative incidence of
  reaching it (before diverging) by the end of the budget, over every run, with its log(-log)
  interval and ``k`` (runs that reached it first) of ``n``;
* any other figure: the statistic over runs (``stat``) with a seeded percentile-bootstrap interval.

And an arm's contrast (:mod:`~experiments.report.statistics.contrasts`): the difference
(``_delta``) with its interval and the p-value of the declared test (``_p``; Gray's test for steps
to threshold, whose Δ is the difference of the two cumulative incidences by the end, with a MOVER
interval).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from experiments.report.statistics.competing import (
    Incidence,
    cumulative_incidence,
    gray_test,
    incidence_difference,
)
from experiments.report.statistics.contrasts import ContrastOptions, contrast
from experiments.report.statistics.intervals import binomial_ci, bootstrap_ci, statistic
from experiments.report.table.metrics import METRICS

__all__ = ["contrast_cells", "estimate_cells"]


def _incidence(runs: pd.DataFrame, confidence: float) -> Incidence:
    """The cumulative incidence of reaching the threshold before diverging, by the end of the
    budget (the largest step a run of ``runs`` was watched to)."""
    time, cause = runs["_time"].to_numpy(dtype=float), runs["_cause"].to_numpy(dtype=int)
    return cumulative_incidence(time, cause, confidence=confidence)


def estimate_cells(name: str, runs: pd.DataFrame, options: ContrastOptions) -> dict:
    """The estimate of one metric over one group's runs, with its interval (``options``: the
    statistic, the level, the bootstrap's resamples and seed).

    Returns:
      ``{m, m_n, m_ci_low, m_ci_high}``, with ``m_k`` for a rate and steps to threshold, and
      ``m_imputed`` for a final return.
    """
    kind = METRICS[name].kind
    confidence = options.confidence
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
    stat = options.stat
    low, high = bootstrap_ci(
        x, stat=stat, confidence=confidence, n_resamples=options.n_resamples, seed=options.seed
    )
    out = {name: statistic(x, stat=stat), f"{name}_n": int(np.isfinite(x).sum()),
           f"{name}_ci_low": low, f"{name}_ci_high": high}  # fmt: skip
    if METRICS[name].itt:
        out[f"{name}_imputed"] = int(runs[f"{name}_imputed"].sum())
    return out


def contrast_cells(
    name: str, arm: pd.DataFrame, base: pd.DataFrame, options: ContrastOptions
) -> dict:
    """The contrast of one metric, arm minus baseline: ``{m_delta, m_delta_low, m_delta_high,
    m_p}``."""
    kind = METRICS[name].kind
    if kind == "time":
        both = pd.concat([arm, base])
        group = np.repeat([0, 1], [len(arm), len(base)])
        p = gray_test(both["_time"].to_numpy(float), both["_cause"].to_numpy(int), group).p
        confidence = options.confidence
        delta, low, high = incidence_difference(
            _incidence(arm, confidence), _incidence(base, confidence)
        )
    else:
        x, y = arm[name].to_numpy(dtype=float), base[name].to_numpy(dtype=float)
        delta, low, high, p = contrast(kind, x, y, options)
    return {f"{name}_delta": delta, f"{name}_delta_low": low, f"{name}_delta_high": high,
            f"{name}_p": p}  # fmt: skip
