"""An arm's contrast with the baseline pooled over strata (tasks, regimes, optimizers): the
statistics of ``gradlab pool``, whose table is :mod:`experiments.report.pool.across`.

The pooled test is the Cochran-Mantel-Haenszel test of a common odds ratio of 1 (no continuity
correction), with the Mantel-Haenszel pooled odds ratio and its Robins-Breslow-Greenland 95% CI,
and the Breslow-Day test of equal odds ratios across the strata (a small p: the effect differs
between strata, and a pooled figure hides it), all from statsmodels' ``StratifiedTable``; a
stratum whose 2x2 table has an empty row or no variation contributes nothing to the test and is
named. Beside them, as a small-sample check, the exact conditional test of the same null
(:func:`exact_conditional_p`: given every stratum's margins, the arm's total events follow the
convolution of the strata's hypergeometric distributions, scipy's ``hypergeom``), which needs
no large counts and is Fisher's exact test with one stratum.

Each stratum's 2x2 table is ``[[arm events, arm non-events], [baseline events, baseline
non-events]]``, so an odds ratio below 1 means fewer events (failures) in the arm.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TypeVar

import numpy as np

from experiments.base.errors import ConfigError

__all__ = [
    "PooledContrast",
    "Stratum",
    "exact_conditional_p",
    "informative_strata",
    "pooled_contrast",
]

S = TypeVar("S")


@dataclasses.dataclass(frozen=True)
class Stratum:
    """One stratum's counts for one arm against the baseline.

    Attributes:
      arm_events, arm_n: the arm's runs with the event, and its runs with a defined endpoint.
      base_events, base_n: the same for the baseline.
    """

    arm_events: int
    arm_n: int
    base_events: int
    base_n: int

    @property
    def table(self) -> np.ndarray:
        """``[[arm events, arm non-events], [baseline events, baseline non-events]]``."""
        return np.array(
            [
                [self.arm_events, self.arm_n - self.arm_events],
                [self.base_events, self.base_n - self.base_events],
            ],
            dtype=float,
        )

    @property
    def informative(self) -> bool:
        """Both rows non-empty and some run on each side of the event (else the stratum adds
        nothing to the CMH statistic)."""
        events = self.arm_events + self.base_events
        total = self.arm_n + self.base_n
        return self.arm_n > 0 and self.base_n > 0 and 0 < events < total


@dataclasses.dataclass(frozen=True)
class PooledContrast:
    """An arm against the baseline over several strata.

    Attributes:
      strata: the counts by stratum label.
      statistic: the CMH chi-square (1 degree of freedom), NaN when no stratum is informative.
      pvalue: its two-sided p (asymptotic); with one informative stratum, Fisher's exact p of
        that stratum instead (as ``gradlab table`` tests it).
      odds_ratio: the Mantel-Haenszel pooled odds ratio (arm vs baseline).
      odds_ratio_ci: its 95% CI (Robins-Breslow-Greenland).
      homogeneity_p: the Breslow-Day test of equal odds ratios across the strata, with Tarone's
        adjustment (NaN with fewer than two informative strata).
      left_out: the labels of strata that contributed nothing (an empty arm or no variation).
      test: what gave ``pvalue``: ``cmh``, ``fisher`` (one informative stratum; ``statistic``
        stays the CMH chi-square) or ``none``.
      exact_p: the exact conditional test's two-sided p over the informative strata
        (:func:`exact_conditional_p`; NaN when none is informative).
    """

    strata: Mapping[str, Stratum]
    statistic: float
    pvalue: float
    odds_ratio: float
    odds_ratio_ci: tuple[float, float]
    homogeneity_p: float
    left_out: tuple[str, ...]
    test: str = "cmh"
    exact_p: float = float("nan")


def exact_conditional_p(strata: Sequence[Stratum]) -> float:
    """The exact conditional test of a common odds ratio of 1 over ``strata``, two-sided.

    Given each stratum's margins, the arm's events there are hypergeometric under the null; their
    sum over the strata follows the convolution of those distributions. The p is the total
    probability of the sums no more likely than the observed one (the rule of scipy's two-sided
    ``fisher_exact``, to which it reduces with one stratum).
    """
    from scipy.stats import hypergeom

    pmf, low, observed = np.ones(1), 0, 0
    for s in strata:
        total, events, arm = s.arm_n + s.base_n, s.arm_events + s.base_events, s.arm_n
        first, last = max(0, events - (total - arm)), min(events, arm)
        pmf = np.convolve(pmf, hypergeom(total, events, arm).pmf(np.arange(first, last + 1)))
        low, observed = low + first, observed + s.arm_events
    at = pmf[observed - low]
    return float(min(1.0, pmf[pmf <= at * (1 + 1e-7)].sum()))


def informative_strata(strata: Mapping[str, S]) -> tuple[dict[str, S], tuple[str, ...]]:
    """The strata that add to a pooled test (``.informative``) and the labels of the others.

    Raises:
      ConfigError: no strata.
    """
    if not strata:
        raise ConfigError("a pooled contrast needs at least one stratum with both arms")
    used = {label: s for label, s in strata.items() if s.informative}
    return used, tuple(label for label in strata if label not in used)


def pooled_contrast(strata: Mapping[str, Stratum]) -> PooledContrast:
    """The CMH test, the MH odds ratio and the Breslow-Day test over ``strata``.

    Raises:
      ConfigError: no strata.
    """
    from statsmodels.stats.contingency_tables import StratifiedTable

    used, left_out = informative_strata(strata)
    nan = float("nan")
    if not used:
        return PooledContrast(dict(strata), nan, nan, nan, (nan, nan), nan, left_out, "none")
    tables = np.stack([s.table for s in used.values()], axis=2)  # [2, 2, k]
    stratified = StratifiedTable(tables)
    test = stratified.test_null_odds(correction=False)
    statistic, pvalue = float(test.statistic), float(test.pvalue)
    if len(used) == 1:  # one stratum: the exact test gradlab table uses, not the chi-square
        from scipy.stats import fisher_exact

        pvalue = float(fisher_exact(next(iter(used.values())).table).pvalue)
    # A zero cell makes some of these undefined (statsmodels divides by it): NaN, printed as a
    # dash, without numpy's warnings on the terminal.
    with np.errstate(divide="ignore", invalid="ignore"):
        odds = float(stratified.oddsratio_pooled)
        low, high = (float(v) for v in stratified.oddsratio_pooled_confint())
        homogeneity = nan
        if len(used) > 1:
            homogeneity = float(stratified.test_equal_odds(adjust=True).pvalue)
    return PooledContrast(
        strata=dict(strata),
        statistic=statistic,
        pvalue=pvalue,
        odds_ratio=odds,
        odds_ratio_ci=(low, high),
        homogeneity_p=homogeneity,
        left_out=left_out,
        test="fisher" if len(used) == 1 else "cmh",
        exact_p=exact_conditional_p(list(used.values())),
    )
