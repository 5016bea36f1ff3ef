"""The Miettinen-Nurminen score statistic of a risk difference, written out by hand for tests:
the restricted maximum likelihood found on a fine grid (independent of the closed form and the
root finding in experiments/report/statistics/equivalence.py)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def restricted_by_grid(k1: int, n1: int, k0: int, n0: int, delta: float) -> float:
    """p0 maximising the two binomial likelihoods under p1 = p0 + delta, on a grid of 20001
    points."""
    lo, hi = max(0.0, -delta), min(1.0, 1.0 - delta)
    grid = np.linspace(lo, hi, 20001)
    p1 = grid + delta
    with np.errstate(divide="ignore", invalid="ignore"):
        ll = (stats.binom.logpmf(k1, n1, np.clip(p1, 0, 1))
              + stats.binom.logpmf(k0, n0, np.clip(grid, 0, 1)))  # fmt: skip
    return float(grid[int(np.nanargmax(ll))])


def z_by_hand(k1: int, n1: int, k0: int, n0: int, delta: float) -> float:
    """The score z of H0: p1 - p0 = delta (the n / (n - 1) factor of Miettinen and Nurminen)."""
    p0 = restricted_by_grid(k1, n1, k0, n0, delta)
    p1 = p0 + delta
    n = n1 + n0
    var = (p1 * (1 - p1) / n1 + p0 * (1 - p0) / n0) * n / (n - 1)
    return (k1 / n1 - k0 / n0 - delta) / math.sqrt(var)
