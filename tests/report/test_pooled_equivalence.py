"""gradlab pool --margin: the pooled risk difference's two one-sided tests (across.py)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli.main import app
from experiments.base.errors import ConfigError
from experiments.protocols.study.pooled import registrations
from experiments.report.pool.across import across_table
from experiments.report.pool.pooled import pooled_equivalence
from experiments.report.statistics.equivalence import rate_equivalence
from experiments.report.statistics.pooled_rates import Stratum


def _across(folders, **options):
    """:func:`across_table` given each folder's registration as ``gradlab pool`` reads it."""
    ask = {k: options.get(k, d) for k, d in (("endpoint", "failed"), ("baseline", "none"),
                                             ("alpha", 0.05))}  # fmt: skip
    return across_table(folders, registrations=registrations(folders, **ask), **options)


def _run(folder, variant, seed, *, failed, task):
    """A Catch-like run: failed runs diverged before learning (step 50); the others held."""
    job = folder / f"variant={variant}__seed={seed}"
    job.mkdir(parents=True)
    stability = {
        "unstable": int(failed), "diverged": int(failed), "diverged_step": 50 if failed else None,
        "reached_threshold": int(not failed), "steps_to_threshold": None if failed else 10,
        "final_return": None if failed else 1.0,
    }  # fmt: skip
    summary = {"status": "diverged" if failed else "completed", "job": job.name,
               "ablation": folder.name, "overrides": {"variant": variant, "seed": str(seed)},
               "group": {"variant": variant}, "seed": seed, "task": task, "variant": variant,
               "threshold": 0.9, "training_steps": 100, "steps": 100,
               "stability": stability}  # fmt: skip
    (job / "summary.json").write_text(json.dumps(summary))


def _folder(root, name, task, counts):
    """counts: variant -> (failed runs, runs)."""
    seed = 0
    for variant, (failed, total) in counts.items():
        for i in range(total):
            _run(root / name, variant, seed, failed=i < failed, task=task)
            seed += 1
    return root / name


def test_counts_are_summed_and_tested_as_one_two_by_two():
    strata = {"a": Stratum(1, 20, 2, 20), "b": Stratum(3, 20, 2, 20)}
    counts, got = pooled_equivalence(strata, margin=0.15, alpha=0.05)
    assert counts == (4, 40, 4, 40)
    want = rate_equivalence(4, 40, 4, 40, margin=0.15, alpha=0.05)
    assert (got.p, got.low, got.high) == (want.p, want.low, want.high)
    # 4/40 vs 4/40: difference 0, symmetric interval
    assert got.low == pytest.approx(-got.high)


def test_unequal_runs_per_arm_in_a_stratum_are_refused():
    with pytest.raises(ConfigError, match="'b' has 19 against the baseline's 20"):
        pooled_equivalence(
            {"a": Stratum(1, 20, 2, 20), "b": Stratum(3, 19, 2, 20)}, margin=0.1, alpha=0.05
        )


def test_pool_margin_gives_the_verdicts(tmp_path):
    """Two tasks, 30 runs an arm each. `same` fails as often as the baseline (3/30 in each
    task): 6/60 vs 6/60, equivalent within ±0.15. `worse` fails 15/30 in each: different."""
    one = _folder(tmp_path, "one", "catch", {"none": (3, 30), "same": (3, 30), "worse": (15, 30)})
    two = _folder(tmp_path, "two", "cartpole",
                  {"none": (3, 30), "same": (3, 30), "worse": (15, 30)})  # fmt: skip
    t = _across([one, two], endpoint="failed", margin=0.15)
    same, worse = t.pooled["same"].equivalence, t.pooled["worse"].equivalence
    assert (same.arm_events, same.arm_n, same.base_events, same.base_n) == (6, 60, 6, 60)
    # Holm over the two arms: the smaller TOST p doubled
    raw = [rate_equivalence(k, 60, 6, 60, margin=0.15).p for k in (6, 30)]
    assert same.p_adjusted == pytest.approx(min(1.0, 2 * min(raw)))
    assert same.p_adjusted < 0.05 and same.verdict == "equivalent within ±0.15"
    assert worse.difference == pytest.approx(0.4) and worse.verdict == "different"
    out = CliRunner().invoke(app, ["pool", str(one), str(two), "--margin", "failed=0.15"])
    assert out.exit_code == 0, out.output
    assert "TOST p_adj" in out.output and "equivalent within ±0.15" in out.output
    assert "Equivalence within ±0.15" in out.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--margin", "failed=0"], "--margin 0.0 is out of range"),
        (["--margin", "failed=1.5"], "--margin 1.5 is out of range"),
        (["-e", "final_return", "--margin", "final_return=0.1"], "'final_return' is a value"),
        # one syntax with gradlab table (issue 50 item 6): the old bare number names the new one
        (
            ["--margin", "0.1"],
            "--margin '0.1': give ENDPOINT=VALUE, as gradlab table takes it "
            "(e.g. --margin failed=0.1)",
        ),
        (
            ["-e", "unstable", "--margin", "failed=0.1"],
            "--margin 'failed=0.1' is for 'failed', "
            "but the pooled endpoint is 'unstable' (-e); give --margin unstable=VALUE",
        ),
        (["--margin", "failed=abc"], "expected ENDPOINT=VALUE with VALUE a number"),
    ],
)
def test_bad_margins_are_one_line_exit_2(tmp_path, args, message):
    one = _folder(tmp_path, "one", "catch", {"none": (3, 10), "same": (3, 10)})
    two = _folder(tmp_path, "two", "cartpole", {"none": (3, 10), "same": (3, 10)})
    out = CliRunner().invoke(app, ["pool", str(one), str(two), *args])
    assert out.exit_code == 2 and message in out.output
    assert "Traceback" not in out.output


def test_summed_counts_keep_the_size_at_the_margin_with_unlike_strata():
    """The caption's claim: with strata whose rates differ (0.05 and 0.35 for the baseline), the
    test on summed counts calls equivalent at most alpha of the time when the true difference
    is the margin in every stratum. Monte Carlo, 4,000 draws, seed 7: the rate is below
    0.05 + 3 standard errors (SE of a proportion near 0.05 at 4,000 draws: 0.0034)."""
    import numpy as np

    from experiments.report.statistics.equivalence import score_pvalues

    rng = np.random.default_rng(7)
    n, draws, margin = 50, 4000, 0.1
    base = rng.binomial(n, 0.05, draws) + rng.binomial(n, 0.35, draws)
    arm = rng.binomial(n, 0.15, draws) + rng.binomial(n, 0.45, draws)
    p = score_pvalues(arm, 2 * n, base, 2 * n, margin=margin)
    size = float(np.mean(p < 0.05))
    assert size < 0.05 + 3 * 0.0034
