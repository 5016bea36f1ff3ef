"""Tests between groups of runs and their multiple-comparison correction.

* :func:`fisher_p`: Fisher's exact test on two counts ``k/n`` (a rate, e.g. unstable runs),
  two-sided, ``scipy.stats.fisher_exact`` on the 2x2 table ``[[k1, n1 - k1], [k2, n2 - k2]]``.
* :func:`mann_whitney_p`: the Mann-Whitney U test on two samples of per-seed values, two-sided,
  ``scipy.stats.mannwhitneyu`` (exact for small samples without ties, else the normal
  approximation with a continuity correction: scipy's ``method="auto"``).
* :func:`holm`: Holm-Bonferroni adjusted p-values (Holm, 1979, "A simple sequentially rejective
  multiple test procedure"): with the m p-values sorted ``p(1) <= ... <= p(m)``, the adjusted
  ``p~(i) = max_{j <= i} min(1, (m - j + 1) p(j))``; rejecting ``p~ < alpha`` controls the
  family-wise error rate at ``alpha``.

A test without data on one side gives NaN, never a made-up p-value.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

from experiments.errors import ConfigError

__all__ = ["fisher_p", "holm", "mann_whitney_p"]


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ConfigError(f"{name}={value!r} is not a count; expected an integer >= 0")
    return int(value)


def fisher_p(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided Fisher's exact test of ``k1/n1`` against ``k2/n2``.

    Args:
      k1: events (e.g. unstable runs) in the first group; ``0 <= k1 <= n1``.
      n1: runs in the first group.
      k2: events in the second group; ``0 <= k2 <= n2``.
      n2: runs in the second group.

    Returns:
      The p-value; NaN when either group has no run.

    Raises:
      ConfigError: a count is negative, not an integer, or above its total.
    """
    k1, n1, k2, n2 = (_count(n, v) for n, v in (("k1", k1), ("n1", n1), ("k2", k2), ("n2", n2)))
    if k1 > n1 or k2 > n2:
        raise ConfigError(f"counts {k1}/{n1} and {k2}/{n2}: an event count exceeds its total")
    if n1 == 0 or n2 == 0:
        return float("nan")
    result = stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]], alternative="two-sided")
    return float(min(1.0, result.pvalue))


def mann_whitney_p(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Two-sided Mann-Whitney U test of the finite values of ``x`` against those of ``y``.

    Args:
      x: ``[N_x]`` per-seed values of one group; NaN/Inf dropped.
      y: ``[N_y]`` per-seed values of the other.

    Returns:
      The p-value; NaN when either side has no value; 1 when all values are equal (no evidence of
      a difference; scipy would divide by a zero variance).
    """
    x, y = (np.asarray(v, dtype=float).ravel() for v in (x, y))
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if not len(x) or not len(y):
        return float("nan")
    if np.all(np.concatenate([x, y]) == x[0]):
        return 1.0
    return float(stats.mannwhitneyu(x, y, alternative="two-sided").pvalue)


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
