"""A value endpoint's contrast (a final return, a gradient norm) pooled over strata: van Elteren's
stratified Wilcoxon rank-sum test, the statistics of ``gradlab pool -e final_return``.

Values are ranked within each stratum only, so tasks on other scales (Breakout's 6 points,
CartPole's 500) pool without rescaling. Stratum ``k``'s rank sum of the arm, ``W_k`` (midranks
for ties), has under the null of no difference ``E = n1 (N + 1) / 2`` and ``Var = n1 n2 / 12 *
(N + 1 - sum(t^3 - t) / (N (N - 1)))`` (``t``: the sizes of the groups of tied values). Van
Elteren's statistic weighs each stratum by ``1 / (N_k + 1)``, which is locally most powerful
for a common shift: ``z = sum w (W - E) / sqrt(sum w^2 Var)``, two-sided normal p. With one
informative stratum it is that stratum's Mann-Whitney U test as ``gradlab table`` runs it.

The pooled effect is on the same scale as the test: ``P(arm > baseline)``, the chance that a
run of the arm beats one of the baseline in the same stratum (ties count half): the share of
such pairs the arm wins, each pair weighted ``w = 1 / (N + 1)`` as in the test (so a stratum
weighs ``n1 n2 / (N + 1)``), ``0.5 + sum w (W - E) / sum w n1 n2``. Above 0.5: the arm's values
are higher.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from experiments.report.statistics.pooled_rates import informative_strata

__all__ = ["RankContrast", "Sample", "van_elteren"]


@dataclasses.dataclass(frozen=True)
class Sample:
    """One stratum's per-run values of an arm and of the baseline (finite values only)."""

    arm: tuple[float, ...]
    base: tuple[float, ...]

    @classmethod
    def of(cls, arm: Sequence[float], base: Sequence[float]) -> Sample:
        """The finite values of ``arm`` and ``base``."""
        x, y = np.asarray(arm, dtype=float), np.asarray(base, dtype=float)
        return cls(tuple(x[np.isfinite(x)].tolist()), tuple(y[np.isfinite(y)].tolist()))

    @property
    def informative(self) -> bool:
        """Both arms have a value and not every value is the same (else the rank sum has no
        variance and the stratum adds nothing)."""
        values = set(self.arm) | set(self.base)
        return bool(self.arm) and bool(self.base) and len(values) > 1

    def rank_sum(self) -> tuple[float, float, float, int]:
        """The arm's rank sum within the stratum, its null mean and variance, and ``N``."""
        from scipy.stats import rankdata

        x, y = np.asarray(self.arm), np.asarray(self.base)
        n1, n2 = len(x), len(y)
        n = n1 + n2
        values = np.concatenate([x, y])
        w = float(rankdata(values)[:n1].sum())
        _, counts = np.unique(values, return_counts=True)
        ties = float((counts**3 - counts).sum())
        variance = n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1)))
        return w, n1 * (n + 1) / 2.0, variance, n


@dataclasses.dataclass(frozen=True)
class RankContrast:
    """An arm against the baseline over several strata, on a value endpoint.

    Attributes:
      strata: the values by stratum label.
      statistic: van Elteren's z (NaN when no stratum is informative).
      pvalue: its two-sided p (normal approximation); with one informative stratum, that
        stratum's two-sided Mann-Whitney U p (scipy's, exact for small samples without ties).
      superiority: the pooled ``P(arm > baseline)``, ties counted half (NaN: none informative).
      left_out: the labels of strata that add nothing (an arm without values, or all equal).
      test: what gave ``pvalue``: ``van_elteren``, ``mann_whitney`` or ``none``.
    """

    strata: Mapping[str, Sample]
    statistic: float
    pvalue: float
    superiority: float
    left_out: tuple[str, ...]
    test: str = "van_elteren"


def van_elteren(strata: Mapping[str, Sample]) -> RankContrast:
    """Van Elteren's stratified rank-sum test and the pooled ``P(arm > baseline)``.

    Raises:
      ConfigError: no strata.
    """
    from scipy.stats import norm

    from experiments.report.statistics.significance import mann_whitney_p

    used, left_out = informative_strata(strata)
    nan = math.nan
    if not used:
        return RankContrast(dict(strata), nan, nan, nan, left_out, "none")
    excess = variance = pairs = 0.0
    for s in used.values():
        w, mean, var, n = s.rank_sum()
        weight = 1.0 / (n + 1)
        excess += weight * (w - mean)
        variance += weight**2 * var
        pairs += weight * len(s.arm) * len(s.base)
    z = excess / math.sqrt(variance)
    pvalue, test = float(2.0 * norm.sf(abs(z))), "van_elteren"
    if len(used) == 1:  # one stratum: the test gradlab table uses there
        only = next(iter(used.values()))
        pvalue, test = mann_whitney_p(only.arm, only.base), "mann_whitney"
    return RankContrast(dict(strata), z, pvalue, 0.5 + excess / pairs, left_out, test)
