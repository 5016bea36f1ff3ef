"""Tests between two groups of runs, and the Holm correction of one family of them.

Independent groups (runs of two arms, any seeds):

* :func:`fisher_p`: Fisher's exact test on two counts ``k/n`` (a rate, e.g. failed runs),
  two-sided, ``scipy.stats.fisher_exact`` on the 2x2 table ``[[k1, n1 - k1], [k2, n2 - k2]]``.
* :func:`barnard_p`: Barnard's exact unconditional test on the same table, two-sided,
  ``scipy.stats.barnard_exact`` (Wald statistic with pooled variance; never less powerful than
  Fisher's for a 2x2 table with fixed row totals, slower).
* :func:`mann_whitney_p`: the Mann-Whitney U test on two samples of per-run values, two-sided,
  ``scipy.stats.mannwhitneyu`` (exact for small samples without ties, else the normal
  approximation with a continuity correction: scipy's ``method="auto"``).

Paired groups (runs matched by seed: the same seed gives both arms the same environment streams and
initial weights):

* :func:`mcnemar_p`: the exact McNemar test on the discordant pairs,
  ``statsmodels.stats.contingency_tables.mcnemar(table, exact=True)``: with ``b`` pairs where only
  the first run has the event and ``c`` where only the second has it,
  ``p = min(1, 2 P(Binomial(b + c, 1/2) <= min(b, c)))``.
* :func:`wilcoxon_p`: the Wilcoxon signed-rank test of the paired differences, two-sided,
  ``scipy.stats.wilcoxon`` (zero differences dropped, scipy's ``zero_method="wilcox"``; exact for
  small samples without ties).

And the correction:

* :func:`holm`: Holm-Bonferroni adjusted p-values (Holm, 1979, "A simple sequentially rejective
  multiple test procedure"): with the m p-values sorted ``p(1) <= ... <= p(m)``, the adjusted
  ``p~(i) = max_{j <= i} min(1, (m - j + 1) p(j))``; rejecting ``p~ < alpha`` controls the
  family-wise error rate at ``alpha``.

A test without data on one side gives NaN, never a made-up p-value; a test whose two samples are
identical (no evidence of any difference, where scipy would divide by zero) gives 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

from experiments.base.errors import ConfigError

__all__ = ["barnard_p", "fisher_p", "holm", "mann_whitney_p", "mcnemar_p", "wilcoxon_p"]


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ConfigError(f"{name}={value!r} is not a count; expected an integer >= 0")
    return int(value)


def _counts(k1: int, n1: int, k2: int, n2: int) -> tuple[int, int, int, int]:
    k1, n1, k2, n2 = (_count(n, v) for n, v in (("k1", k1), ("n1", n1), ("k2", k2), ("n2", n2)))
    if k1 > n1 or k2 > n2:
        raise ConfigError(f"counts {k1}/{n1} and {k2}/{n2}: an event count exceeds its total")
    return k1, n1, k2, n2


def fisher_p(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided Fisher's exact test of ``k1/n1`` against ``k2/n2``.

    Args:
      k1: events (e.g. failed runs) in the first group; ``0 <= k1 <= n1``.
      n1: runs in the first group.
      k2: events in the second group; ``0 <= k2 <= n2``.
      n2: runs in the second group.

    Returns:
      The p-value; NaN when either group has no run.

    Raises:
      ConfigError: a count is negative, not an integer, or above its total.
    """
    k1, n1, k2, n2 = _counts(k1, n1, k2, n2)
    if n1 == 0 or n2 == 0:
        return float("nan")
    result = stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]], alternative="two-sided")
    return float(min(1.0, result.pvalue))


def barnard_p(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided Barnard's exact test of ``k1/n1`` against ``k2/n2`` (arguments as
    :func:`fisher_p`); 1 when both rates are 0 or both are 1 (the table has a zero column)."""
    k1, n1, k2, n2 = _counts(k1, n1, k2, n2)
    if n1 == 0 or n2 == 0:
        return float("nan")
    if k1 + k2 in (0, n1 + n2):
        return 1.0
    result = stats.barnard_exact([[k1, k2], [n1 - k1, n2 - k2]], alternative="two-sided")
    return float(min(1.0, result.pvalue))


def _finite(x: Sequence[float] | np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float).ravel()
    return x[np.isfinite(x)]


def mann_whitney_p(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Two-sided Mann-Whitney U test of the finite values of ``x`` against those of ``y``.

    Args:
      x: ``[N_x]`` per-run values of one group; NaN/Inf dropped.
      y: ``[N_y]`` per-run values of the other.

    Returns:
      The p-value; NaN when either side has no value; 1 when all values are equal.
    """
    x, y = _finite(x), _finite(y)
    if not len(x) or not len(y):
        return float("nan")
    if np.all(np.concatenate([x, y]) == x[0]):
        return 1.0
    return float(stats.mannwhitneyu(x, y, alternative="two-sided").pvalue)


def _pairs(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if x.shape != y.shape:
        raise ConfigError(f"paired samples differ in length: {len(x)} and {len(y)}")
    keep = np.isfinite(x) & np.isfinite(y)
    return x[keep], y[keep]


def mcnemar_p(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Exact two-sided McNemar test of paired 0/1 verdicts.

    Args:
      x: ``[N]`` the first arm's verdict (0/1) per pair; a pair with NaN on either side is dropped.
      y: ``[N]`` the second arm's verdict for the same seeds, in the same order.

    Returns:
      The p-value; NaN without a pair; 1 without a discordant pair.
    """
    from statsmodels.stats.contingency_tables import mcnemar

    x, y = _pairs(x, y)
    if not len(x):
        return float("nan")
    a, b = x >= 0.5, y >= 0.5
    table = [[int((a & b).sum()), int((a & ~b).sum())], [int((~a & b).sum()), int((~a & ~b).sum())]]
    if table[0][1] + table[1][0] == 0:
        return 1.0
    return float(min(1.0, mcnemar(table, exact=True).pvalue))


def wilcoxon_p(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank test of the paired differences ``x - y``.

    Args:
      x: ``[N]`` the first arm's value per pair; a pair with NaN on either side is dropped.
      y: ``[N]`` the second arm's value for the same seeds, in the same order.

    Returns:
      The p-value; NaN without a pair; 1 when every difference is 0.
    """
    x, y = _pairs(x, y)
    if not len(x):
        return float("nan")
    if np.all(x == y):
        return 1.0
    return float(stats.wilcoxon(x, y, alternative="two-sided").pvalue)


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values, in the input order.

    NaN entries (comparisons that could not be made) are left NaN and do not count in m.

    Args:
      pvalues: ``[M]`` raw p-values of one family of comparisons.

    Returns:
      ``[M]`` the adjusted p-values, each in [0, 1] and >= its raw value.
    """
    p = np.asarray(pvalues, dtype=float).ravel()
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = len(valid)
    if not m:
        return out
    order = valid[np.argsort(p[valid], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out
