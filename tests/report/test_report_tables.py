"""The numeric table: hand-computed cells, tests and bold flags on synthetic results folders, and
the folder loader (statuses, recomputed stability, bad folders)."""

from __future__ import annotations

import itertools
import json
import math
from math import comb

import numpy as np
import pytest
from scipy import stats

from experiments.base.errors import ConfigError
from experiments.jobs import store
from experiments.jobs.summary import STATUSES
from experiments.report.runs.results import AVERAGED, load_results
from experiments.report.statistics.competing import gray_test
from experiments.report.statistics.intervals import binomial_ci, bootstrap_ci
from experiments.report.table.metrics import DEFAULT_METRICS
from experiments.report.table.summarize import Confirmed, summarize
from experiments.verdicts.stability import STABILITY_KEYS


def _job(root, name, *, status, group, seed, stability=None, ablation="hidden_scale", **extra):
    job = root / name
    job.mkdir(parents=True)
    summary = {"status": status, "job": name, "ablation": ablation, "group": group, "seed": seed}
    summary.update({"threshold": 0.9, "stability": stability, **extra})
    (job / "summary.json").write_text(json.dumps(summary))
    return job


def _sweep(root):
    """none: 3 completed; scale_gradient: 2 completed, 1 diverged, 1 running, 1 failed."""
    cells = [
        ("none", 0, "completed", 0.2, 1.0, 1),
        ("none", 1, "completed", 0.4, 2.0, 1),
        ("none", 2, "completed", 0.6, 3.0, 0),
        ("scale_gradient", 0, "completed", 0.5, 0.5, 0),
        ("scale_gradient", 1, "completed", 0.9, 1.5, 0),
        ("scale_gradient", 2, "diverged", 0.1, None, 1),
        ("scale_gradient", 3, "running", 100.0, 100.0, 1),  # must never be averaged
        ("scale_gradient", 4, "failed", -50.0, -50.0, 1),
    ]
    for variant, seed, status, ret, loss, unstable in cells:
        diverged = status == "diverged"
        stability = {"final_return": ret, "final_loss": loss, "diverged": int(diverged),
                     "unstable": unstable, "steps": 500 if diverged else 1000,
                     "diverged_step": 500 if diverged else None}  # fmt: skip
        _job(root, f"variant={variant},seed={seed}", status=status, group={"variant": variant},
             seed=seed, stability=stability, task="catch")  # fmt: skip
    return root


def _stress(root, regimes=("stress",)):
    """5 seeds each: unstable none 5/5, clip 2/5, sg 0/5; final returns fully separated for sg."""
    unstable = {"none": [1] * 5, "clip": [1, 1, 0, 0, 0], "sg": [0] * 5}
    offset = {"none": 0.1, "clip": 0.15, "sg": 0.6}
    for regime, variant, seed in itertools.product(regimes, unstable, range(5)):
        ret = offset[variant] + seed / 10
        stability = {"unstable": unstable[variant][seed], "final_return": ret}
        group = {"regime": regime, "task": "catch", "variant": variant}
        _job(root, f"{regime}-{variant}-{seed}", status="completed", group=group, seed=seed,
             stability=stability, task="catch")  # fmt: skip
    return root


@pytest.fixture()
def sweep(tmp_path):
    return load_results(_sweep(tmp_path / "hidden_scale"))


@pytest.fixture()
def stress(tmp_path):
    return load_results(_stress(tmp_path / "hidden_scale"))


# --- cells ---------------------------------------------------------------------------------------


