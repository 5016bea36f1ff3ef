"""Confidence bands of a mean curve: a seeded percentile bootstrap over runs, one interval per step.

The percentile bootstrap of a mean never leaves the range of the data: every resample's mean is
a mean of observed values, so it lies in ``[min, max]`` of the runs at that step, and so do the
quantiles of those means. A return band on Catch (returns in [-1, 1]) therefore stays in
[-1, 1] by construction, with no clamping; a normal (mean +- t * sem) interval has no such
guarantee and left the support in the figures this replaced.

No band below :data:`MIN_BAND_RUNS` runs: a bootstrap over 2-9 runs resamples so few distinct
values that its percentiles are mostly the data's own extremes, and drawn at n = 2 or 5 it filled
the panels as opaque blocks (issue 37). Such a line is drawn without a band, and the captions say
so.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["MIN_BAND_RUNS", "mean_band"]

_CONFIDENCE = 0.95
MIN_BAND_RUNS = 10
"""The fewest runs a bootstrap band is drawn over, in every figure."""


def mean_band(
    values: np.ndarray,
    *,
    confidence: float = _CONFIDENCE,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The mean over runs at each step and its percentile-bootstrap confidence band.

    Args:
      values: ``[N runs, T steps]``, finite.
      confidence: the level, in (0, 1).
      n_resamples: bootstrap resamples (runs resampled with replacement, the same runs at every
        step: the curve's steps are resampled together).
      seed: seeds the ``np.random.default_rng`` of this band only.

    Returns:
      ``(mean [T], low [T], high [T])``; ``low`` and ``high`` NaN with fewer than
      :data:`MIN_BAND_RUNS` runs.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"values must be [runs, steps], got shape {values.shape}")
    mean = values.mean(axis=0) if len(values) else np.full(values.shape[1], np.nan)
    if len(values) < MIN_BAND_RUNS:
        nan = np.full(values.shape[1], np.nan)
        return mean, nan, nan.copy()
    # scipy resamples whole runs (one index set for every step), so a resample is a set of curves
    result = stats.bootstrap(
        (values,),
        np.mean,
        axis=0,
        vectorized=True,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    interval = result.confidence_interval
    return mean, np.asarray(interval.low, dtype=float), np.asarray(interval.high, dtype=float)
