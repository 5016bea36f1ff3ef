"""Seed statistics, intervals and effect sizes: against scipy, brute force, closed forms, hand
arithmetic and published values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from experiments.base.errors import ConfigError
from experiments.report.statistics.intervals import (
    binomial_ci,
    bootstrap_ci,
    difference_ci,
    risk_difference_ci,
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


# --- effect sizes ---------------------------------------------------------------------------------


def test_newcombe_risk_difference_by_hand():
    """1/10 vs 6/10. Wilson 95% intervals (z = 1.959964), by hand:
    p = 0.1: centre (1 + z^2/2) / (10 + z^2) = 2.92073 / 13.84146 = 0.21101, half-width
    z sqrt(0.1 * 0.9 * 10 + z^2/4) / 13.84146 = 1.959964 * sqrt(0.9 + 0.96036) / 13.84146
    = 0.19314: [0.01788, 0.40415]. p = 0.6: centre (6 + 1.92073) / 13.84146 = 0.57225,
    half-width 1.959964 * sqrt(2.4 + 0.96036) / 13.84146 = 0.25957: [0.31267, 0.83182].
    Newcombe: d = -0.5; low = d - sqrt((0.1 - 0.01788)^2 + (0.83182 - 0.6)^2)
    = -0.5 - sqrt(0.006743 + 0.053740) = -0.5 - 0.24593 = -0.74593;
    high = d + sqrt((0.40415 - 0.1)^2 + (0.6 - 0.31267)^2) = -0.5 + sqrt(0.092507 + 0.082558)
    = -0.5 + 0.41841 = -0.08159."""
    d, low, high = risk_difference_ci(1, 10, 6, 10)
    assert d == pytest.approx(-0.5)
    assert (low, high) == pytest.approx((-0.74593, -0.08159), abs=2e-5)
    # the same from scipy's Wilson intervals, independently of statsmodels' Newcombe
    w1 = stats.binomtest(1, 10).proportion_ci(method="wilson")
    w2 = stats.binomtest(6, 10).proportion_ci(method="wilson")
    assert low == pytest.approx(-0.5 - math.hypot(0.1 - w1.low, w2.high - 0.6))
    assert high == pytest.approx(-0.5 + math.hypot(w1.high - 0.1, 0.6 - w2.low))
    # the example: none 6/10 vs scale_gradient 1/10 in stress, about [0.08, 0.75]
    assert risk_difference_ci(6, 10, 1, 10)[1:] == pytest.approx((0.08159, 0.74593), abs=2e-5)


def test_risk_difference_edges():
    assert all(math.isnan(v) for v in risk_difference_ci(0, 0, 1, 3))
    d, low, high = risk_difference_ci(0, 5, 5, 5)
    assert d == -1.0 and low == pytest.approx(-1.0) and -1 < high < 0
    with pytest.raises(ConfigError, match="exceeds its total"):
        risk_difference_ci(4, 3, 1, 3)
    with pytest.raises(ConfigError, match="k1=-1 is not a count"):
        risk_difference_ci(-1, 3, 1, 3)


def test_difference_ci_independent_matches_scipy():
    x, y = np.array([1.0, 2.0, 4.0, 7.0]), np.array([0.5, 1.0, 1.5])
    d, low, high = difference_ci(x, y, n_resamples=2000, seed=3)
    assert d == pytest.approx(3.5 - 1.0)  # means 14/4 and 3/3
    expected = stats.bootstrap(
        (x, y), lambda a, b, axis=-1: a.mean(axis) - b.mean(axis), n_resamples=2000,
        method="percentile", rng=np.random.default_rng(3),
    ).confidence_interval  # fmt: skip
    assert (low, high) == pytest.approx((expected.low, expected.high))
    # the extremes a resample can reach: min(x) - max(y) = -0.5, max(x) - min(y) = 6.5
    assert -0.5 <= low < d < high <= 6.5


def test_difference_ci_paired_resamples_pairs():
    x, y = [3.0, 5.0, 4.0, 8.0, float("nan")], [1.0, 4.0, 4.0, 5.0, 2.0]
    d, low, high = difference_ci(x, y, paired=True, n_resamples=2000, seed=1)
    # differences 2, 1, 0, 3 (the pair with NaN dropped): mean 1.5
    assert d == pytest.approx(1.5)
    expected = stats.bootstrap(
        (np.array([2.0, 1.0, 0.0, 3.0]),), np.mean, n_resamples=2000, method="percentile",
        rng=np.random.default_rng(1),
    ).confidence_interval  # fmt: skip
    assert (low, high) == pytest.approx((expected.low, expected.high))
    assert difference_ci([1.0, 2.0], [0.0, 1.0], paired=True) == (1.0, 1.0, 1.0)  # all equal
    assert difference_ci([1.0], [0.0], paired=True)[0] == 1.0  # one pair: no interval
    assert math.isnan(difference_ci([1.0], [0.0], paired=True)[1])
    with pytest.raises(ConfigError, match="differ in length"):
        difference_ci([1.0, 2.0], [1.0], paired=True)


def test_difference_ci_degenerate():
    assert all(math.isnan(v) for v in difference_ci([], [1.0, 2.0]))
    d, low, high = difference_ci([1.0], [1.0, 2.0])
    assert d == -0.5 and math.isnan(low) and math.isnan(high)
    assert difference_ci([2.0, 2.0], [1.0, 1.0]) == (1.0, 1.0, 1.0)