def test_hand_computed_cells(sweep):
    metrics = ["unstable", "final_return", "final_loss"]
    summary = summarize(sweep, metrics=metrics, n_resamples=999, diverged_return=-0.6)
    table = summary.rows.set_index("variant")
    none, sg = table.loc["none"], table.loc["scale_gradient"]
    assert (none["runs"], none["seeds"], none["excluded"], none["excluded_note"]) == (3, 3, 0, "")
    assert (sg["runs"], sg["seeds"], sg["excluded"]) == (5, 3, 2)
    assert sg["excluded_note"] == "1 failed, 1 running"
    # unstable: none 2 of 3, sg 1 of 3 (the running and failed runs' 1s are not counted)
    assert (none["unstable_k"], none["unstable_n"]) == (2, 3)
    assert none["unstable"] == pytest.approx(2 / 3)
    assert (sg["unstable_k"], sg["unstable_n"]) == (1, 3)
    assert sg["unstable_ci_low"] == pytest.approx(1 - 0.975 ** (1 / 3))  # closed form, k = 1
    assert sg["unstable_ci_high"] == pytest.approx(stats.beta.ppf(0.975, 2, 2))
    assert none["unstable_ci_high"] == pytest.approx(0.975 ** (1 / 3))  # closed form, k = n - 1
    # Fisher, 1/3 vs 2/3: the tables k = 0..3 have probabilities 1, 9, 9, 1 (/20): p = 1
    assert sg["unstable_p"] == pytest.approx(1.0) and sg["unstable_p_adjusted"] == 1.0
    assert sg["unstable_delta"] == pytest.approx(1 / 3 - 2 / 3)
    assert math.isnan(none["unstable_p"]) and none["is_baseline"]
    assert none["final_return"] == pytest.approx(0.4)
    # intention to treat: the diverged run's 0.1 is replaced by the declared -0.6, and counted:
    # (0.5 + 0.9 - 0.6) / 3 = 0.2667 (neither the running 100 nor the failed -50 enter)
    assert sg["final_return"] == pytest.approx(0.8 / 3) and sg["final_return_n"] == 3
    assert sg["final_return_imputed"] == 1 and none["final_return_imputed"] == 0
    assert sg["final_return_delta"] == pytest.approx(0.8 / 3 - 0.4)
    assert sg["final_return_p"] == pytest.approx(
        stats.mannwhitneyu([0.5, 0.9, -0.6], [0.2, 0.4, 0.6]).pvalue
    )
    # final loss is no return: the diverged run has none, and is left out (n = 2)
    assert sg["final_loss"] == pytest.approx(1.0) and sg["final_loss_n"] == 2
    low, high = bootstrap_ci([0.2, 0.4, 0.6], n_resamples=999)
    assert (none["final_return_ci_low"], none["final_return_ci_high"]) == (low, high)
    assert 0.2 <= low <= 0.4 <= high <= 0.6
    assert summary.diverged_return == {"catch": -0.6}


def test_default_metrics():
    assert DEFAULT_METRICS == (
        "failed", "lost_after_learning", "never_learned", "final_return", "steps_to_threshold",
        "grad_norm_p99",
    )  # fmt: skip


def test_itt_two_diverged_runs_of_five_get_the_random_return(tmp_path):
    """A cell of 5 runs, 2 diverged (one with a final return logged before it diverged, one
    without): both count as the declared -0.6. Mean (0.8 + 0.9 + 1.0 - 0.6 - 0.6) / 5 = 0.3;
    the survivors alone would give 0.9."""
    returns = {0: 0.8, 1: 0.9, 2: 1.0, 3: 0.95, 4: None}
    for seed, ret in returns.items():
        diverged = seed >= 3
        _job(tmp_path, f"none-{seed}", status="diverged" if diverged else "completed",
             group={"variant": "none"}, seed=seed, task="catch",
             stability={"final_return": ret, "diverged": int(diverged)})  # fmt: skip
    table = summarize(load_results(tmp_path), metrics=["final_return"], diverged_return=-0.6)
    row = table.rows.iloc[0]
    assert row["final_return"] == pytest.approx(0.3) and row["final_return_n"] == 5
    assert row["final_return_imputed"] == 2


def test_itt_uses_the_registry_and_the_reward_scale(tmp_path):
    """Without --diverged-return: the task registry's random-policy return, times the run's
    reward scale (returns are logged scaled)."""
    from experiments.tasks.registry import task_facts

    for seed in range(2):
        _job(tmp_path, f"none-{seed}", status="diverged" if seed else "completed",
             group={"variant": "none"}, seed=seed, task="catch", reward_scale=2.0,
             stability={"final_return": 1.0, "diverged": seed})  # fmt: skip
    row = summarize(load_results(tmp_path), metrics=["final_return"]).rows.iloc[0]
    declared = 2.0 * task_facts("catch").random_return
    assert row["final_return"] == pytest.approx((1.0 + declared) / 2)


def test_itt_without_a_declared_return_is_one_error(tmp_path):
    stability = {"final_return": None, "diverged": 1}
    _job(tmp_path, "a", status="diverged", group={"variant": "none"}, seed=0,
         task="toy_task_without_facts", stability=stability)  # fmt: skip
    results = load_results(tmp_path)
    with pytest.raises(ConfigError, match="1 run\\(s\\) of task 'toy_task_without_facts' "
                       "diverged .* pass --diverged-return VALUE"):  # fmt: skip
        summarize(results, metrics=["final_return"])
    assert summarize(results, metrics=["unstable"]).rows.iloc[0]["unstable_n"] == 0  # not asked for


def test_failed_v1_counts_a_stable_run_that_never_reached_the_threshold(tmp_path):
    """failed_v1 (as Studies 1-3 registered it) = unstable or never reached: seed 0 reached and
    stable (0); seed 1 stable but never reached (1: unstable misses it); seed 2 unstable after
    reaching (1). 2/3 failed, 1/3 unstable."""
    verdicts = [(0, 1), (0, 0), (1, 1)]  # (unstable, reached_threshold)
    for seed, (unstable, reached) in enumerate(verdicts):
        _job(tmp_path, f"none-{seed}", status="completed", group={"variant": "none"}, seed=seed,
             stability={"unstable": unstable, "reached_threshold": reached})  # fmt: skip
    results = load_results(tmp_path)
    assert results.runs["failed_v1"].tolist() == [0.0, 1.0, 1.0]
    # without the divergence and final-window figures no outcome class is defined: never guessed
    assert results.runs["failed"].isna().all()
    row = summarize(results, metrics=["failed_v1", "unstable"]).rows.iloc[0]
    assert (row["failed_v1_k"], row["failed_v1_n"]) == (2, 3)
    assert (row["unstable_k"], row["unstable_n"]) == (1, 3)


