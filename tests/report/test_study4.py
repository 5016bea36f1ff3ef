"""Study 4's confirmatory contrast, recomputed from the committed runs without gradlab's endpoint
or pooling code: each run's ``failed`` from its own curves (the first evaluation at or above the
task's threshold, the final window's mean), then the pooled risk difference's TOST with the
restricted maximum found on a grid (tests/_score_by_hand.py), and the Cochran-Mantel-Haenszel
test written out by hand.
These are the figures the README and docs/studies.md quote."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest
from _score_by_hand import z_by_hand
from scipy import stats

from experiments.report.pool.across import across_table
from experiments.report.runs.results import load_results

FINDINGS = Path(__file__).resolve().parents[2] / "results" / "findings"
TASKS = ("catch", "cartpole", "breakout", "space_invaders")
ARMS = ("none", "scale_gradient")
# the committed counts of failed runs (of 47) per task, README and docs/studies.md
QUOTED = {
    "catch": {"none": 4, "scale_gradient": 1},
    "cartpole": {"none": 7, "scale_gradient": 11},
    "breakout": {"none": 0, "scale_gradient": 0},
    "space_invaders": {"none": 15, "scale_gradient": 24},
}


def _failed_from_curves(job: Path) -> int:
    """Did not learn and hold, from the run's own files: it diverged, or no evaluation reached
    the threshold, or the mean evaluation after 0.9 of the planned steps is below it."""
    summary = json.loads((job / "summary.json").read_text())
    threshold, planned = float(summary["threshold"]), int(summary["training_steps"])
    with gzip.open(job / "curves.csv.gz", "rt") as f:
        curves = pd.read_csv(f)
    evals = curves.dropna(subset=["eval/return"])
    final = evals.loc[evals["step"] > 0.9 * planned, "eval/return"]
    reached = bool((evals["eval/return"] >= threshold).any())
    held = summary["status"] == "completed" and len(final) and final.mean() >= threshold
    return int(not (reached and held))


def _counts() -> dict[str, dict[str, tuple[int, int]]]:
    out = {}
    for task in TASKS:
        folder = FINDINGS / f"study_faithful_{task}"
        out[task] = {}
        for arm in ARMS:
            jobs = sorted(folder.glob(f"regime=tuned__task={task}__variant={arm}__seed=*"))
            out[task][arm] = (sum(_failed_from_curves(j) for j in jobs), len(jobs))
    return out


@pytest.fixture(scope="module")
def counts():
    return _counts()


def test_failed_from_the_curves_is_what_the_tables_count(counts):
    for task in TASKS:
        runs = load_results(FINDINGS / f"study_faithful_{task}").runs
        for arm in ARMS:
            mine = runs[runs["variant"] == arm]
            assert counts[task][arm] == (int(mine["failed"].sum()), len(mine)), (task, arm)
            assert counts[task][arm] == (QUOTED[task][arm], 47), (task, arm)


def test_pooled_tost_and_cmh_recomputed_by_hand(counts):
    k1 = sum(counts[t]["scale_gradient"][0] for t in TASKS)
    k0 = sum(counts[t]["none"][0] for t in TASKS)
    assert (k1, k0) == (36, 26)  # of 188 each
    lower = stats.norm.sf(z_by_hand(k1, 188, k0, 188, -0.1))
    p_tost = max(lower, stats.norm.cdf(z_by_hand(k1, 188, k0, 188, 0.1)))

    # the 90% interval's ends: where a one-sided p is 0.05, found by bisection on the grid's z
    def end(side, lo, hi):
        for _ in range(40):
            mid = (lo + hi) / 2
            p = stats.norm.sf(z_by_hand(k1, 188, k0, 188, mid)) if side < 0 else stats.norm.cdf(
                z_by_hand(k1, 188, k0, 188, mid))  # fmt: skip
            if (p > 0.05) == (side < 0):
                hi = mid
            else:
                lo = mid
        return (lo + hi) / 2

    low, high = end(-1, -0.5, k1 / 188 - k0 / 188), end(1, k1 / 188 - k0 / 188, 0.5)
    # Mantel-Haenszel odds ratio and the CMH statistic (no continuity correction), by hand
    num = den = dev = var = 0.0
    for t in TASKS:
        a, c = counts[t]["scale_gradient"][0], counts[t]["none"][0]
        b, d, n = 47 - a, 47 - c, 94
        num, den = num + a * d / n, den + b * c / n
        dev += a - 47 * (a + c) / n
        var += 47 * 47 * (a + c) * (b + d) / (n * n * (n - 1))
    p_cmh = float(stats.chi2.sf(dev**2 / var, 1))
    table = across_table(
        [FINDINGS / f"study_faithful_{t}" for t in TASKS], endpoint="failed", by_name=True,
        primary="scale_gradient", margin=0.1,
    )  # fmt: skip
    row = table.pooled["scale_gradient"]
    assert row.equivalence.p_adjusted == pytest.approx(p_tost, abs=2e-4)
    assert (row.equivalence.low, row.equivalence.high) == pytest.approx((low, high), abs=2e-4)
    assert row.contrast.odds_ratio == pytest.approx(num / den, rel=1e-9)
    assert row.p_adjusted == pytest.approx(p_cmh, rel=1e-6)
    # the quoted figures: RD +0.05 [90% CI -0.01, +0.12], TOST p 0.11, OR 1.60, CMH p 0.13
    quoted = (0.05, -0.01, 0.12)
    assert tuple(round(x, 2) for x in (k1 / 188 - k0 / 188, low, high)) == quoted
    assert round(p_tost, 2) == 0.11 and round(num / den, 2) == 1.60 and round(p_cmh, 2) == 0.13
