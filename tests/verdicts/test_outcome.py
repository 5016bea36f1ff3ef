"""The outcome classes of a run (experiments/verdicts/outcome.py) and the endpoint columns of a
results table (experiments/report/runs/endpoints.py), on hand-built curves and on committed runs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from experiments.base.errors import ConfigError
from experiments.report.runs.results import load_results
from experiments.tasks.registry import MINATAR_THRESHOLD_MULTIPLE, task_facts
from experiments.verdicts.outcome import CLASSES, ENDPOINT_CLASSES, endpoint_value, run_outcome
from experiments.verdicts.stability import stability_summary

FINDINGS = Path(__file__).resolve().parents[2] / "results" / "findings"


def _curve(returns, *, every=100, diverge_at=None):
    """Metric rows: a loss per step, an evaluation every ``every`` steps; a non-finite loss at
    ``diverge_at`` (the run stops there)."""
    last = diverge_at if diverge_at is not None else every * len(returns)
    rows = []
    for step in range(1, last + 1):
        row = {"step": step, "loss/total": 1.0, "grad/global_norm": 1.0}
        if step % every == 0 and step // every <= len(returns):
            row["eval/return"] = returns[step // every - 1]
        rows.append(row)
    if diverge_at is not None:
        rows[-1]["loss/total"] = math.nan
    return rows


def _outcome(rows, *, threshold, training_steps):
    s = stability_summary(rows, threshold=threshold, training_steps=training_steps)
    return run_outcome(
        threshold=threshold,
        steps_to_threshold=s["steps_to_threshold"],
        diverged=s["diverged"],
        diverged_step=s["diverged_step"],
        final_return=s["final_return"],
    )


# Ten evaluations at steps 100..1000 of a 1000-step run: the final window (after step 900) is the
# evaluation at step 1000 alone.
@pytest.mark.parametrize(
    ("returns", "diverge_at", "expected"),
    [
        ([0.0, 0.5, 0.95, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.92], None, "held"),
        ([0.0, 0.5, 0.95, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.80], None, "lost"),
        ([0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.89], None, "never_learned"),
        ([0.0, 0.95, 1.0], 350, "diverged_after_learning"),
        ([0.0, 0.5, 0.6], 350, "diverged_before_learning"),
        # reached exactly the threshold and ended exactly on it: held (>=)
        ([0.9, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.9], None, "held"),
    ],
)
def test_classes_on_hand_built_curves(returns, diverge_at, expected):
    rows = _curve(returns, diverge_at=diverge_at)
    assert _outcome(rows, threshold=0.9, training_steps=1000) == expected


def test_first_evaluation_peak_is_lost_only_if_it_reached_the_threshold():
    """The MinAtar shape the old collapse rule missed: the first evaluation is the best and the
    run ends at 0. Against a threshold it reached: lost; against one it never reached: never
    learned (the collapse rule measured from the first evaluation and called both stable)."""
    returns = [6.25] + [0.0] * 19  # Breakout, stress, seed 3009's shape (x10 rewards)
    rows = _curve(returns, every=500)
    s = stability_summary(rows, threshold=None, training_steps=10000)
    assert s["collapsed"] == 0  # the old verdict: no gain over the first evaluation
    assert _outcome(rows, threshold=5.0, training_steps=10000) == "lost"
    assert _outcome(rows, threshold=7.604, training_steps=10000) == "never_learned"


def test_threshold_crossed_after_the_diverging_step_does_not_count():
    assert (
        run_outcome(
            threshold=0.9,
            steps_to_threshold=500,
            diverged=1,
            diverged_step=400,
            final_return=None,
        )
        == "diverged_before_learning"
    )


def test_undefined_without_threshold_or_final_window():
    kw = dict(steps_to_threshold=100, diverged=0, diverged_step=None)
    assert run_outcome(threshold=None, final_return=1.0, **kw) is None
    assert run_outcome(threshold=float("nan"), final_return=1.0, **kw) is None
    assert run_outcome(threshold=0.9, final_return=None, **kw) is None
    assert run_outcome(threshold=0.9, final_return=1.0, diverged=None, **{
        k: v for k, v in kw.items() if k != "diverged"}) is None  # fmt: skip


def test_endpoints_partition_failed():
    """failed = never_learned + lost_after_learning, disjoint; learned is never_learned's
    complement; held is the one class that is not failed."""
    for c in CLASSES:
        failed = endpoint_value("failed", c)
        parts = endpoint_value("never_learned", c) + endpoint_value("lost_after_learning", c)
        assert failed == parts
        assert endpoint_value("learned", c) == 1.0 - endpoint_value("never_learned", c)
        assert (failed == 0.0) == (c == "held")
    assert math.isnan(endpoint_value("failed", None))
    assert set(ENDPOINT_CLASSES) == {"learned", "failed", "lost_after_learning", "never_learned"}


def test_bad_endpoint_and_class_are_one_line_errors():
    with pytest.raises(ConfigError, match="unknown outcome endpoint 'nosuch'; choose one of"):
        endpoint_value("nosuch", "held")
    with pytest.raises(ConfigError, match="outcome 'bogus' is not a class"):
        endpoint_value("failed", "bogus")


def test_minatar_threshold_rule():
    for game in ("breakout", "space_invaders", "asterix", "freeway", "seaquest"):
        facts = task_facts(game)
        assert facts.threshold == pytest.approx(MINATAR_THRESHOLD_MULTIPLE * facts.random_return)
        assert "2 x the random policy" in facts.threshold_source
    assert task_facts("breakout").threshold == pytest.approx(0.7604)
    assert task_facts("space_invaders").threshold == pytest.approx(8.1248)
    assert task_facts("catch").threshold == 0.9
    assert task_facts("cartpole").threshold == 475.0


def _run(folder: str, seed: int, variant: str = "none"):
    runs = load_results(FINDINGS / folder).runs
    match = runs[(runs["seed"] == seed) & (runs["variant"] == variant)]
    assert len(match) == 1
    return match.iloc[0]


def test_committed_minatar_runs_the_issue_named():
    """Breakout seed 3009 (6.25 then 0) and Space Invaders seed 3006 (42.5 then 0) in the stress
    studies: their returns are x10 (task.reward_scale=10), so in game units they peaked at 0.625
    and 4.25 bricks/aliens, 1.6x and 1.05x a random policy's mean (0.38, 4.06), below the
    declared threshold (2x random, times 10: 7.604 and 81.248). By the declared rule they never
    learned; the old `failed` called both successes (stable)."""
    breakout = _run("study_breakout_stress", 3009)
    assert breakout["threshold"] == pytest.approx(7.604)
    assert breakout["threshold_recorded"] is None or np.isnan(breakout["threshold_recorded"])
    assert breakout["outcome"] == "never_learned"
    assert (breakout["failed"], breakout["failed_v1"]) == (1.0, 0.0)
    invaders = _run("study_space_invaders_stress", 3006)
    assert invaders["threshold"] == pytest.approx(81.248)
    assert invaders["outcome"] == "never_learned"
    assert (invaders["failed"], invaders["failed_v1"]) == (1.0, 0.0)


def test_committed_minatar_threshold_recomputed_from_curves():
    """A tuned Breakout run recorded no threshold; its reach of 0.7604 is recomputed from the
    committed curves: the first evaluation at or above it."""
    run = _run("breakout/study3_tuned", 3009)
    import gzip

    import pandas as pd

    folder = Path(run["path"])
    with gzip.open(folder / "curves.csv.gz", "rt") as f:
        curves = pd.read_csv(f)
    evals = curves.dropna(subset=["eval/return"])
    first = int(evals.loc[evals["eval/return"] >= 0.7604, "step"].iloc[0])
    assert run["steps_to_threshold"] == first
    assert run["reached_threshold"] == 1.0
    assert run["outcome"] == "held"  # final window 7.19 >= 0.7604


def test_catch_failed_v1_is_the_registered_count():
    """Study 1's registered primary (failed as registered): 62/70 vs 13/70, the README's figures."""
    runs = load_results(FINDINGS / "study_catch_stress").runs
    counts = runs.groupby("variant")["failed_v1"].sum()
    assert (counts["none"], counts["scale_gradient"]) == (62, 13)
    # the new endpoint, on the same runs: 63/70 and 13/70 (one `none` run reached 0.9, stayed
    # stable and fell below it by the end: lost, not collapsed)
    counts = runs.groupby("variant")["failed"].sum()
    assert (counts["none"], counts["scale_gradient"]) == (63, 13)


def test_an_outcome_endpoint_on_a_task_without_a_threshold_is_one_line(tmp_path):
    """task=gym (any gymnasium id) declares no competence threshold: asking `failed` of its runs
    is refused (one line naming the task, exit 2); `unstable` still tables them."""
    import json

    from typer.testing import CliRunner

    from cli.main import app

    for seed, unstable in enumerate([0, 1]):
        job = tmp_path / "gymruns" / f"variant=none__seed={seed}"
        job.mkdir(parents=True)
        stability = {"unstable": unstable, "diverged": unstable, "diverged_step": None,
                     "reached_threshold": 0, "steps_to_threshold": None, "final_return": 10.0,
                     "steps": 100}  # fmt: skip
        (job / "summary.json").write_text(json.dumps({
            "status": "completed", "job": job.name, "ablation": "gymruns", "seed": seed,
            "overrides": {"variant": "none", "seed": str(seed)}, "group": {"variant": "none"},
            "variant": "none", "task": "gym", "threshold": None, "stability": stability,
        }))  # fmt: skip
    runner = CliRunner()
    bad = runner.invoke(app, ["table", str(tmp_path / "gymruns"), "-m", "failed"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    assert "failed needs the task's competence threshold, and task 'gym' declares none" in (
        bad.output
    )
    ok = runner.invoke(app, ["table", str(tmp_path / "gymruns"), "-m", "unstable"])
    assert ok.exit_code == 0, ok.output
    assert "1/2" in ok.output