def test_failed_is_not_held_and_splits_into_never_learned_and_lost(tmp_path):
    """Four runs, threshold 0.9, hand-classified: held; stable, reached at 300, final 0.5 (lost:
    the collapse rule may miss it, failed_v1 does: 0); diverged at 200 after reaching at 100
    (diverged after learning); stable, never reached (never learned)."""
    runs = [
        dict(diverged=0, diverged_step=None, reached_threshold=1, steps_to_threshold=100,
             final_return=0.95, unstable=0),
        dict(diverged=0, diverged_step=None, reached_threshold=1, steps_to_threshold=300,
             final_return=0.5, unstable=0),
        dict(diverged=1, diverged_step=200, reached_threshold=1, steps_to_threshold=100,
             final_return=None, unstable=1),
        dict(diverged=0, diverged_step=None, reached_threshold=0, steps_to_threshold=None,
             final_return=0.2, unstable=0),
    ]  # fmt: skip
    for seed, stability in enumerate(runs):
        _job(tmp_path, f"none-{seed}", status="completed", group={"variant": "none"}, seed=seed,
             stability=stability)  # fmt: skip
    r = load_results(tmp_path).runs
    assert r["outcome"].tolist() == ["held", "lost", "diverged_after_learning", "never_learned"]
    assert r["failed"].tolist() == [0.0, 1.0, 1.0, 1.0]
    assert r["lost_after_learning"].tolist() == [0.0, 1.0, 1.0, 0.0]
    assert r["never_learned"].tolist() == [0.0, 0.0, 0.0, 1.0]
    assert r["failed_v1"].tolist() == [0.0, 0.0, 1.0, 1.0]
    row = summarize(load_results(tmp_path), metrics=["failed", "lost_after_learning"]).rows.iloc[0]
    assert (row["failed_k"], row["lost_after_learning_k"], row["failed_n"]) == (3, 2, 4)


def test_failed_v1_without_a_threshold_is_unstable(tmp_path):
    _job(tmp_path, "a", status="completed", group={}, seed=0, threshold=None,
         stability={"unstable": 0, "reached_threshold": 0})  # fmt: skip
    _job(tmp_path, "b", status="completed", group={}, seed=1, threshold=None,
         stability={"unstable": 1, "reached_threshold": 0})  # fmt: skip
    _job(tmp_path, "c", status="completed", group={}, seed=2, threshold=None,
         stability={"unstable": None, "reached_threshold": 0})  # fmt: skip
    failed = load_results(tmp_path).runs["failed_v1"].tolist()
    # nothing to reach: a stable run has not failed, an unstable one has, an unknown one is NaN
    assert failed[:2] == [0.0, 1.0] and math.isnan(failed[2])


def test_caption_says_failed_v1_is_unstable_without_a_threshold(tmp_path):
    from experiments.report.table.render import render

    for seed, unstable in enumerate([0, 1, 0, 1]):
        variant = "none" if seed < 2 else "sg"
        _job(tmp_path, f"{variant}-{seed}", status="completed", group={"variant": variant},
             seed=seed, threshold=None, stability={"unstable": unstable})  # fmt: skip
    table = summarize(load_results(tmp_path), metrics=["failed_v1"], n_resamples=99)
    assert table.no_threshold_recorded and table.threshold_recorded is None
    assert list(table.rows["failed_v1_k"]) == [1, 1] and list(table.rows["failed_v1_n"]) == [2, 2]
    caption = render(table, fmt="md").strip().splitlines()[-1]
    assert "(the runs recorded no threshold)." in caption
    assert "never reached" not in caption


