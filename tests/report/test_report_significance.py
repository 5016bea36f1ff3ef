"""Tests between groups and the Holm correction: by hand, against scipy, and published values."""

from __future__ import annotations

import math
from math import comb

import numpy as np
import pytest
from scipy import stats

from experiments.base.errors import ConfigError
from experiments.report.statistics.significance import fisher_p, holm, mann_whitney_p


def test_fisher_published_tea_tasting():
    # Fisher's lady tasting tea, 3 of 4 cups right: two-sided p = 34/70 (one-sided 17/70)
    assert fisher_p(3, 4, 1, 4) == pytest.approx(34 / 70)


def test_fisher_by_hand_from_the_hypergeometric():
    # 0 of 5 vs 5 of 5: only the two extreme tables, each 1 / C(10, 5)
    assert fisher_p(0, 5, 5, 5) == pytest.approx(2 / comb(10, 5))
    # 2 of 5 vs 5 of 5: 7 events; P(k events in the first group) = C(7,k) C(3,5-k) / C(10,5)
    # = 21, 105, 105, 21 (/252) for k = 2..5; tables as likely as k=2 or less: k = 2, 5 -> 42/252
    assert fisher_p(2, 5, 5, 5) == pytest.approx(42 / 252)
    assert fisher_p(0, 5, 2, 5) == pytest.approx(112 / 252)  # 56 + 56 of 252
    assert fisher_p(1, 3, 2, 3) == pytest.approx(1.0)


def test_fisher_against_scipy_and_symmetric():
    for k1, n1, k2, n2 in [(0, 5, 3, 5), (1, 10, 6, 10), (4, 7, 1, 9), (2, 2, 0, 3)]:
        expected = stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue
        assert fisher_p(k1, n1, k2, n2) == pytest.approx(expected)
        assert fisher_p(k2, n2, k1, n1) == pytest.approx(expected)


def test_fisher_without_runs_and_bad_counts():
    assert math.isnan(fisher_p(0, 0, 1, 5))
    with pytest.raises(ConfigError, match="exceeds its total"):
        fisher_p(6, 5, 1, 5)
    with pytest.raises(ConfigError, match="k1=-1 is not a count"):
        fisher_p(-1, 5, 1, 5)


def test_mann_whitney_by_hand_and_against_scipy():
    # complete separation of 3 vs 3: exact two-sided p = 2 / C(6, 3)
    assert mann_whitney_p([1, 2, 3], [4, 5, 6]) == pytest.approx(2 / comb(6, 3))
    assert mann_whitney_p([6, 7, 8, 9, 10], [1, 2, 3, 4, 5]) == pytest.approx(2 / comb(10, 5))
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=6), rng.normal(size=4) + 1
    assert mann_whitney_p(x, y) == pytest.approx(stats.mannwhitneyu(x, y).pvalue)
    assert mann_whitney_p([*x, np.nan], [*y, np.inf]) == mann_whitney_p(x, y)  # non-finite dropped


def test_mann_whitney_degenerate():
    assert mann_whitney_p([2.0, 2.0], [2.0, 2.0, 2.0]) == 1.0  # all equal: no evidence
    assert math.isnan(mann_whitney_p([], [1.0]))
    assert math.isnan(mann_whitney_p([np.nan], [1.0]))


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04, 0.2 (m=4): x4 = 0.04, x3 = 0.09, x2 = 0.08 -> 0.09 (monotone), x1
    got = holm([0.01, 0.04, 0.03, 0.2])
    np.testing.assert_allclose(got, [0.04, 0.09, 0.09, 0.2])
    np.testing.assert_allclose(holm([0.5, 0.6]), [1.0, 1.0])  # capped at 1
    np.testing.assert_allclose(holm([0.02]), [0.02])  # one comparison: unchanged
    np.testing.assert_allclose(holm([0.01, 0.01, 0.5]), [0.03, 0.03, 0.5])  # ties


def test_holm_skips_nan_and_keeps_order():
    got = holm([np.nan, 0.04, 0.01, np.nan])
    assert math.isnan(got[0]) and math.isnan(got[3])
    np.testing.assert_allclose(got[1:3], [0.04, 0.02])  # m = 2, not 4
    assert holm([]).shape == (0,)
    assert np.isnan(holm([np.nan])).all()


def test_holm_is_never_below_raw_nor_above_bonferroni():
    p = np.random.default_rng(1).uniform(0, 0.2, size=12)
    adjusted = holm(p)
    assert np.all(adjusted >= p) and np.all(adjusted <= np.minimum(1, len(p) * p) + 1e-15)
    order = np.argsort(p)
    assert np.all(np.diff(adjusted[order]) >= 0)  # monotone in the raw p
