"""Competing risks: each run's first event, the Aalen-Johansen cumulative incidence and Gray's test.

The references are R's ``cmprsk::cuminc`` (Gray's own implementation, version 2.2.11) and
lifelines' ``AalenJohansenFitter`` (0.30). The data sets are tests/data/competing_cases.csv; the
literals below are the output of its R script, re-run with (from the repository root)::

    Rscript tests/data/competing_cuminc.R

which prints, per case, cuminc's Gray statistic (``stat``), p-value (``pv``), degrees of freedom
and the cause-1 estimate ``est`` of each group at several times (``timepoints``). The cases:
``ties_2g`` (2 groups, tied times across causes and censoring at event times), ``three_groups``
(3 groups, ties), ``no_competing`` (2 groups, no competing event), ``distinct_2g`` (2 groups, no
tied times: also the lifelines check), ``study2`` (Study 2's scale_gradient vs none, the committed
runs), ``hand`` (worked by hand below), ``all_reach`` (Study 3's CartPole none vs maxnorm:
every run reaches the threshold, so the incidences and the pooled one reach 1),
``breakout_all_reach`` (Study 4's Breakout: every run reaches it, the pooled incidence reaches 1
before the last group's last event) and ``none_reach`` (no run reaches it: cmprsk defines no
cause-1 test, its script prints ``NA``; gradlab's is 0 with p = 1, identical curves).
``test_gray_matches_r_when_rscript_is_there`` re-runs the script when ``Rscript`` is on PATH
(``.ci/run`` installs Debian's r-cran-cmprsk; skipped where there is no R).
"""

from __future__ import annotations

import io
import json
import math
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments.base.errors import ConfigError
from experiments.report.statistics.competing import (
    Incidence,
    aalen_johansen,
    competing_times,
    cumulative_incidence,
    gray_test,
    incidence_difference,
)

ROOT = Path(__file__).resolve().parents[2]
CASES = pd.read_csv(ROOT / "tests/data/competing_cases.csv")

# cmprsk 2.2.11, cuminc(time, cause, group, cencode = 0)$Tests["1", c("stat", "pv", "df")]
R_GRAY = {
    "ties_2g": (0.030932031054129602, 0.86039211183172815, 1),
    "three_groups": (2.9498263565159486, 0.22879859087513665, 2),
    "no_competing": (2.9286839932961288, 0.087018398787794937, 1),
    "distinct_2g": (2.501716712816858, 0.11372227315786132, 1),
    "study2": (10.01268770647494, 0.0015546547837536062, 1),
    "hand": (0.020356234096692082, 0.88654664460577415, 1),
    "all_reach": (1.0574959343295389, 0.30378699982100221, 1),
    # Study 4's Breakout, scale_gradient vs none: every run reached the threshold, and the pooled
    # incidence reaches 1 while one group still has runs at risk (gradlab gave NaN before)
    "breakout_all_reach": (2.1403228802573082, 0.14347169200118937, 1),
}

# timepoints(cuminc(...), times)$est, cause 1: (case, group, time, estimate)
R_EST = [
    ("ties_2g", "a", 2, 0.13846153846153847), ("ties_2g", "a", 4, 0.21823361823361825),
    ("ties_2g", "a", 5, 0.40436847103513773), ("ties_2g", "a", 6, 0.52845837290281739),
    ("ties_2g", "b", 2, 0.20000000000000001), ("ties_2g", "b", 4, 0.26666666666666666),
    ("ties_2g", "b", 5, 0.34285714285714286), ("ties_2g", "b", 6, 0.59682539682539681),
    ("three_groups", "a", 3, 0.25), ("three_groups", "a", 5, 0.52777777777777779),
    ("three_groups", "a", 8, 0.65740740740740744), ("three_groups", "b", 3, 0.16666666666666666),
    ("three_groups", "b", 8, 0.33333333333333331), ("three_groups", "c", 6, 0.33333333333333331),
    ("three_groups", "c", 8, 0.83333333333333326),
    ("no_competing", "a", 2, 0.0), ("no_competing", "a", 7, 0.25925925925925924),
    ("no_competing", "b", 4, 0.34375), ("no_competing", "b", 9, 0.8359375),
    ("distinct_2g", "a", 15, 0.052941176470588228), ("distinct_2g", "a", 45, 0.23104072398190045),
    ("distinct_2g", "a", 60, 0.5503167420814481), ("distinct_2g", "b", 30, 0.42058823529411754),
    ("distinct_2g", "b", 45, 0.49999999999999989),
    ("study2", "none", 1900, 0.024999999999999991), ("study2", "none", 10000, 0.099999999999999964),
    ("study2", "scale_gradient", 166, 0.0),
    ("study2", "scale_gradient", 4800, 0.57499999999999984),
    ("study2", "scale_gradient", 10000, 0.62499999999999989),
    ("hand", "a", 1, 0.33333333333333331), ("hand", "b", 1, 0.0), ("hand", "b", 2, 1 / 3),
    ("all_reach", "maxnorm", 600, 0.30000000000000004), ("all_reach", "maxnorm", 1400, 0.7),
    ("all_reach", "maxnorm", 2600, 0.99999999999999989), ("all_reach", "none", 1000, 0.5),
    ("all_reach", "none", 1400, 0.80000000000000004),
    ("breakout_all_reach", "none", 1000, 0.40425531914893614),
    ("breakout_all_reach", "none", 2000, 0.78723404255319152),
    ("breakout_all_reach", "scale_gradient", 1500, 0.53191489361702127),
    ("breakout_all_reach", "scale_gradient", 4000, 1.0),
]  # fmt: skip