def test_fisher_holm_and_bold_by_hand(stress):
    summary = summarize(stress, metrics=["unstable", "final_return"], n_resamples=99)
    table = summary.rows.set_index("variant")
    assert list(table.index) == ["none", "clip", "sg"]  # the baseline first
    # raw Fisher p against none (5/5): sg 0/5 -> 2/252; clip 2/5 -> 42/252 (see significance tests)
    assert table.loc["sg", "unstable_p"] == pytest.approx(2 / 252)
    assert table.loc["clip", "unstable_p"] == pytest.approx(42 / 252)
    # Holm over the stratum's m = 2 contrasts: 2/252 x 2 = 0.0159; max(42/252 x 1, that) = 0.167
    assert table.loc["sg", "unstable_p_adjusted"] == pytest.approx(4 / 252)
    assert table.loc["clip", "unstable_p_adjusted"] == pytest.approx(42 / 252)
    assert table.loc["sg", "unstable_m"] == 2
    assert summary.m == {"unstable": {"all": 2}, "final_return": {"all": 2}}
    # bold exactly where p_adj < 0.05: sg only (clip's 0.17 is not, however good 2/5 looks)
    assert table["unstable_bold"].to_dict() == {"none": False, "clip": False, "sg": True}
    # final return: sg above every seed of none: p = 2/C(10,5) = 2/252, x2 after Holm < 0.05;
    # clip vs none (0.15.. vs 0.1..): p large
    assert table.loc["sg", "final_return_p"] == pytest.approx(2 / comb(10, 5))
    assert table["final_return_bold"].to_dict() == {"none": False, "clip": False, "sg": True}
    # Newcombe risk difference of sg 0/5 against none 5/5: -1, CI within [-1, 0)
    assert table.loc["sg", "unstable_delta"] == -1.0
    assert table.loc["sg", "unstable_delta_low"] == pytest.approx(-1.0)


def test_bold_is_exactly_p_adjusted_below_alpha(stress):
    for alpha in (0.01, 0.05, 0.2):
        table = summarize(stress, metrics=["unstable"], n_resamples=99, alpha=alpha)
        expected = (table.rows["unstable_p_adjusted"] < alpha).fillna(False)
        assert table.rows["unstable_bold"].tolist() == expected.tolist()
    # alpha 0.2: clip's 42/252 = 0.167 < 0.2 becomes bold too
    assert table.rows.set_index("variant")["unstable_bold"].to_dict() == {
        "none": False, "clip": True, "sg": True}  # fmt: skip
    with pytest.raises(ConfigError, match="alpha=1.5 is out of range"):
        summarize(stress, alpha=1.5)


def test_no_bold_without_a_difference(tmp_path):
    for variant, seed in itertools.product(["none", "sg"], range(4)):
        growth = seed + (variant == "sg") * 9
        _job(tmp_path, f"{variant}-{seed}", status="completed", group={"variant": variant},
             seed=seed, stability={"unstable": 0, "hidden_norm_growth": growth})  # fmt: skip
    table = summarize(load_results(tmp_path), metrics=["unstable", "hidden_norm_growth"])
    assert not table.rows["unstable_bold"].any()  # 0/4 vs 0/4: p = 1
    # no direction, still tested: 4 of 4 above, p = 2/C(8,4) = 2/70 = 0.029 < 0.05: bold
    assert table.rows["hidden_norm_growth_p"].iloc[1] == pytest.approx(2 / comb(8, 4))
    assert table.rows["hidden_norm_growth_bold"].tolist() == [False, True]


def test_holm_within_each_regime(tmp_path):
    results = load_results(_stress(tmp_path, regimes=("tuned", "stress")))
    table = summarize(results, metrics=["unstable"], n_resamples=99)
    assert list(zip(table.rows["regime"], table.rows["variant"], strict=True)) == [
        (r, v) for r in ("stress", "tuned") for v in ("none", "clip", "sg")
    ]  # baseline first within each regime
    # each row is contrasted with the none of its own regime; Holm within each regime, m = 2
    assert table.m == {"unstable": {"stress": 2, "tuned": 2}}
    sg = table.rows[table.rows["variant"] == "sg"]
    assert sg["unstable_p"].tolist() == pytest.approx([2 / 252] * 2)
    assert sg["unstable_p_adjusted"].tolist() == pytest.approx([4 / 252] * 2)  # 2/252 x 2, not x4
    clip = table.rows[table.rows["variant"] == "clip"]
    assert clip["unstable_p_adjusted"].tolist() == pytest.approx([42 / 252] * 2)
    assert table.rows["unstable_bold"].tolist() == [False, False, True] * 2
    assert table.shown_keys == ("regime", "variant")
    assert table.constants == {"task": "catch"}
    assert table.compared_key == "variant" and table.strata_keys == ("regime",)


def test_confirmatory_contrast_is_its_own_family(tmp_path):
    results = load_results(_stress(tmp_path, regimes=("tuned", "stress")))
    confirmatory = [({"regime": "stress"}, "clip", "unstable")]
    table = summarize(results, metrics=["unstable"], n_resamples=99, confirmatory=confirmatory)
    stress = table.rows[table.rows["regime"] == "stress"].set_index("variant")
    # clip alone (m = 1): p_adj = raw 42/252; sg exploratory, alone in its family now: 2/252
    assert stress.loc["clip", "unstable_confirmatory"] and stress.loc["clip", "unstable_m"] == 1
    assert stress.loc["clip", "unstable_p_adjusted"] == pytest.approx(42 / 252)
    assert stress.loc["sg", "unstable_p_adjusted"] == pytest.approx(2 / 252)
    assert not stress.loc["sg", "unstable_confirmatory"]
    assert table.m["unstable"] == {"stress": 1, "tuned": 2}
    assert table.confirmatory == (Confirmed("regime=stress, task=catch, variant=clip", "unstable"),)
    with pytest.raises(ConfigError, match="unknown confirmatory contrast 'regime=stress, "
                       "variant=nope'; choose one of: "):  # fmt: skip
        summarize(results, metrics=["unstable"], confirmatory=[({"regime": "stress"}, "nope",
                                                                "unstable")])  # fmt: skip
    with pytest.raises(ConfigError, match="unknown confirmatory metric 'failed'"):
        summarize(results, metrics=["unstable"], confirmatory=[({}, "clip", "failed")])


