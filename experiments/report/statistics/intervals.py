"""Statistics over seeds: point estimates, bootstrap confidence intervals, exact binomial intervals
of rates, and the effect sizes of a contrast (a difference between two arms, with its interval).

Few seeds (3 to 10) are the norm, so: the interquartile mean (IQM) is offered beside the mean and
the median (Agarwal et al., 2021, "Deep RL at the Edge of the Statistical Precipice"); intervals are
percentile bootstrap intervals from :func:`scipy.stats.bootstrap` with a generator seeded per call
(the same data always give the same interval); one seed gives no interval (NaN), not a fake one.
A rate (k of n runs, e.g. unstable) gets the exact Clopper-Pearson interval instead
(:func:`binomial_ci`), which holds at any n.

Effect sizes (arm minus baseline):

* :func:`risk_difference_ci`: the difference of two independent rates with Newcombe's hybrid-score
  interval (Newcombe, 1998, "Interval estimation for the difference between independent
  proportions", method 10), ``statsmodels.stats.proportion.confint_proportions_2indep(...,
  compare="diff", method="newcomb")``: from the Wilson intervals ``[l1, u1]``, ``[l2, u2]`` of the
  two rates, ``d - sqrt((p1 - l1)^2 + (u2 - p2)^2)`` to ``d + sqrt((u1 - p1)^2 + (p2 - l2)^2)``.
* :func:`difference_ci`: the difference of a statistic between two samples with a seeded
  percentile-bootstrap interval (``scipy.stats.bootstrap`` on both samples, each resampled on its
  own); paired (``paired=True``): the statistic of the per-pair differences, the pairs resampled
  together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

from experiments.base.errors import ConfigError, unknown_choice

__all__ = [
    "STATS",
    "binomial_ci",
    "bootstrap_ci",
    "difference_ci",
    "percentile_bootstrap",
    "risk_difference_ci",
    "statistic",
]


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


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence!r}")


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
    _check_confidence(confidence)
    x = _values(x)
    if len(x) < 2:
        return float("nan"), float("nan")
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    low, high = percentile_bootstrap(
        (x,), fn, confidence=confidence, n_resamples=n_resamples, seed=seed
    )
    return float(low), float(high)


def percentile_bootstrap(
    samples: tuple[np.ndarray, ...],
    statistic: Callable[..., np.ndarray],
    *,
    confidence: float,
    n_resamples: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The one percentile-bootstrap call of the report (:func:`scipy.stats.bootstrap`): every
    interval and band is resampled the same way, with a generator seeded for it alone.

    Args:
      samples: one ``[N_i]`` array per sample, each resampled on its own.
      statistic: vectorised, ``statistic(*samples, axis=-1)``: a scalar or ``[T]`` per resample.
      confidence: the level, in (0, 1).
      n_resamples: bootstrap resamples.
      seed: seeds the ``np.random.default_rng`` of this call only.

    Returns:
      ``(low, high)``, each shaped as the statistic.
    """
    result = stats.bootstrap(
        samples,
        statistic,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    return result.confidence_interval.low, result.confidence_interval.high


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
    _check_confidence(confidence)
    for name, value in (("k", k), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ConfigError(f"{name}={value!r} is not a count; expected an integer >= 0")
    if k > n:
        raise ConfigError(f"k={k} exceeds n={n}; a rate needs 0 <= k <= n")
    if n == 0:
        return float("nan"), float("nan")
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)


def risk_difference_ci(
    k1: int, n1: int, k2: int, n2: int, *, confidence: float = 0.95
) -> tuple[float, float, float]:
    """``k1/n1 - k2/n2`` with Newcombe's hybrid-score interval (module docstring).

    Args:
      k1: events in the compared arm; ``0 <= k1 <= n1``.
      n1: its runs.
      k2: events in the baseline arm; ``0 <= k2 <= n2``.
      n2: its runs.
      confidence: the level, in (0, 1).

    Returns:
      ``(difference, low, high)``; all NaN when either arm has no run.

    Raises:
      ConfigError: a count is not a count or exceeds its total, or the level is outside (0, 1).
    """
    from statsmodels.stats.proportion import confint_proportions_2indep

    _check_confidence(confidence)
    for name, value in (("k1", k1), ("n1", n1), ("k2", k2), ("n2", n2)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ConfigError(f"{name}={value!r} is not a count; expected an integer >= 0")
    if k1 > n1 or k2 > n2:
        raise ConfigError(f"counts {k1}/{n1} and {k2}/{n2}: an event count exceeds its total")
    if n1 == 0 or n2 == 0:
        return float("nan"), float("nan"), float("nan")
    low, high = confint_proportions_2indep(
        int(k1), int(n1), int(k2), int(n2), compare="diff", method="newcomb", alpha=1 - confidence
    )
    return k1 / n1 - k2 / n2, float(low), float(high)


def difference_ci(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    *,
    stat: str = "mean",
    paired: bool = False,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
) -> tuple[float, float, float]:
    """The difference of ``stat`` between ``x`` and ``y``, with a percentile-bootstrap interval.

    Args:
      x: ``[N_x]`` one value per run of the compared arm.
      y: ``[N_y]`` one value per run of the baseline arm; with ``paired``, ``[N_x]``: the run of
        the same seed, in the same order.
      stat: a name in :data:`STATS`.
      paired: False: ``stat(x) - stat(y)`` over the finite values of each, the two samples
        resampled independently; True: ``stat(x - y)`` over the pairs finite on both sides,
        pairs resampled together (with ``mean``, the mean paired difference).
      confidence: the level, in (0, 1).
      n_resamples: bootstrap resamples.
      seed: seeds the ``np.random.default_rng`` of this interval only.

    Returns:
      ``(difference, low, high)``: NaN difference when a side has no value; NaN bounds with fewer
      than two values on a side (two pairs when paired); ``(d, d)`` when no resample can differ.
    """
    fn = _stat_fn(stat)
    _check_confidence(confidence)
    if paired:
        x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
        if x.shape != y.shape:
            raise ConfigError(f"paired samples differ in length: {len(x)} and {len(y)}")
        keep = np.isfinite(x) & np.isfinite(y)
        x, y = x[keep], y[keep]
        if not len(x):
            return float("nan"), float("nan"), float("nan")
        d = x - y
        estimate = float(fn(d, axis=-1))
        if len(d) < 2 or np.all(d == d[0]):
            bound = estimate if len(d) >= 2 else float("nan")
            return estimate, bound, bound
        samples, statistic_fn = (d,), fn
    else:
        x, y = _values(x), _values(y)
        if not len(x) or not len(y):
            return float("nan"), float("nan"), float("nan")
        estimate = float(fn(x, axis=-1) - fn(y, axis=-1))
        if len(x) < 2 or len(y) < 2:
            return estimate, float("nan"), float("nan")
        if np.all(x == x[0]) and np.all(y == y[0]):
            return estimate, estimate, estimate

        def statistic_fn(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
            return fn(a, axis=axis) - fn(b, axis=axis)

        samples = (x, y)
    low, high = percentile_bootstrap(
        samples, statistic_fn, confidence=confidence, n_resamples=n_resamples, seed=seed
    )
    return estimate, float(low), float(high)
