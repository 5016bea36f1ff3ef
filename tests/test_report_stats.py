"""Seed statistics and intervals: against scipy, brute force, closed forms and published values."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from experiments.errors import ConfigError
from experiments.report.stats import (
    binomial_ci,
    bootstrap_ci,
    probability_of_improvement,
    statistic,
)


def test_point_estimates():
    x = [1, 2, 3, 4, 5, 6, 7, 100, float("nan")]
    assert statistic(x, stat="mean") == pytest.approx(16.0)
    assert statistic(x, stat="median") == pytest.approx(4.5)
    assert statistic(x, stat="iqm") == pytest.approx(4.5)  # mean of 3, 4, 5, 6
    assert statistic(x, stat="iqm") == pytest.approx(stats.trim_mean(x[:-1], 0.25))
    assert math.isnan(statistic([], stat="mean"))


@pytest.mark.parametrize("stat, fn", [("mean", np.mean), ("median", np.median)])
def test_bootstrap_matches_scipy(stat, fn):
    x = np.array([0.3, 1.2, 0.7, 2.5, 0.9])
    expected = stats.bootstrap(
        (x,), fn, method="percentile", n_resamples=2000, rng=np.random.default_rng(7)
    ).confidence_interval
    got = bootstrap_ci(x, stat=stat, n_resamples=2000, seed=7)
    assert got == pytest.approx((expected.low, expected.high))
    assert bootstrap_ci(x, stat=stat, n_resamples=2000, seed=7) == got  # seeded: repeatable
    assert x.min() <= got[0] < fn(x) < got[1] <= x.max()


def test_bootstrap_degenerate_inputs():
    assert all(math.isnan(v) for v in bootstrap_ci([0.5]))  # one seed: no interval
    assert all(math.isnan(v) for v in bootstrap_ci([float("nan"), 0.5]))
    assert bootstrap_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)
    with pytest.raises(ConfigError, match="statistic 'mode'"):
        bootstrap_ci([1.0, 2.0], stat="mode")
    with pytest.raises(ConfigError, match="confidence"):
        bootstrap_ci([1.0, 2.0], confidence=95)


def test_probability_of_improvement_against_pair_counting():
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 5, size=7).astype(float), rng.integers(0, 5, size=4).astype(float)
    pairs = list(itertools.product(x, y))
    greater = sum((a > b) + 0.5 * (a == b) for a, b in pairs) / len(pairs)
    less = sum((a < b) + 0.5 * (a == b) for a, b in pairs) / len(pairs)
    assert probability_of_improvement(x, y) == pytest.approx(greater)
    assert probability_of_improvement(x, y, higher_is_better=False) == pytest.approx(less)
    assert greater + less == pytest.approx(1.0)
    assert probability_of_improvement([1.0, 2.0], [3.0]) == 0.0
    assert math.isnan(probability_of_improvement([], [1.0]))


# --- the exact binomial (Clopper-Pearson) interval ------------------------------------------------


@pytest.mark.parametrize("n", [1, 3, 5, 10, 30])
def test_binomial_ci_closed_forms(n):
    """k = 0: [0, 1 - 0.025^(1/n)]; k = n: [0.025^(1/n), 1]; k = 1: low = 1 - 0.975^(1/n);
    k = n - 1: high = 0.975^(1/n) (the Beta(1, n) and Beta(n, 1) quantiles in closed form)."""
    assert binomial_ci(0, n) == pytest.approx((0.0, 1 - 0.025 ** (1 / n)))
    assert binomial_ci(n, n) == pytest.approx((0.025 ** (1 / n), 1.0))
    if n > 1:
        assert binomial_ci(1, n)[0] == pytest.approx(1 - 0.975 ** (1 / n))
        assert binomial_ci(n - 1, n)[1] == pytest.approx(0.975 ** (1 / n))


def test_binomial_ci_published_and_beta_quantiles():
    # 5 of 10: the exact 95% interval tabulated in textbooks, 0.187 to 0.813
    low, high = binomial_ci(5, 10)
    assert (round(low, 4), round(high, 4)) == (0.1871, 0.8129)
    # 0 of 5 unstable runs: the rate may still be up to 52%
    assert round(binomial_ci(0, 5)[1], 4) == 0.5218
    for k, n in [(1, 3), (2, 3), (3, 7), (4, 5)]:
        expected = (stats.beta.ppf(0.025, k, n - k + 1), stats.beta.ppf(0.975, k + 1, n - k))
        assert binomial_ci(k, n) == pytest.approx(expected)
    low90, high90 = binomial_ci(3, 7, confidence=0.9)
    assert binomial_ci(3, 7)[0] < low90 < 3 / 7 < high90 < binomial_ci(3, 7)[1]


def test_binomial_ci_bad_counts():
    assert all(math.isnan(v) for v in binomial_ci(0, 0))
    with pytest.raises(ConfigError, match="k=4 exceeds n=3"):
        binomial_ci(4, 3)
    with pytest.raises(ConfigError, match="k=-1 is not a count"):
        binomial_ci(-1, 3)
    with pytest.raises(ConfigError, match="n=2.5 is not a count"):
        binomial_ci(1, 2.5)
    with pytest.raises(ConfigError, match="confidence"):
        binomial_ci(1, 3, confidence=1.5)
