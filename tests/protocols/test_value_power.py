"""Power of the pooled Welch difference: against statsmodels' t-test power and a simulation."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.power import TTestIndPower

from experiments.base.errors import ConfigError
from experiments.protocols.study.value_power import runs_for_power, welch_pooled_power
from experiments.report.statistics.welch_pooled import welch_pooled


def test_one_task_equals_statsmodels_two_sample_t_power():
    # Equal sds and n: Satterthwaite's df is 2n - 2, the pooled t test's; power equal.
    got = welch_pooled_power([0.2], 30, effect=0.1)
    ref = TTestIndPower().power(effect_size=0.1 / 0.2, nobs1=30, alpha=0.05, ratio=1.0)
    assert got == pytest.approx(ref, rel=1e-8)


def test_g_tasks_of_equal_sd_are_one_task_of_g_times_n_runs_in_se():
    # SE of the pooled difference = sqrt(G * 2 sd^2 / n) / G = sd * sqrt(2 / (G n)).
    four = welch_pooled_power([0.2] * 4, 10, effect=0.1)
    one = TTestIndPower().power(effect_size=0.5, nobs1=40, alpha=0.05, ratio=1.0)
    assert four == pytest.approx(one, abs=1e-3)  # df 72 vs 78: the t quantiles nearly equal


def _simulated(sds, n, effect, margin, reps=4000, seed=7):
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        tasks = [(rng.normal(effect, s, n), rng.normal(0.0, s, n)) for s in sds]
        got = welch_pooled(tasks, margin=margin)
        hits += (got.tost_p < 0.05) if margin is not None else (got.p < 0.05)
    return hits / reps


@pytest.mark.parametrize(("effect", "margin"), [(0.08, None), (0.0, 0.1)])
def test_power_matches_a_simulation_of_the_test_itself(effect, margin):
    sds, n = [0.15, 0.3, 0.2, 0.25], 12
    got = welch_pooled_power(sds, n, effect=effect, margin=margin)
    assert _simulated(sds, n, effect, margin) == pytest.approx(got, abs=0.03)


def test_runs_for_power_is_the_first_n_reaching_it():
    n = runs_for_power([0.2, 0.3], effect=0.1, power=0.8)
    assert welch_pooled_power([0.2, 0.3], n, effect=0.1) >= 0.8
    assert welch_pooled_power([0.2, 0.3], n - 1, effect=0.1) < 0.8


def test_bad_input():
    with pytest.raises(ConfigError, match="one sd > 0"):
        welch_pooled_power([0.0], 10, effect=0.1)
    with pytest.raises(ConfigError, match="at least 2 runs"):
        welch_pooled_power([0.1], 1, effect=0.1)
    with pytest.raises(ConfigError, match="target power"):
        runs_for_power([0.1], effect=0.1, power=0)
    with pytest.raises(ConfigError, match="no n up to 5"):
        runs_for_power([1.0], effect=0.01, power=0.9, max_n=5)
