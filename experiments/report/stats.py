"""Statistics over seeds: point estimates, bootstrap confidence intervals, exact binomial intervals
of rates, and the probability of improvement.

Few seeds (3 to 10) are the norm, so: the interquartile mean (IQM) is offered beside the mean and
the median (Agarwal et al., 2021, "Deep RL at the Edge of the Statistical Precipice"); intervals are
percentile bootstrap intervals from :func:`scipy.stats.bootstrap` with a generator seeded per call
(the same data always give the same interval); one seed gives no interval (NaN), not a fake one.
A rate (k of n runs, e.g. unstable) gets the exact Clopper-Pearson interval instead
(:func:`binomial_ci`), which holds at any n.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

from experiments.errors import ConfigError, unknown_choice

__all__ = ["STATS", "binomial_ci", "bootstrap_ci", "probability_of_improvement", "statistic"]


def _iqm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return stats.trim_mean(x, 0.25, axis=axis)


STATS: dict[str, Callable[..., np.ndarray]] = {
    "mean": np.mean,
    "iqm": _iqm,
    "median": np.median,
}
"""Point estimates by name; each takes ``(x, axis=...)``."""


def _values(x: Sequence[float] | np.ndarray) -> np.ndarray:
    """The finite values of ``x`` as a float array ``[N]``."""
    x = np.asarray(x, dtype=float).ravel()
    return x[np.isfinite(x)]


def _stat_fn(stat: str) -> Callable[..., np.ndarray]:
    if stat not in STATS:
        raise unknown_choice("statistic", stat, STATS)
    return STATS[stat]


def statistic(x: Sequence[float] | np.ndarray, *, stat: str = "mean") -> float:
    """The point estimate of the finite values of ``x`` (NaN if there are none).

    Args:
      x: ``[N]`` one value per seed; NaN/Inf entries are dropped.
      stat: ``mean``, ``iqm`` (mean of the middle 50%, ``scipy.stats.trim_mean(x, 0.25)``) or
        ``median``.
    """
    fn = _stat_fn(stat)
    x = _values(x)
    return float(fn(x, axis=-1)) if len(x) else float("nan")


def bootstrap_ci(
    x: Sequence[float] | np.ndarray,
    *,
    stat: str = "mean",
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of ``stat`` over the finite values of ``x``.

    Args:
      x: ``[N]`` one value per seed; NaN/Inf entries are dropped.
      stat: a name in :data:`STATS`.
      confidence: the confidence level, in (0, 1).
      n_resamples: bootstrap resamples.
      seed: seeds the ``np.random.default_rng`` used for this interval only.

    Returns:
      ``(low, high)``; ``(nan, nan)`` with fewer than two values (no interval can be estimated).
    """
    fn = _stat_fn(stat)
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence!r}")
    x = _values(x)
    if len(x) < 2:
        return float("nan"), float("nan")
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    result = stats.bootstrap(
        (x,),
        fn,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def probability_of_improvement(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    *,
    higher_is_better: bool = True,
) -> float:
    """P(a seed of X beats a seed of Y), ties counting one half: the Mann-Whitney U of X over
    ``n_x n_y``.

    Args:
      x: ``[N_x]`` the values of the compared group; NaN/Inf dropped.
      y: ``[N_y]`` the values of the baseline; NaN/Inf dropped.
      higher_is_better: True: P(X > Y); False: P(X < Y).

    Returns:
      The probability, in [0, 1]; NaN if either side has no value.
    """
    x, y = _values(x), _values(y)
    if not len(x) or not len(y):
        return float("nan")
    better, worse = (x, y) if higher_is_better else (y, x)
    u = stats.mannwhitneyu(better, worse, alternative="two-sided").statistic
    return float(u / (len(x) * len(y)))


def binomial_ci(k: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) confidence interval of a rate ``k/n``.

    ``scipy.stats.binomtest(k, n).proportion_ci(method="exact")``: the bounds are the beta
    quantiles ``B(a/2; k, n - k + 1)`` and ``B(1 - a/2; k + 1, n - k)`` (0 when k = 0, 1 when
    k = n), so the interval covers the true rate with at least the stated confidence.

    Args:
      k: events (e.g. unstable runs); ``0 <= k <= n``.
      n: runs.
      confidence: the level, in (0, 1).

    Returns:
      ``(low, high)``; ``(nan, nan)`` when n = 0.

    Raises:
      ConfigError: k or n is not a count, k > n, or the level is outside (0, 1).
    """
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence!r}")
    for name, value in (("k", k), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ConfigError(f"{name}={value!r} is not a count; expected an integer >= 0")
    if k > n:
        raise ConfigError(f"k={k} exceeds n={n}; a rate needs 0 <= k <= n")
    if n == 0:
        return float("nan"), float("nan")
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)
