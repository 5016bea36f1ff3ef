"""Equivalence (TOST) against a declared margin: experiments/report/statistics/equivalence.py, the
power of an
equivalence design (experiments/protocols/study/power.py), the table's --margin and a study's
margin."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _score_by_hand import restricted_by_grid, z_by_hand
from scipy import stats
from typer.testing import CliRunner

from experiments.base.errors import ConfigError
from experiments.protocols.study.power import equivalence_power, seeds_for_equivalence
from experiments.report.statistics.equivalence import (
    Margin,
    parse_margins,
    rate_equivalence,
    value_equivalence,
    verdict,
)


def test_rate_tost_small_case_by_hand():
    # 5/10 vs 5/10 within ±0.3: by symmetry the restricted rates under delta = -0.3 are
    # p0 = 0.65, p1 = 0.35 (likelihood symmetric about 0.5), so
    # var = 2 * 0.35 * 0.65 / 10 * 20/19 = 0.047894..., z = 0.3 / sqrt(var) = 1.37083
    var = 2 * 0.35 * 0.65 / 10 * 20 / 19
    z = 0.3 / math.sqrt(var)
    got = rate_equivalence(5, 10, 5, 10, margin=0.3, alpha=0.05)
    assert got.p_lower == pytest.approx(stats.norm.sf(z), rel=1e-9)
    assert got.p_upper == pytest.approx(stats.norm.sf(z), rel=1e-9)
    assert got.p == pytest.approx(0.0852, abs=5e-4)  # 1 - Phi(1.3708)
    # 90% interval, symmetric here: its ends are the margins at which one one-sided p = 0.05
    assert got.low == pytest.approx(-got.high, abs=1e-9)
    edge = rate_equivalence(5, 10, 5, 10, margin=got.high)
    assert edge.p_upper == pytest.approx(0.05, abs=1e-6)


@pytest.mark.parametrize("k1,k0", [(50, 50), (50, 58), (50, 75), (50, 30)])
def test_rate_tost_either_side_of_the_margin(k1, k0):
    # n = 100 per arm, margin 0.2: differences 0 and -0.08 lie well inside (equivalent),
    # -0.25 and +0.2 do not (the estimate is at or beyond the margin: p >= 0.5)
    got = rate_equivalence(k1, 100, k0, 100, margin=0.2, alpha=0.05)
    inside = abs(k1 - k0) / 100 < 0.12
    assert (got.p < 0.05) == inside
    if not inside:
        assert got.p >= 0.5 - 1e-9
    # TOST p < alpha exactly when the 90% interval lies within (-m, +m)
    assert (got.p < 0.05) == (-0.2 < got.low and got.high < 0.2)


def test_score_statistic_is_the_restricted_likelihoods_on_a_whole_grid():
    # every outcome of 6 vs 5 runs, both margins: the z of the restricted maximum found on a grid
    for delta in (-0.3, 0.3):
        side = stats.norm.sf if delta < 0 else stats.norm.cdf
        for k1 in range(7):
            for k0 in range(6):
                got = rate_equivalence(k1, 6, k0, 5, margin=0.3)
                want = side(z_by_hand(k1, 6, k0, 5, delta))
                assert (got.p_lower if delta < 0 else got.p_upper) == pytest.approx(
                    want, abs=2e-4
                ), (k1, k0, delta)


def test_statsmodels_score_rates_are_not_the_restricted_maximum():
    # why the score test is computed here: statsmodels 0.15's restricted rates for 5/10 vs 5/10
    # under delta = -0.3 are 0.6 and 0.3; the likelihood's maximum is at 0.65 and 0.35
    from statsmodels.stats.proportion import test_proportions_2indep

    ref = test_proportions_2indep(5, 10, 5, 10, value=-0.3, method="score", alternative="larger")
    assert (ref.prop2_null, ref.prop1_null) == pytest.approx((0.6, 0.3))
    assert restricted_by_grid(5, 10, 5, 10, -0.3) == pytest.approx(0.65, abs=1e-4)


@pytest.mark.parametrize(
    "k1,n1,k0,n0,delta",
    [(1, 40, 1, 40, -0.2), (0, 10, 2, 10, -0.2), (0, 10, 10, 10, -0.2), (3, 10, 9, 12, 0.3),
     (10, 10, 0, 10, 0.2)],
)  # fmt: skip
def test_score_statistic_at_the_edges_is_the_restricted_likelihoods(k1, n1, k0, n0, delta):
    # where statsmodels' root is infeasible (1/40 vs 1/40: a rate of -0.011) or NaN (0/10 vs
    # 2/10), the statistic uses the true restricted maximum, found here on a grid
    margin = abs(delta)
    side = stats.norm.sf if delta < 0 else stats.norm.cdf
    z = z_by_hand(k1, n1, k0, n0, delta)
    got = rate_equivalence(k1, n1, k0, n0, margin=margin)
    assert (got.p_lower if delta < 0 else got.p_upper) == pytest.approx(side(z), abs=2e-4)


def test_zero_of_ten_each_is_not_equivalent_within_020():
    # the score method: 0/10 vs 0/10 does not show |Δ| < 0.2 (p 0.062); Wald would (variance 0)
    got = rate_equivalence(0, 10, 0, 10, margin=0.2)
    assert got.p == pytest.approx(0.0616458, abs=1e-6)
    assert verdict(got.p, 1.0, alpha=0.05, margin=0.2) == "not separated"


def test_value_tost_welch_by_hand():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y = np.array([1.5, 2.5, 3.5, 4.5, 5.5, 6.5])
    # means 2.5 and 4.0; variances 5/3 and 3.5; se^2 = 5/12 + 3.5/6 = 1.0
    se, diff = 1.0, -1.5
    df = 1.0 / ((5 / 12) ** 2 / 3 + (3.5 / 6) ** 2 / 5)
    m = 3.0
    p_lower = stats.t.sf((diff + m) / se, df)  # H0 diff <= -3
    p_upper = stats.t.cdf((diff - m) / se, df)  # H0 diff >= +3
    got = value_equivalence(x, y, margin=m, alpha=0.05)
    assert got.p_lower == pytest.approx(p_lower, rel=1e-9)
    assert got.p_upper == pytest.approx(p_upper, rel=1e-9)
    assert got.p == pytest.approx(max(p_lower, p_upper), rel=1e-9)
    half = stats.t.ppf(0.95, df) * se
    assert (got.low, got.high) == pytest.approx((diff - half, diff + half), rel=1e-9)
    # a margin of 1: the estimate -1.5 is beyond it, p > 0.5, not equivalent
    assert value_equivalence(x, y, margin=1.0).p > 0.5


def test_value_tost_undefined_without_spread_or_runs():
    assert math.isnan(value_equivalence(np.ones(5), np.ones(5), margin=0.1).p)
    assert math.isnan(value_equivalence(np.ones(1), np.arange(5.0), margin=0.1).p)


def test_verdict_words():
    assert verdict(0.01, 0.9, alpha=0.05, margin=0.2) == "equivalent within ±0.2"
    assert verdict(0.3, 0.01, alpha=0.05, margin=0.2) == "different"
    assert verdict(0.3, 0.2, alpha=0.05, margin=0.2) == "not separated"
    assert verdict(float("nan"), 0.2, alpha=0.05, margin=0.2) == "not separated"


_KINDS = {"failed": "rate", "final_return": "value", "steps_to_threshold": "time"}
_LABELS = {"failed": "failed", "final_return": "final return", "steps_to_threshold": "steps"}


@pytest.mark.parametrize(
    "text,words",
    [
        ("failed", "has no value"),
        ("failed=", "has no value"),
        ("failed=-0.1", "not valid"),
        ("failed=0", "not valid"),
        ("failed=abc", "not valid"),
        ("failed=1.5", "risk difference in (0, 1)"),
        ("final_return=nan", "not valid"),
        ("unstable=0.2", "choose one of: failed, final_return"),
        ("steps_to_threshold=10", "choose one of: failed, final_return"),
    ],
)
def test_bad_margins_one_line(text, words):
    with pytest.raises(ConfigError) as err:
        parse_margins([text], _KINDS, _LABELS)
    assert words in str(err.value) and "\n" not in str(err.value)
    assert repr(text) in str(err.value)


def test_margins_parsed():
    got = parse_margins(["failed=0.2", "final_return=5"], _KINDS, _LABELS)
    assert got == {
        "failed": Margin(0.2, "rate", "failed"),
        "final_return": Margin(5.0, "value", "final return"),
    }


# --- power of an equivalence design ---------------------------------------------------------


def test_power_is_low_when_the_truth_is_at_the_margin_or_n_is_small():
    # true difference on the margin: power is the test's size, at most alpha (here 0.046)
    assert equivalence_power(0.5, 0.7, 100, margin=0.2) <= 0.05
    # n = 10: the 90% interval of a risk difference is wider than ±0.2 whatever the outcome
    assert equivalence_power(0.5, 0.5, 10, margin=0.2) == 0.0


def test_power_matches_monte_carlo():
    n, p0, p1, m = 60, 0.5, 0.45, 0.2
    exact = equivalence_power(p0, p1, n, margin=m)
    rng = np.random.default_rng(12345)
    draws = 4000
    k0, k1 = rng.binomial(n, p0, draws), rng.binomial(n, p1, draws)
    # each simulated outcome tested one by one (not the enumeration's grid); the 4000 draws
    # fall on about 400 distinct (k1, k0), each tested once (the same p, a tenth of the calls)
    outcomes = list(zip(k1.tolist(), k0.tolist(), strict=True))
    tested = {o: rate_equivalence(o[0], n, o[1], n, margin=m).p for o in set(outcomes)}
    p = [tested[o] for o in outcomes]
    estimate = float(np.mean(np.array(p) < 0.05))
    se = math.sqrt(exact * (1 - exact) / 4000)  # ~0.008
    assert abs(estimate - exact) < 4 * se  # 4 standard errors: fails by chance ~6e-5


def test_power_monotone_in_n_and_the_smallest_n():
    powers = [equivalence_power(0.5, 0.5, n, margin=0.2) for n in (20, 40, 60, 80, 100, 120)]
    assert powers == sorted(powers)
    need = seeds_for_equivalence(0.5, 0.5, margin=0.2, power=0.8)
    assert equivalence_power(0.5, 0.5, need, margin=0.2) >= 0.8
    assert all(equivalence_power(0.5, 0.5, n, margin=0.2) < 0.8 for n in range(need - 3, need))


def test_power_bad_input():
    with pytest.raises(ConfigError, match="margin=1.2"):
        equivalence_power(0.5, 0.5, 10, margin=1.2)
    with pytest.raises(ConfigError, match="more than 30 runs"):
        seeds_for_equivalence(0.5, 0.5, margin=0.2, max_n=30)


def test_power_of_200_per_arm_is_fast():
    import time

    start = time.perf_counter()
    equivalence_power(0.3, 0.35, 200, margin=0.15)
    assert time.perf_counter() - start < 3.0


# --- the table ------------------------------------------------------------------------------


def test_table_with_margin_and_without(tmp_path):
    from cli.main import app

    runner = CliRunner()
    folder = "results/findings/hidden_scale"
    plain = runner.invoke(app, ["table", folder, "-m", "failed,final_return"])
    assert plain.exit_code == 0, plain.output
    assert "equivalence" not in plain.output.lower()
    got = runner.invoke(
        app, ["table", folder, "-m", "failed,final_return", "--margin", "failed=0.2"]
    )
    assert got.exit_code == 0, got.output
    assert "failed equivalence" in got.output
    assert "Equivalence margin for failed: ±0.2 (risk difference" in got.output
    assert "not separated 90% [" in got.output
    # the rest of the table is the plain one: only the new column and sentences are added
    assert got.output.count("\n") == plain.output.count("\n")
    bad = runner.invoke(app, ["table", folder, "-m", "failed", "--margin", "unstable=0.2"])
    assert bad.exit_code == 2
    assert "unstable" in bad.output and "choose one of: failed" in bad.output
    csv = runner.invoke(app, ["table", folder, "-m", "failed", "--margin", "failed=0.2", "-f",
                              "csv"])  # fmt: skip
    header = csv.output.splitlines()[0].split(",")
    for column in ("failed_tost_p", "failed_tost_p_adjusted", "failed_equiv_low", "failed_verdict"):
        assert column in header


def test_table_rows_agree_with_rate_equivalence():
    from experiments.report.runs.results import load_results
    from experiments.report.statistics.equivalence import Margin
    from experiments.report.table.summarize import summarize

    results = load_results("results/findings/hidden_scale")
    table = summarize(
        results, metrics=["failed"], margins={"failed": Margin(0.3, "rate", "failed")},
        n_resamples=99,
    )  # fmt: skip
    for _, row in table.rows[~table.rows["is_baseline"]].iterrows():
        base = table.rows[
            (table.rows["stratum"] == row["stratum"]) & table.rows["is_baseline"]
        ].iloc[0]
        want = rate_equivalence(
            int(row["failed_k"]), int(row["failed_n"]), int(base["failed_k"]),
            int(base["failed_n"]), margin=0.3,
        )  # fmt: skip
        assert row["failed_tost_p"] == pytest.approx(want.p)
        assert row["failed_equiv_low"] == pytest.approx(want.low)
        assert row["failed_tost_p_adjusted"] >= row["failed_tost_p"]
        assert row["failed_verdict"] in ("not separated", "different", "equivalent within ±0.3")


def test_study_margin_needs_a_reason_and_a_positive_value(tmp_path):
    import shutil

    from experiments.launch.hydra_app import CONF_DIR
    from experiments.protocols.study.design import load_study

    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR / "study", conf / "study")
    path = conf / "study" / "catch_stress.yaml"
    text = path.read_text()
    assert "  alpha: 0.05" in text

    def with_primary(extra: str):
        path.write_text(text.replace("  alpha: 0.05", "  alpha: 0.05\n" + extra, 1))
        return load_study("catch_stress", conf)

    study = with_primary('  margin: 0.2\n  margin_reason: "half the pilot difference"\n')
    assert (study.primary.margin, study.primary.margin_reason) == (
        0.2,
        "half the pilot difference",
    )
    for extra, words in (
        ("  margin: 0.2\n", "no primary.margin_reason"),
        ('  margin: -0.2\n  margin_reason: "x"\n', "expected a risk difference in (0, 1)"),
        ('  margin_reason: "x"\n', "but no primary.margin"),
    ):
        with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
            with_primary(extra)
    assert load_study("catch_stress", CONF_DIR).primary.margin is None


def test_score_interval_inverts_the_test():
    for k1, n1, k0, n0 in ((0, 10, 0, 10), (3, 10, 7, 10), (10, 12, 1, 9)):
        got = rate_equivalence(k1, n1, k0, n0, margin=0.25, alpha=0.05)
        for end, side in ((got.low, "lower"), (got.high, "upper")):
            if abs(end) < 1:
                one = rate_equivalence(k1, n1, k0, n0, margin=abs(end), alpha=0.05)
                p = one.p_lower if side == "lower" else one.p_upper
                if (end < 0) == (side == "lower"):
                    assert p == pytest.approx(0.05, abs=1e-6)