def _case(name: str) -> pd.DataFrame:
    return CASES[CASES["case"] == name]


@pytest.mark.parametrize("name", list(R_GRAY))
def test_gray_statistic_and_p_equal_cmprsk(name):
    d = _case(name)
    result = gray_test(d["time"].to_numpy(), d["cause"].to_numpy(), d["group"].to_numpy())
    statistic, p, df = R_GRAY[name]
    assert result.statistic == pytest.approx(statistic, rel=1e-12)
    assert result.p == pytest.approx(p, rel=1e-9)  # R's 1 - pchisq loses digits, chi2.sf not
    assert result.df == df


def test_gray_by_hand():
    """Group a: reached at 1, diverged at 2, censored at 3; b: diverged at 1, reached at 2,
    censored at 3 (n = 3 each). With rho = 0, h_k = n_k / S_k(t-), R_k = h_k (1 - F_k(t-)):

    t=1: h = (3, 3), R = (3, 3): score_a += 1 - 1 x 3/6 = 1/2. S = (2/3, 2/3), F = (1/3, 0),
         pooled F = 1/6.
    t=2: n = (2, 2), h = (3, 3), R = (3 x 2/3, 3) = (2, 3): score_a += 0 - 1 x 2/5 = -2/5.
    So s = 1/10. Gray's variance (his section 2; a_kk = h_k (1 - h_k / sum h), a_kj = -h_k h_j /
    sum h, c the running sum of a dN/(sum h (1 - F(t-))); the cause-1 part with
    b_k = 1 - (1 - F(t)) / S_k(t), the cause-2 part with b_k = (1 - F(t)) / S_k(t)):
    c = [[1/4 + 3/10, ...]] = 0.55 on the diagonal, -0.55 off it;
    v1 = 2 (25/16)^2 / 18 + (5/16)^2 / 9 + 2 (2.05)^2 / 18 + 1.1^2 / 9 = 0.883507;
    v3 = (1/288 + 1/18 + 4/9, 1/288 + 25/144 + 1/18); v2 = (-25/1152 - 2.05/18 - 2.2/9,
    25/1152 + 25/576 + 2.05/18); V = v1 + c'diag(v3)c + 2 c'v2 = 0.883507 + 0.222674 - 0.614931
    = 393/800. Statistic (1/10)^2 / (393/800) = 8/393 = 0.0203562 (cmprsk: 0.020356234096692082).
    """
    d = _case("hand")
    result = gray_test(d["time"].to_numpy(), d["cause"].to_numpy(), d["group"].to_numpy())
    assert result.score.tolist() == pytest.approx([0.1])
    assert result.variance[0, 0] == pytest.approx(393 / 800)
    assert result.statistic == pytest.approx(8 / 393)
    # the incidences by hand: a reached at 1 with S(0) = 1 of 3 at risk: 1/3; b at 2: 2/3 x 1/2
    a, b = (cumulative_incidence(d["time"][d["group"] == g], d["cause"][d["group"] == g])
            for g in "ab")  # fmt: skip
    assert (a.estimate, b.estimate, a.k, a.n, a.time) == pytest.approx((1 / 3, 1 / 3, 1, 3, 3))


@pytest.mark.parametrize("case, group, at, expected", R_EST)
def test_incidence_equals_cmprsk_estimate(case, group, at, expected):
    d = _case(case)
    d = d[d["group"] == group]
    got = cumulative_incidence(d["time"].to_numpy(), d["cause"].to_numpy(), at=at)
    assert got.estimate == pytest.approx(expected, abs=1e-12)


