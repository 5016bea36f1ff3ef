"""A task's reference from the baseline's calibration runs and where its threshold falls, by
hand on committed runs; the plan's threshold and prior lines; a value plan's refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from experiments.protocols.calibration.reference import task_references
from experiments.report.runs.results import load_results

FINDINGS = Path(__file__).resolve().parents[2] / "results" / "findings"
BREAKOUT = FINDINGS / "breakout" / "study3_tuned"
SPACE = FINDINGS / "space_invaders" / "study3_tuned"

pytestmark = pytest.mark.skipif(not BREAKOUT.is_dir(), reason="no committed runs here")


def test_breakout_threshold_is_a_floor_in_the_tuned_baseline():
    ref = task_references(load_results(BREAKOUT).runs, regime="tuned")["breakout"]
    # the ten baseline runs' final returns (summary.json, seeds 3000-3009), summed by hand:
    # 4.625 + 6.25 + 6.1875 + 6.34375 + 6.1875 + 6.625 + 7.1875 + 7.375 + 5.90625 + 7.1875
    # = 63.875, mean 6.3875; the threshold 2 x 0.3802 = 0.7604 is 11.9% of it
    assert ref.n == 10 and ref.r_ref == pytest.approx(6.3875)
    assert ref.threshold == pytest.approx(0.7604) and ref.r_rand == pytest.approx(0.3802)
    assert (ref.reached, ref.held, ref.near) == (10, 10, 0)
    assert ref.verdict == "floor" and ref.learns
    assert "threshold 0.7604 = 12% of R_ref: reached by 10/10, held by 10/10" in ref.line()


def test_space_invaders_threshold_is_noise_sensitive():
    runs = load_results(SPACE).runs
    ref = task_references(runs, regime="tuned")["space_invaders"]
    base = runs[(runs.variant == "none")]
    near = ((base.final_return - 8.1248).abs() <= 0.05 * 8.1248).sum()
    assert ref.near == near == 1 and ref.n == 10
    assert ref.verdict == "noise-sensitive"  # 1 of 10 >= the declared share 0.1


def test_plan_prints_the_threshold_check_and_the_priors_cited():
    result = CliRunner().invoke(app, ["study", "plan", "faithful_breakout", "--calibration",
                                      str(BREAKOUT), "--prior", str(BREAKOUT)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "floor; the baseline learns" in result.output
    assert "failed: none 0/10, scale_gradient 0/10" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--jobs", "0"], "--jobs 0; expected a positive number"),
        (["--jobs", "-3"], "--jobs -3; expected a positive number"),
        (["--power", "0"], "--power 0.0; expected a target power in (0, 1)"),
        (["--calibration", str(FINDINGS / "catch" / "calibration")],
         "calibration' holds no none runs in regime tuned without other settings"),
    ],
)  # fmt: skip
def test_bad_plan_input_is_one_line(args, message):
    result = CliRunner().invoke(app, ["study", "plan", "faithful_breakout", *args])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and message in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["plan", "catch_stress", "--shrink", "-1"], "--shrink -1.0; expected the share"),
        (["plan", "catch_stress", "--strata", "1000"], "--strata 1000; expected the number"),
        (["plan", "catch_stress", "--true-rates", "0.5,0.5"], "is for an equivalence plan"),
        (["plan", "faithful_catch", "--true-rates", "2,0"], "2 is not a rate in [0, 1]"),
        (["audit", "/nonexistent/dir"], "is not a study's results folder (no such folder)"),
        (["run", "catch_stress", "--jobs", "abc"], "--jobs 'abc' is not valid"),
        (["run", "catch_stress", "--jobs", "0"], "--jobs 0 is out of range"),
    ],
)
def test_study_commands_refuse_bad_input_in_one_line_before_any_output(args, message):
    # issue 49's small ones: each printed a line, a long error, twice, or nothing before
    result = CliRunner().invoke(app, ["study", *args])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and message in result.output


def test_a_diverged_return_that_is_no_return_is_refused():
    result = CliRunner().invoke(app, ["table", str(BREAKOUT), "--diverged-return", "1e308"])
    assert result.exit_code == 2 and "is not an episode return" in result.output
