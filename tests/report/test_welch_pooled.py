"""The pooled Welch difference with equal task weights, against scipy, statsmodels and by hand."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.weightstats import ttost_ind

from experiments.base.errors import ConfigError
from experiments.report.statistics.welch_pooled import verdict, welch_pooled

_RNG = np.random.default_rng(20261128)
_TASKS = [
    (_RNG.normal(0.8, 0.2, 30), _RNG.normal(1.0, 0.15, 31)),
    (_RNG.normal(0.95, 0.3, 28), _RNG.normal(1.0, 0.25, 30)),
    (_RNG.normal(1.05, 0.1, 30), _RNG.normal(1.0, 0.1, 29)),
]


def test_one_task_is_welchs_t_test_and_statsmodels_tost():
    a, b = _TASKS[0]
    got = welch_pooled([(a, b)], margin=0.1)
    ref = stats.ttest_ind(a, b, equal_var=False)
    assert got.p == pytest.approx(ref.pvalue, rel=1e-10)
    assert got.df == pytest.approx(ref.df, rel=1e-10)
    low, high = ref.confidence_interval(0.95)
    assert got.ci == pytest.approx((low, high), rel=1e-10)
    tost_p, _, _ = ttost_ind(a, b, -0.1, 0.1, usevar="unequal")
    assert got.tost_p == pytest.approx(tost_p, rel=1e-9)


def test_by_hand_two_tasks_of_two_runs():
    # task 1: arm (1, 3) mean 2 var 2, base (0, 0) mean 0 var 0 -> d 2, v 2/2 = 1
    # task 2: arm (0, 2) mean 1 var 2, base (1, 1) mean 1 var 0 -> d 0, v 1
    # D = (2 + 0) / 2 = 1, SE = sqrt(1 + 1) / 2 = 0.7071; df = 2^2 / (1/1 + 1/1) = 2
    got = welch_pooled([([1, 3], [0, 0]), ([0, 2], [1, 1])])
    assert got.estimate == pytest.approx(1.0)
    assert got.se == pytest.approx(np.sqrt(2) / 2)
    assert got.df == pytest.approx(2.0)
    t = 1 / (np.sqrt(2) / 2)
    assert got.p == pytest.approx(2 * stats.t.sf(t, 2))


def test_pooled_estimate_and_se_equal_statsmodels_cell_means_ols_with_hc2():
    # Another route: one OLS of every run on 2G cell dummies; HC2 gives each cell mean the
    # variance s^2 / n, so the contrast mean_g(arm_g - base_g) has the pooled SE.
    y, cells = [], []
    for g, (a, b) in enumerate(_TASKS):
        for arm, values in ((0, a), (1, b)):
            y += list(values)
            cells += [2 * g + arm] * len(values)
    x = np.zeros((len(y), 2 * len(_TASKS)))
    x[np.arange(len(y)), cells] = 1.0
    fit = sm.OLS(np.asarray(y), x).fit(cov_type="HC2")
    contrast = np.zeros(2 * len(_TASKS))
    contrast[0::2], contrast[1::2] = 1 / len(_TASKS), -1 / len(_TASKS)
    test = fit.t_test(contrast)
    got = welch_pooled(_TASKS)
    assert got.estimate == pytest.approx(float(test.effect[0]), rel=1e-10)
    assert got.se == pytest.approx(float(test.sd[0, 0]), rel=1e-10)


def test_satterthwaite_df_by_the_formula_and_tost_by_its_interval():
    got = welch_pooled(_TASKS, margin=0.05)
    comps = [(v.var(ddof=1) / len(v), len(v)) for pair in _TASKS for v in pair]
    df = sum(c for c, _ in comps) ** 2 / sum(c * c / (n - 1) for c, n in comps)
    assert got.df == pytest.approx(df, rel=1e-12)
    # the TOST rejects exactly when the 90% interval lies inside +-margin
    inside = -0.05 < got.tost_ci[0] and got.tost_ci[1] < 0.05
    assert (got.tost_p < 0.05) == inside
    for task, (a, b) in zip(got.tasks, _TASKS, strict=True):
        assert task.p == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue, rel=1e-10)


def test_verdicts():
    assert verdict(-0.1, 0.01, None, alpha=0.05, margin=None) == "lower"
    assert verdict(0.1, 0.01, 0.5, alpha=0.05, margin=0.05) == "higher"
    assert verdict(-0.01, 0.01, 0.01, alpha=0.05, margin=0.05) == "lower, within ±0.05"
    assert verdict(0.0, 0.9, 0.01, alpha=0.05, margin=0.05) == "equivalent within ±0.05"
    assert verdict(0.0, 0.9, 0.2, alpha=0.05, margin=0.05) == "not separated"


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        ([], "at least one task"),
        ([([1.0], [1.0, 2.0])], "at least two finite values"),
        ([([1.0, np.nan], [1.0, 2.0])], "at least two finite values"),
        ([([1.0, 1.0], [2.0, 2.0])], "zero variance"),
    ],
)
def test_bad_input(tasks, message):
    with pytest.raises(ConfigError, match=message):
        welch_pooled(tasks)