def test_incidence_and_interval_equal_lifelines_without_ties():
    """lifelines jitters tied times of different causes at random, so compare where there are
    none; its variance is Collett's and its interval the log(-log) one we use (lifelines labels
    the lower end ``upper``: compared as a sorted pair)."""
    from lifelines import AalenJohansenFitter

    d = _case("distinct_2g")
    for _, arm in d.groupby("group"):
        time, cause = arm["time"].to_numpy(), arm["cause"].to_numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitter = AalenJohansenFitter(calculate_variance=True).fit(
                time, cause, event_of_interest=1
            )
        curve = fitter.cumulative_density_.iloc[:, 0]
        for at in [15.0, 30.0, 44.0, 57.0, float(time.max())]:
            mine = cumulative_incidence(time, cause, at=at)
            j = curve.index[curve.index <= at][-1]
            assert mine.estimate == pytest.approx(curve[j], abs=1e-12)
            assert mine.variance == pytest.approx(fitter.variance_[j], rel=1e-9)
            assert [mine.low, mine.high] == pytest.approx(
                sorted(fitter.confidence_interval_.loc[j]), rel=1e-9
            )


def test_without_censoring_before_the_end_the_incidence_is_k_over_n():
    """Every run reaches the threshold, diverges, or runs to the end: F(end) = k/n."""
    time = np.array([10.0, 20, 20, 30, 100, 100, 5, 100])
    cause = np.array([1, 2, 1, 1, 0, 0, 2, 0])
    got = cumulative_incidence(time, cause)
    assert (got.estimate, got.k, got.n, got.time) == pytest.approx((3 / 8, 3, 8, 100))
    assert 0 < got.low < 3 / 8 < got.high < 1


def test_aalen_johansen_by_hand_with_censoring():
    """a: reached at 1; censored at 2; diverged at 3; reached at 4 (n = 4). S(1) = 3/4, at 3 two
    at risk: S(3) = 3/8; F(1) = 1/4, F(4) = 1/4 + S(3) x 1/1 = 5/8. Variance at 1: Collett with one
    event: S(0)^2 d (n - d) / n^3 = 3/64."""
    times, cif, var = aalen_johansen(np.array([1.0, 2, 3, 4]), np.array([1, 0, 2, 1]))
    assert times.tolist() == [1, 3, 4] and cif.tolist() == pytest.approx([1 / 4, 1 / 4, 5 / 8])
    assert var[0] == pytest.approx(3 / 64)


def test_incidence_edges():
    empty = cumulative_incidence(np.array([np.nan]), np.array([0]))
    assert math.isnan(empty.estimate) and (empty.k, empty.n) == (0, 0)
    none = cumulative_incidence(np.array([5.0, 7]), np.array([2, 0]))
    assert none.estimate == 0 and math.isnan(none.low) and math.isnan(none.high)
    early = cumulative_incidence(np.array([5.0, 7]), np.array([1, 0]), at=4)
    assert early.estimate == 0 and early.k == 0


def test_difference_is_mover_of_the_two_intervals():
    x, y = Incidence(0.6, 0.4, 0.75, 0.01, 10, 6, 10), Incidence(0.1, 0.03, 0.3, 0.01, 10, 1, 10)
    d, low, high = incidence_difference(x, y)
    assert d == pytest.approx(0.5)
    assert low == pytest.approx(0.5 - math.hypot(0.2, 0.2))
    assert high == pytest.approx(0.5 + math.hypot(0.15, 0.07))
    zero = Incidence(0.0, math.nan, math.nan, 0.0, 10, 0, 10)
    assert math.isnan(incidence_difference(x, zero)[1])


def test_gray_edges():
    # nobody reached the threshold: the same (zero) incidence in both groups
    same = gray_test(np.array([1.0, 2, 3, 4]), np.array([2, 0, 2, 0]), np.array([0, 0, 1, 1]))
    assert same.p == 1.0
    one = gray_test(np.array([1.0, 2]), np.array([1, 0]), np.array([0, 0]))
    assert math.isnan(one.p) and one.df == 0


def _runs(rows):
    columns = ["path", "threshold", "reached_threshold", "steps_to_threshold", "diverged",
               "diverged_step", "steps"]  # fmt: skip
    return pd.DataFrame.from_records(rows, columns=columns)


