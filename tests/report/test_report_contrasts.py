"""The contrasts' tests and the family: exact tests by hand, Holm by hand, pairing by seed."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from experiments.base.errors import ConfigError
from experiments.report.statistics.contrasts import (
    ContrastOptions,
    adjust,
    contrast,
    pair_by_seed,
)
from experiments.report.statistics.significance import (
    barnard_p,
    fisher_p,
    holm,
    mcnemar_p,
    wilcoxon_p,
)


def test_fisher_1_of_10_against_6_of_10_by_hand():
    """7 events in 20 runs, 10 per arm. P(k events in the first arm) = C(7,k) C(13,10-k) / C(20,10),
    C(20,10) = 184756: k = 0..7: 286, 5005, 27027, 60060, 60060, 27027, 5005, 286 (sum 184756).
    Observed k = 1 (5005); the tables as likely or less: k = 0, 1, 6, 7:
    p = (286 + 5005 + 5005 + 286) / 184756 = 10582 / 184756 = 0.05728."""
    assert fisher_p(1, 10, 6, 10) == pytest.approx(10582 / 184756)
    assert round(fisher_p(1, 10, 6, 10), 4) == 0.0573


def test_barnard_against_scipy_column_orientation():
    # Barnard's test takes the arms as columns; 7/15 vs 12/15 (scipy's documented table)
    assert barnard_p(7, 15, 12, 15) == pytest.approx(
        stats.barnard_exact([[7, 12], [8, 3]], alternative="two-sided").pvalue
    )
    assert barnard_p(0, 5, 0, 5) == 1.0 and math.isnan(barnard_p(0, 0, 1, 3))
    # an unconditional test rejects 1/10 vs 6/10 where Fisher's does not (0.022 vs 0.057)
    assert barnard_p(1, 10, 6, 10) < 0.05 < fisher_p(1, 10, 6, 10)


def test_exact_mcnemar_by_hand():
    # 5 discordant pairs all one way (the arm fails, the baseline does not): 2 * 0.5^5 = 0.0625
    x = [1, 1, 1, 1, 1, 0, 0, 1]
    y = [0, 0, 0, 0, 0, 0, 0, 1]
    assert mcnemar_p(x, y) == pytest.approx(2 * 0.5**5)
    # 4 one way, 1 the other: 2 * P(Bin(5, 1/2) <= 1) = 2 * 6/32 = 0.375
    assert mcnemar_p([1, 1, 1, 1, 0], [0, 0, 0, 0, 1]) == pytest.approx(0.375)
    assert mcnemar_p([1, 0], [1, 0]) == 1.0  # no discordant pair
    # a pair undefined on either side is dropped: only (1, 0) is left, one discordant pair: p = 1
    assert mcnemar_p([1, float("nan"), 1], [0, 1, float("nan")]) == pytest.approx(1.0)
    assert math.isnan(mcnemar_p([], []))


def test_wilcoxon_by_hand():
    # differences 1, 2, 3, 4, 5 all positive: the exact two-sided p = 2 / 2^5 = 0.0625
    assert wilcoxon_p([2, 3, 4, 5, 6], [1, 1, 1, 1, 1]) == pytest.approx(0.0625)
    assert wilcoxon_p([1.0, 2.0], [1.0, 2.0]) == 1.0
    assert math.isnan(wilcoxon_p([float("nan")], [1.0]))
    with pytest.raises(ConfigError, match="differ in length"):
        wilcoxon_p([1.0, 2.0], [1.0])


def test_holm_three_pvalues_by_hand():
    # sorted 0.01, 0.02, 0.04 with m = 3: 3 x 0.01 = 0.03; max(0.03, 2 x 0.02 = 0.04) = 0.04;
    # max(0.04, 1 x 0.04) = 0.04; returned in the input order
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    # the step-down max: 0.01, 0.04, 0.03 -> 0.03, max(0.03, 2 x 0.03 = 0.06), max(0.06, 0.04)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_adjust_holm_within_each_family():
    p = [0.01, 0.02, 0.04, np.nan, 0.01, 0.3]
    families = ["stress", "stress", "stress", "stress", "tuned", ("confirmatory", 5)]
    adjusted, m = adjust(p, families)
    # stress: m = 3 (NaN not counted): 0.03, 0.04, 0.04; tuned: m = 1: 0.01; confirmatory alone
    assert adjusted[:3] == pytest.approx([0.03, 0.04, 0.04]) and math.isnan(adjusted[3])
    assert adjusted[4] == pytest.approx(0.01) and adjusted[5] == pytest.approx(0.3)
    assert m.tolist() == [3, 3, 3, 3, 1, 1]


def test_rate_contrast_independent_and_paired():
    x = np.array([1, 0, 0, 0, 0, 0, 0, 0, 0, 0], dtype=float)  # 1/10
    y = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0], dtype=float)  # 6/10
    d, low, high, p = contrast("rate", x, y)
    assert (d, p) == (pytest.approx(-0.5), pytest.approx(fisher_p(1, 10, 6, 10)))
    assert (low, high) == pytest.approx((-0.74593, -0.08159), abs=2e-5)
    assert contrast("rate", x, y, ContrastOptions(rate_test="barnard"))[3] == pytest.approx(
        barnard_p(1, 10, 6, 10)
    )
    # paired: seeds 1-5 discordant one way (y 1, x 0), seed 0 both 1, seeds 6-9 both 0:
    # McNemar 2 x 0.5^5; the mean paired difference -5/10
    d, low, high, p = contrast("rate", x, y, ContrastOptions(analysis="paired", n_resamples=999))
    assert (d, p) == (pytest.approx(-0.5), pytest.approx(0.0625))
    assert -1.0 <= low < d < high <= 0.0


def test_value_contrast_independent_and_paired():
    x, y = np.array([2.0, 3, 4, 5, 6]), np.array([1.0, 1, 1, 1, 1])
    d, _, _, p = contrast("value", x, y, ContrastOptions(n_resamples=99))
    assert d == pytest.approx(3.0) and p == pytest.approx(stats.mannwhitneyu(x, y).pvalue)
    d, _, _, p = contrast("value", x, y, ContrastOptions(analysis="paired", n_resamples=99))
    assert d == pytest.approx(3.0) and p == pytest.approx(0.0625)
    d, _, _, _ = contrast("value", x, y, ContrastOptions(stat="median", n_resamples=99))
    assert d == pytest.approx(4.0 - 1.0)


def test_pair_by_seed_names_unmatched_seeds():
    arm = pd.DataFrame({"seed": [2, 0, 1, 3]})
    base = pd.DataFrame({"seed": [0, 1, 2, 4]})
    with pytest.raises(ConfigError, match="unmatched seeds in S: seeds 3 only in the arm; "
                       "seeds 4 only in the baseline"):  # fmt: skip
        pair_by_seed(arm, base, where="S")
    a, b = pair_by_seed(arm[arm["seed"] < 3], base[base["seed"] < 3], where="S")
    assert a["seed"].tolist() == b["seed"].tolist() == [0, 1, 2]
    with pytest.raises(ConfigError, match="repeated seed"):
        pair_by_seed(pd.DataFrame({"seed": [0, 0]}), base, where="S")