def test_paired_analysis(tmp_path):
    """Seeds matched: unstable none [1,1,1,1,1], clip [1,1,0,0,0]: 3 discordant pairs one way,
    McNemar 2 x 0.5^3 = 0.25; sg [0]*5: 5 discordant, 2 x 0.5^5 = 0.0625."""
    results = load_results(_stress(tmp_path))
    summary = summarize(results, metrics=["unstable", "final_return"], analysis="paired",
                      n_resamples=99)  # fmt: skip
    table = summary.rows.set_index("variant")
    assert table.loc["clip", "unstable_p"] == pytest.approx(0.25)
    assert table.loc["sg", "unstable_p"] == pytest.approx(0.0625)
    assert table.loc["sg", "unstable_delta"] == pytest.approx(-1.0)
    # final return sg - none per seed: 0.5 each; Wilcoxon with all differences equal and > 0:
    # ranks tie (1..5 averaged), scipy's normal approximation (exact needs no ties)
    assert table.loc["sg", "final_return_delta"] == pytest.approx(0.5)
    assert table.loc["sg", "final_return_p"] == pytest.approx(
        stats.wilcoxon([0.6 + s / 10 for s in range(5)], [0.1 + s / 10 for s in range(5)]).pvalue
    )
    assert summary.analysis == "paired"


def test_paired_analysis_names_unmatched_seeds(tmp_path):
    root = _stress(tmp_path)
    _job(root, "stress-sg-7", status="completed", seed=7, stability={"unstable": 0},
         group={"regime": "stress", "task": "catch", "variant": "sg"}, task="catch")  # fmt: skip
    with pytest.raises(ConfigError, match="unmatched seeds in 'all': sg vs none: seeds 7 only "
                       "in the arm"):  # fmt: skip
        summarize(load_results(root), metrics=["unstable"], analysis="paired")


def test_steps_to_threshold_is_the_competing_risk_incidence_with_gray(tmp_path):
    """none: reached at 100, 200, 300 of 3 -> F(end) = 1; sg: reached at 100 and 200, one
    diverged at 150 first (a competing event, neither censored nor dropped): F(100) = 1/3, S(150)
    = 1/3, F(200) = 1/3 + 1/3 x 1/1 = 2/3 (Kaplan-Meier censoring it would say 1). Gray's p of
    the two, as gray_test gives it on the same six runs; Δ = 2/3 - 1, its interval NaN (none's
    F = 1 has no log(-log) interval). Gray's score is 0 by hand: at 100 each arm has 1 of R = 3
    (n = 3, S = 1, F = 0), at 200 each 1 of R = 2 (a: 1 x 3 x 2/3; b: 2 / (2/3) x 2/3): the
    subdistribution hazards agree where both arms are at risk, so p = 1."""
    runs = {
        "none": [(100, 0, None), (200, 0, None), (300, 0, None)],
        "sg": [(100, 0, None), (None, 1, 150), (200, 0, None)],
    }
    for variant, cells in runs.items():
        for seed, (at, diverged, diverged_at) in enumerate(cells):
            stability = {"reached_threshold": int(at is not None), "steps_to_threshold": at,
                         "diverged": diverged, "diverged_step": diverged_at,
                         "steps": diverged_at or 1000, "unstable": diverged}  # fmt: skip
            _job(tmp_path, f"{variant}-{seed}", status="diverged" if diverged else "completed",
                 group={"variant": variant}, seed=seed, stability=stability)  # fmt: skip
    table = summarize(load_results(tmp_path), metrics=["steps_to_threshold"]).rows.set_index(
        "variant"
    )
    assert table.loc["none", "steps_to_threshold"] == 1.0
    assert table.loc["sg", "steps_to_threshold"] == pytest.approx(2 / 3)
    assert (table.loc["sg", "steps_to_threshold_k"], table.loc["sg", "steps_to_threshold_n"]) == (
        2, 3)  # fmt: skip
    gray = gray_test(np.array([100.0, 150, 200, 100, 200, 300]), np.array([1, 2, 1, 1, 1, 1]),
                     np.array([0, 0, 0, 1, 1, 1]))  # fmt: skip
    assert table.loc["sg", "steps_to_threshold_p"] == pytest.approx(gray.p)
    assert gray.score.tolist() == pytest.approx([0.0]) and gray.p == 1.0
    assert table.loc["sg", "steps_to_threshold_delta"] == pytest.approx(2 / 3 - 1)
    assert math.isnan(table.loc["sg", "steps_to_threshold_delta_low"])


