"""An arm's contrast with the baseline pooled over strata (tasks, regimes, optimizers): the
statistics of ``gradlab pool``, whose table is :mod:`experiments.report.across`.

The pooled test is the Cochran-Mantel-Haenszel test of a common odds ratio of 1 (no continuity
correction), with the Mantel-Haenszel pooled odds ratio and its Robins-Breslow-Greenland 95% CI,
and the Breslow-Day test of equal odds ratios across the strata (a small p: the effect differs
between strata, and a pooled figure hides it). All from statsmodels' ``StratifiedTable``; a
stratum whose 2x2 table has an empty row or no variation contributes nothing to the test and is
named.

Each stratum's 2x2 table is ``[[arm events, arm non-events], [baseline events, baseline
non-events]]``, so an odds ratio below 1 means fewer events (failures) in the arm.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from experiments.errors import ConfigError

__all__ = ["PooledContrast", "Stratum", "pooled_contrast"]


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
    """

    strata: Mapping[str, Stratum]
    statistic: float
    pvalue: float
    odds_ratio: float
    odds_ratio_ci: tuple[float, float]
    homogeneity_p: float
    left_out: tuple[str, ...]
    test: str = "cmh"


def pooled_contrast(strata: Mapping[str, Stratum]) -> PooledContrast:
    """The CMH test, the MH odds ratio and the Breslow-Day test over ``strata``.

    Raises:
      ConfigError: no strata.
    """
    from statsmodels.stats.contingency_tables import StratifiedTable

    if not strata:
        raise ConfigError("a pooled contrast needs at least one stratum with both arms")
    used = {label: s for label, s in strata.items() if s.informative}
    left_out = tuple(label for label in strata if label not in used)
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
    )
