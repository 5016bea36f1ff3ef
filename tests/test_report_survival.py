"""Steps to threshold as time to an event: censoring, the Kaplan-Meier median by hand, log-rank
against a hand computation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from experiments.report.survival import km_median, logrank_p, time_to_event


def test_km_median_by_hand_with_censoring():
    """5 runs: reached at 1, 3, 4; censored at 2 and 5. Kaplan-Meier, S(t) = prod (1 - d/n):
    t=1: 5 at risk, 1 event: S = 4/5 = 0.8; t=2: censored, 3 at risk remain;
    t=3: 3 at risk, 1 event: S = 0.8 x 2/3 = 0.5333; t=4: 2 at risk: S = 0.5333 x 1/2 = 0.2667.
    The first time S falls below 1/2 is 4: the median is 4 (ignoring the censored run at 2 would
    give the plain median of 1, 3, 4 = 3)."""
    time = np.array([1.0, 2, 3, 4, 5])
    event = np.array([True, False, True, True, False])
    median, low, high = km_median(time, event)
    assert median == 4.0
    assert low <= 4.0 <= high


@pytest.mark.filterwarnings("ignore:The confidence interval is undefined")  # at S = 1 or 0
def test_km_median_interval_is_brookmeyer_crowley_from_scipy_pointwise_bands():
    """Brookmeyer-Crowley: the median's interval is the times t whose pointwise interval of S(t)
    holds 1/2. Built independently from scipy's ecdf (Greenwood variance, log-log band): from the
    first time its lower band is <= 1/2 to the first time its upper band is < 1/2."""
    time = np.array([12.0, 13, 29, 31, 51, 55, 56, 77, 95, 201, 229, 317])
    event = np.array([1, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1], bool)
    fit = stats.ecdf(stats.CensoredData(uncensored=time[event], right=time[~event]))
    band = fit.sf.confidence_interval(method="log-log")
    at = fit.sf.quantiles
    low = at[np.flatnonzero(band.low.probabilities <= 0.5)[0]]
    high = at[np.flatnonzero(band.high.probabilities < 0.5)[0]]
    assert km_median(time, event) == (77.0, low, high) == (77.0, 29.0, 229.0)


def test_km_median_not_reached_and_empty():
    # one event in 5: S never falls below 1/2 -> not reached (NaN)
    median, _, _ = km_median(np.array([1.0, 2, 3, 4, 5]), np.array([0, 0, 0, 1, 0], bool))
    assert math.isnan(median)
    assert all(math.isnan(v) for v in km_median(np.array([1.0, 2]), np.array([False, False])))
    assert all(math.isnan(v) for v in km_median(np.array([]), np.array([], bool)))


def test_km_median_uncensored_is_the_sample_quantile():
    # no censoring: S drops by 1/10 at each of 10, 20, ..., 100; S < 1/2 first at 60 (S = 0.4)
    time = np.arange(10, 101, 10, dtype=float)
    assert km_median(time, np.ones(10, bool))[0] == 60.0


def test_logrank_by_hand():
    """x: events at 1, 3 (censored 2); y: events at 4 (censored 5). Per event time, observed and
    expected events of x, and the hypergeometric variance n_x n_y d (n - d) / (n^2 (n - 1)):
    t=1: at risk x 3, y 2 (n 5), d 1: E = 3/5 = 0.6, V = 3 x 2 x 1 x 4 / (25 x 4) = 0.24;
    t=3: at risk x 1, y 2 (n 3), d 1: E = 1/3, V = 1 x 2 x 1 x 2 / (9 x 2) = 0.2222;
    t=4: at risk x 0, y 2 (n 2), d 1: E = 0, V = 0.
    O - E = 2 - 0.9333 = 1.0667; V = 0.4622; chi2 = 1.0667^2 / 0.4622 = 2.4615;
    p = P(chi2_1 > 2.4615) = 0.1167."""
    p = logrank_p(np.array([1.0, 2, 3]), np.array([1, 0, 1], bool),
                  np.array([4.0, 5]), np.array([1, 0], bool))  # fmt: skip
    chi2 = (2 - (0.6 + 1 / 3)) ** 2 / (0.24 + 2 / 9)
    assert chi2 == pytest.approx(2.4615, abs=1e-4)
    assert p == pytest.approx(math.erfc(math.sqrt(chi2 / 2)))  # P(chi2_1 > c) = erfc(sqrt(c/2))
    assert p == pytest.approx(0.1167, abs=1e-4)


def test_logrank_edges():
    no = np.array([False, False])
    # x censored at 3 before y's events at 5 and 6: no event time has both arms at risk
    assert math.isnan(logrank_p(np.array([3.0, 3]), no, np.array([5.0, 6]), ~no))
    assert logrank_p(np.array([5.0, 5]), no, np.array([5.0, 5]), no) == 1.0  # nobody reached it
    assert math.isnan(logrank_p(np.array([]), np.array([], bool), np.array([1.0]), ~no[:1]))


def test_time_to_event_censors_at_divergence_or_the_end():
    runs = pd.DataFrame.from_records([
        # reached at 300
        {"threshold": 0.9, "reached_threshold": 1, "steps_to_threshold": 300, "diverged": 0,
         "diverged_step": None, "steps": 1000},
        # never reached, stable: censored at the end of training
        {"threshold": 0.9, "reached_threshold": 0, "steps_to_threshold": None, "diverged": 0,
         "diverged_step": None, "steps": 1000},
        # diverged at 400 without reaching: censored at 400
        {"threshold": 0.9, "reached_threshold": 0, "steps_to_threshold": None, "diverged": 1,
         "diverged_step": 400, "steps": 400},
        # reached at 200, then diverged at 600: the event happened
        {"threshold": 0.9, "reached_threshold": 1, "steps_to_threshold": 200, "diverged": 1,
         "diverged_step": 600, "steps": 600},
        # no threshold for its task: unknown
        {"threshold": None, "reached_threshold": 0, "steps_to_threshold": None, "diverged": 0,
         "diverged_step": None, "steps": 1000},
    ])  # fmt: skip
    time, event = time_to_event(runs)
    assert time[:4].tolist() == [300, 1000, 400, 200] and math.isnan(time[4])
    assert event.tolist() == [True, False, False, True, False]