def test_steps_to_threshold_on_runs_without_their_steps_is_one_config_error(tmp_path):
    stability = {"reached_threshold": 0, "diverged": 1, "unstable": 1}  # no diverged_step
    job = _job(tmp_path, "none-0", status="diverged", group={"variant": "none"}, seed=0,
               stability=stability)  # fmt: skip
    with pytest.raises(ConfigError, match=f"^{job}/summary.json has no diverged_step"):
        summarize(load_results(tmp_path), metrics=["steps_to_threshold"])
    summarize(load_results(tmp_path), metrics=["unstable"])  # the other figures still work


def test_constants_go_to_the_tables_fields(stress):
    table = summarize(stress, metrics=["unstable"], n_resamples=99)
    assert table.constants == {"regime": "stress", "task": "catch"}
    assert table.shown_keys == ("variant",)
    assert table.threshold == 0.9


def test_median_and_explicit_baseline(sweep):
    summary = summarize(sweep, metrics=["final_return"], stat="median", baseline="scale_gradient",
                      diverged_return=-0.6)  # fmt: skip
    table = summary.rows.set_index("variant")
    assert table.loc["scale_gradient", "final_return"] == pytest.approx(0.5)  # of 0.5, 0.9, -0.6
    assert table.loc["none", "final_return_delta"] == pytest.approx(0.4 - 0.5)
    assert summary.baseline == "variant=scale_gradient"
    assert list(table.index) == ["scale_gradient", "none"]


def test_no_baseline_no_tests(tmp_path):
    for lr, seed in itertools.product(["0.1", "0.01"], range(3)):
        _job(tmp_path, f"{lr}-{seed}", status="completed", group={"lr": lr}, seed=seed,
             stability={"unstable": int(seed == 0 and lr == "0.1")})  # fmt: skip
    table = summarize(load_results(tmp_path), metrics=["unstable"])
    assert table.baseline is None and table.rows["unstable_p"].isna().all()
    assert not table.rows["unstable_bold"].any()


def test_a_baseline_without_runs_in_a_stratum_is_an_error(tmp_path):
    root = _stress(tmp_path, regimes=("tuned", "stress"))
    for seed in range(5):  # the baseline of stress crashed every time
        summary = root / f"stress-none-{seed}" / "summary.json"
        summary.write_text(summary.read_text().replace('"completed"', '"failed"'))
    with pytest.raises(ConfigError, match="baseline variant=none has no completed or diverged "
                       "run in stratum 'stress'.* one of: clip, sg"):  # fmt: skip
        summarize(load_results(root), metrics=["unstable"])


def test_same_folder_same_table(sweep):
    kw = {"diverged_return": -0.6, "n_resamples": 199}
    assert summarize(sweep, **kw).rows.equals(summarize(sweep, **kw).rows)


