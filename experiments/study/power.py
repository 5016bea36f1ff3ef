"""Power of the primary contrast before any run: exact, by enumeration, for Fisher's exact test.

:func:`fisher_power` sums, over every outcome ``(k1, k2)`` of two arms of ``n`` runs each, the
probability of that outcome under the planning rates times 1 if Fisher's two-sided exact test
(``scipy.stats.fisher_exact``) rejects at ``alpha``. No normal approximation: with tens of seeds
per arm and rates near 0 or 1 the approximation is poor, and the exact sum is cheap
(``(n + 1)^2`` outcomes, computed per margin in milliseconds). :func:`seeds_for_power`
finds the smallest ``n`` reaching a target power.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from experiments.errors import ConfigError

__all__ = ["fisher_p_grid", "fisher_power", "seeds_for_power"]


def _check_rate(name: str, rate: float) -> float:
    if not 0.0 <= rate <= 1.0:
        raise ConfigError(f"{name}={rate} is not a rate; expected a number in [0, 1]")
    return float(rate)


def fisher_p_grid(n1: int, n2: int) -> np.ndarray:
    """Two-sided Fisher p of every outcome: ``grid[k1, k2]`` for k1/n1 against k2/n2.

    Computed per total ``K = k1 + k2`` from the hypergeometric law of ``k1`` given the margins,
    as ``scipy.stats.fisher_exact`` defines the two-sided p: the summed probability of the
    tables no more likely than the one observed (relative tolerance 1e-7). The test checks it
    against ``fisher_exact`` cell by cell; this form takes milliseconds where calling it
    ``(n + 1)^2`` times takes seconds."""
    grid = np.empty((n1 + 1, n2 + 1))
    for total in range(n1 + n2 + 1):
        lo, hi = max(0, total - n2), min(n1, total)
        k1 = np.arange(lo, hi + 1)
        pmf = stats.hypergeom.pmf(k1, n1 + n2, total, n1)
        p = (pmf[None, :] <= pmf[:, None] * (1 + 1e-7)).astype(float) @ pmf
        grid[k1, total - k1] = np.minimum(p, 1.0)
    return grid


def fisher_power(p1: float, p2: float, n: int, *, alpha: float = 0.05) -> float:
    """Probability that Fisher's two-sided exact test rejects at ``alpha`` with ``n`` runs per arm
    when the arms' true rates are ``p1`` and ``p2``."""
    p1, p2 = _check_rate("p1", p1), _check_rate("p2", p2)
    if n < 1:
        raise ConfigError(f"n={n} runs per arm; expected at least 1")
    reject = fisher_p_grid(n, n) < alpha
    k = np.arange(n + 1)
    joint = np.outer(stats.binom.pmf(k, n, p1), stats.binom.pmf(k, n, p2))
    return float(joint[reject].sum())


def seeds_for_power(
    p1: float, p2: float, *, power: float = 0.9, alpha: float = 0.05, max_n: int = 200
) -> int:
    """The smallest number of runs per arm whose exact power reaches ``power``.

    Exact power is not monotone in ``n`` (the test's discreteness makes it saw-tooth), so this is
    the first ``n`` that reaches it, found by walking up from 2."""
    _check_rate("power", power)
    for n in range(2, max_n + 1):
        if fisher_power(p1, p2, n, alpha=alpha) >= power:
            return n
    raise ConfigError(f"power {power} for rates {p1} vs {p2} needs more than {max_n} runs per arm")