def test_competing_times_first_event_wins():
    runs = _runs([
        ("r0", 0.9, 1, 300, 0, None, 1000),  # reached at 300
        ("r1", 0.9, 0, None, 0, None, 1000),  # neither: censored at the end
        ("r2", 0.9, 0, None, 1, 400, 400),  # diverged at 400 first
        ("r3", 0.9, 1, 200, 1, 600, 600),  # reached at 200, diverged later: reached
        ("r4", 0.9, 1, 700, 1, 600, 600),  # crossed after its diverging step: diverged
        ("r5", 0.9, 1, 600, 1, 600, 600),  # at its diverging step: reached
        ("r6", None, 0, None, 0, None, 1000),  # no threshold: not a run of this figure
    ])  # fmt: skip
    time, cause = competing_times(runs)
    assert time[:6].tolist() == [300, 1000, 400, 200, 600, 600] and math.isnan(time[6])
    assert cause.tolist() == [1, 0, 2, 1, 2, 1, 0]


@pytest.mark.parametrize(
    "row, missing",
    [
        (("runs/a", 0.9, 0, None, 0, None, None), "has no steps "),
        (("runs/a", 0.9, 0, None, 1, None, 50), "has no diverged_step "),
        (("runs/a", 0.9, 1, None, 0, None, 50), "has no steps_to_threshold "),
        (("runs/a", 0.9, 1, 30, 1, None, 50), "has no steps_to_threshold and diverged_step"),
    ],
)
def test_competing_times_without_the_steps_it_needs_names_the_file(row, missing):
    with pytest.raises(ConfigError, match=f"^runs/a/summary.json {missing}") as error:
        competing_times(_runs([row]))
    assert "\n" not in str(error.value)


def test_a_column_missing_altogether_names_the_file():
    runs = _runs([("runs/b", 0.9, 0, None, 0, None, 100)]).drop(columns=["steps"])
    with pytest.raises(ConfigError, match="runs/b/summary.json has no steps"):
        competing_times(runs)


def _gray(name):
    d = _case(name)
    return gray_test(d["time"].to_numpy(), d["cause"].to_numpy(), d["group"].to_numpy())


def test_gray_in_every_degenerate_shape():
    # every run reaches it (the pooled incidence reaches 1 before the last event): cmprsk's p
    assert _gray("breakout_all_reach").p == pytest.approx(0.14347169200118937, rel=1e-9)
    assert _gray("all_reach").p == pytest.approx(0.30378699982100221, rel=1e-9)
    # no competing event at all: cmprsk's p
    assert _gray("no_competing").p == pytest.approx(0.087018398787794937, rel=1e-9)
    # no run reaches it: both incidences are 0 throughout, the same curve (cmprsk reports no
    # cause-1 test; gradlab: statistic 0, p 1)
    none = _gray("none_reach")
    assert (none.statistic, none.df, none.p) == (0.0, 1, 1.0)
    # one arm empty: one group, no comparison (NaN), as cmprsk, which needs two groups
    d = _case("breakout_all_reach")
    one = d[d["group"] == "none"]
    alone = gray_test(one["time"].to_numpy(), one["cause"].to_numpy(), one["group"].to_numpy())
    assert math.isnan(alone.statistic) and math.isnan(alone.p) and alone.df == 0


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="R (cmprsk) is not installed")
def test_gray_matches_r_when_rscript_is_there():
    done = subprocess.run(
        ["Rscript", "tests/data/competing_cuminc.R"], cwd=ROOT, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    if done.returncode != 0 and "cmprsk" in done.stderr:
        pytest.skip("R without the cmprsk package")
    out = pd.read_csv(io.StringIO(done.stdout))
    for name, d in CASES.groupby("case"):
        rows = out[out["case"] == name].set_index("kind")["value"]
        result = gray_test(d["time"].to_numpy(), d["cause"].to_numpy(), d["group"].to_numpy())
        if pd.isna(rows["stat"]):  # cmprsk defines no cause-1 test: no run reached it
            assert name == "none_reach" and (result.statistic, result.p) == (0.0, 1.0)
            continue
        assert result.statistic == pytest.approx(float(rows["stat"]), rel=1e-12)
        assert result.p == pytest.approx(float(rows["pv"]), rel=1e-9)


def test_cli_table_on_runs_without_their_steps_exits_2_with_one_line(tmp_path):
    from typer.testing import CliRunner

    from cli.main import app

    job = tmp_path / "hs" / "none-0"
    job.mkdir(parents=True)
    stability = {"diverged": 1, "reached_threshold": 0, "unstable": 1}  # no diverged_step
    summary = {"status": "diverged", "job": "none-0", "ablation": "hs", "seed": 0,
               "group": {"variant": "none"}, "threshold": 0.9, "stability": stability}  # fmt: skip
    (job / "summary.json").write_text(json.dumps(summary))
    result = CliRunner().invoke(app, ["table", str(tmp_path / "hs"), "-m", "steps_to_threshold"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and f"{job}/summary.json has no diverged_step" in lines[0]
    assert "Traceback" not in result.output