def test_baseline_compared_within_each_stratum(tmp_path):
    for task, variant, seed in itertools.product(["catch", "cartpole"], ["none", "sg"], [0, 1]):
        value = {"catch": 1.0, "cartpole": 100.0}[task] + (variant == "sg") * seed
        group = {"task": task, "variant": variant}
        _job(tmp_path, f"{task}-{variant}-{seed}", status="completed", seed=seed, group=group,
             stability={"final_return": value})  # fmt: skip
    table = summarize(load_results(tmp_path), metrics=["final_return"]).rows.set_index("group")
    # sg seeds (v, v+1) vs none (v, v) of the same task: mean difference 0.5 in both tasks
    # (across tasks it would be about 99)
    assert table.loc["task=catch, variant=sg", "final_return_delta"] == pytest.approx(0.5)
    assert table.loc["task=cartpole, variant=sg", "final_return_delta"] == pytest.approx(0.5)
    with pytest.raises(ConfigError, match="baseline variant 'x'"):
        summarize(load_results(tmp_path), baseline="x")
    with pytest.raises(ConfigError, match="baseline key 'lr'"):
        summarize(load_results(tmp_path), baseline="lr=1")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"metrics": ["nope"]}, "unknown metric 'nope'"),
        ({"metrics": []}, "no metric chosen; choose from: failed"),
        ({"stat": "mode"}, "unknown statistic 'mode'; choose one of: iqm, mean, median"),
        ({"baseline": "adam"}, "baseline variant 'adam'"),
        ({"analysis": "both"}, "unknown analysis 'both'; choose one of: independent, paired"),
        ({"rate_test": "chi2"}, "unknown rate test 'chi2'; choose one of: barnard, fisher"),
        ({"alpha": 0}, "alpha=0 is out of range; expected a number in \\(0, 1\\)"),
    ],
)
def test_bad_arguments(sweep, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        summarize(sweep, **kwargs)


# --- the folder ----------------------------------------------------------------------------------


def test_statuses_are_the_stores():
    assert set(AVERAGED) <= set(STATUSES)
    assert "timeout" in store.FINISHED and "timeout" not in AVERAGED  # done, but not averaged


def test_timeout_is_listed_not_averaged(tmp_path):
    _job(tmp_path, "a", status="completed", group={"variant": "none"}, seed=0,
         stability={"unstable": 0})  # fmt: skip
    _job(tmp_path, "b", status="timeout", group={"variant": "none"}, seed=1,
         stability={"unstable": 1})  # fmt: skip
    results = load_results(tmp_path)
    assert results.averaged["job"].tolist() == ["a"]
    row = summarize(results, metrics=["unstable"]).rows.iloc[0]
    assert (row["unstable_k"], row["unstable_n"], row["excluded_note"]) == (0, 1, "1 timeout")


@pytest.mark.parametrize("stored", [None, {}, {"final_return": 0.3}])
def test_stability_recomputed_from_metrics_when_absent_or_incomplete(tmp_path, stored):
    job = _job(tmp_path, "a", status="completed", group={"variant": "none"}, seed=0,
               stability=stored, training_steps=4, return_range=2.0)  # fmt: skip
    rows = [{"step": s, "loss/total": 5.0 - s, "eval/return": r} for s, r in [(1, 0), (2, 1),
            (3, 0.6), (4, 0.4)]]  # fmt: skip
    (job / "metrics.jsonl").write_text("\n".join(map(json.dumps, rows)))
    run = load_results(tmp_path).runs.iloc[0]
    assert run["final_return"] == pytest.approx(0.4)  # window: steps > 3.6
    assert run["best_return"] == 1.0 and run["final_loss"] == pytest.approx(1.0)
    assert run["collapsed"] == 1 and run["unstable"] == 1  # 1.0 - 0.4 >= 0.25 x 2


def test_complete_stored_stability_is_kept(tmp_path):
    stored = dict.fromkeys(STABILITY_KEYS, 0)
    job = _job(tmp_path, "a", status="completed", group={}, seed=0, stability=stored)
    (job / "metrics.jsonl").write_text(json.dumps({"step": 1, "eval/return": 5.0}))
    assert load_results(tmp_path).runs.iloc[0]["final_return"] == 0


def test_missing_and_empty_folders(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_results(tmp_path / "nope")
    with pytest.raises(ConfigError, match="no runs in"):
        load_results(tmp_path)


def test_corrupt_summary(tmp_path):
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "summary.json").write_text('{"status": "compl')
    with pytest.raises(ConfigError, match="corrupt summary file .*job/summary.json"):
        load_results(tmp_path)


def test_unknown_status(tmp_path):
    _job(tmp_path, "a", status="exploded", group={}, seed=0)
    with pytest.raises(ConfigError, match="unknown status .*'exploded'; choose one of: completed"):
        load_results(tmp_path)


def test_mixed_ablations(tmp_path):
    _job(tmp_path, "a", status="completed", group={}, seed=0, ablation="hidden_scale")
    _job(tmp_path, "b", status="completed", group={}, seed=0, ablation="clipping")
    with pytest.raises(ConfigError, match="mixed ablations .*clipping, hidden_scale"):
        load_results(tmp_path)


def test_folder_of_ablations(tmp_path):
    _job(tmp_path / "hidden_scale", "a", status="completed", group={}, seed=0)
    with pytest.raises(ConfigError, match="holds several ablation folders \\(hidden_scale\\)"):
        load_results(tmp_path)


def test_no_averaged_run(tmp_path):
    _job(tmp_path, "a", status="running", group={"variant": "none"}, seed=0)
    _job(tmp_path, "b", status="failed", group={"variant": "none"}, seed=1)
    with pytest.raises(ConfigError, match="no completed or diverged run .* 1 failed, 1 running"):
        summarize(load_results(tmp_path))


def test_single_seed_rate_and_interval(tmp_path):
    _job(tmp_path, "a", status="completed", group={"variant": "none"}, seed=0,
         stability={"final_return": 0.25, "unstable": 1})  # fmt: skip
    row = summarize(load_results(tmp_path), metrics=["unstable", "final_return"]).rows.iloc[0]
    assert (row["unstable_ci_low"], row["unstable_ci_high"]) == pytest.approx(binomial_ci(1, 1))
    assert np.isnan(row["final_return_ci_low"])


def _placements(root):
    """variant and regime constant, variant.placement swept, 6 seeds each: unstable pseudocode
    1/6, tuned 6/6, hook 0/6."""
    unstable = {"pseudocode": [0, 1, 0, 0, 0, 0], "tuned": [1] * 6, "hook": [0] * 6}
    for placement, seed in itertools.product(unstable, range(6)):
        group = {"regime": "stress", "variant": "scale_gradient", "variant.placement": placement}
        stability = {"unstable": unstable[placement][seed], "final_return": seed / 6}
        _job(root, f"{placement}-{seed}", status="completed", group=group, seed=seed,
             stability=stability, ablation="scale_placement")  # fmt: skip
    return load_results(root)


def test_a_key_the_sweep_holds_constant_compares_nothing(tmp_path):
    """scale_placement holds variant (and regime) constant: the placements are contrasted with the
    baseline placement in one stratum, not each in a stratum of its own."""
    table = summarize(_placements(tmp_path), metrics=["unstable"], baseline="hook",
                      n_resamples=99)  # fmt: skip
    assert table.compared_key == "variant.placement"
    assert table.rows["stratum"].nunique() == 1
    # a bare baseline value names the key that varies, not the constant variant. Against hook
    # (0/6), two-sided Fisher: tuned 6/6 p = 2/C(12,6) = 2/924, Holm x2 = 4/924 < 0.05 (bold);
    # pseudocode 1/6 p = 1 (not)
    p = table.rows.set_index("variant.placement")["unstable_p"]
    assert p["tuned"] == pytest.approx(2 / 924) and p["pseudocode"] == pytest.approx(1.0)
    bold = table.rows.set_index("variant.placement")["unstable_bold"]
    assert bold.to_dict() == {"hook": False, "pseudocode": False, "tuned": True}


def test_a_variants_parameter_is_part_of_its_arm_not_a_stratum(tmp_path):
    # Study 1's layout: clipnorm runs carry variant.clipnorm=0.6, the other arms do not. All
    # three arms must share one stratum and be contrasted with none.
    for variant, extra in (
        ("none", {}),
        ("scale_gradient", {}),
        ("clipnorm", {"variant.clipnorm": "0.6"}),
    ):  # noqa: E501
        for seed in range(3):
            group = {"regime": "stress", "variant": variant, **extra}
            stability = {"unstable": int(variant == "none"), "diverged": 0}
            _job(tmp_path, f"{variant}-{seed}", status="completed", group=group, seed=seed,
                 stability=stability, task="catch")  # fmt: skip
    results = load_results(tmp_path)
    assert "variant.clipnorm" not in results.group_keys
    assert set(results.runs["variant"]) == {"none", "scale_gradient", "clipnorm (clipnorm=0.6)"}
    table = summarize(results, metrics=["unstable"])
    assert table.rows["stratum"].nunique() == 1
    clip = table.rows[table.rows["variant"] == "clipnorm (clipnorm=0.6)"].iloc[0]
    # 0/3 against none's 3/3: Fisher two-sided p = 2 / C(6, 3) = 0.1; Holm over 2 arms: 0.2
    assert clip["unstable_p"] == pytest.approx(0.1)
    assert clip["unstable_p_adjusted"] == pytest.approx(0.2)
    # that arm, parameters and all, can be the baseline (its '=' is not KEY=VALUE's)
    for baseline in ("clipnorm (clipnorm=0.6)", "variant=clipnorm (clipnorm=0.6)"):
        against = summarize(results, metrics=["unstable"], baseline=baseline)
        assert against.baseline == "variant=clipnorm (clipnorm=0.6)"
        none = against.rows[against.rows["variant"] == "none"].iloc[0]
        assert none["unstable_p"] == pytest.approx(0.1)  # 3/3 against the clip arm's 0/3
    with pytest.raises(ConfigError, match="baseline variant 'clipnorm \\(clipnorm=9\\)'"):
        summarize(results, metrics=["unstable"], baseline="clipnorm (clipnorm=9)")


def test_a_parameter_swept_alone_stays_the_compared_key(tmp_path):
    for scale in ("0.25", "0.5"):
        group = {"variant": "scale_gradient", "variant.scale": scale}
        _job(tmp_path, f"s{scale}", status="completed", seed=0, task="catch", group=group,
             stability={"unstable": 0})  # fmt: skip
    assert load_results(tmp_path).group_keys == ("variant", "variant.scale")


def test_a_diverged_minatar_run_counts_as_its_games_random_policy(tmp_path):
    # A MinAtar summary says task "minatar"; the game (here breakout) is in config.yaml, and its
    # registered random-policy return (0.3802, experiments/tasks/registry.py) is what a diverged
    # run counts as: mean of (0.3802 + 5.0) / 2 = 2.6901.
    from experiments.tasks.registry import task_facts

    for seed, (status, ret) in enumerate((("diverged", None), ("completed", 5.0))):
        stability = {"final_return": ret, "diverged": int(ret is None)}
        job = _job(tmp_path, f"b{seed}", status=status, group={"variant": "none"}, seed=seed,
                   task="minatar", stability=stability)  # fmt: skip
        (job / "config.yaml").write_text("task:\n  name: minatar\n  id: breakout\n")
    table = summarize(load_results(tmp_path), metrics=["final_return"])
    random = task_facts("breakout").random_return
    assert table.rows["final_return"].iloc[0] == pytest.approx((random + 5.0) / 2)
    assert table.rows["final_return_imputed"].iloc[0] == 1
