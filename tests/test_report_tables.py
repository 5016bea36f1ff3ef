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

from experiments import store
from experiments.errors import ConfigError
from experiments.metrics import STABILITY_KEYS
from experiments.report.results import AVERAGED, load_results
from experiments.report.stats import binomial_ci, bootstrap_ci
from experiments.report.tables import DEFAULT_METRICS, summarize


def _job(root, name, *, status, group, seed, stability=None, ablation="hidden_scale", **extra):
    job = root / name
    job.mkdir(parents=True)
    summary = {"status": status, "job": name, "ablation": ablation, "group": group, "seed": seed}
    summary.update(threshold=0.9, stability=stability, **extra)
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
        stability = {"final_return": ret, "final_loss": loss, "diverged": int(status == "diverged"),
                     "unstable": unstable}  # fmt: skip
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


# --- cells -------------------------------------------------------------------------------------


def test_hand_computed_cells(sweep):
    metrics = ["unstable", "final_return", "final_loss"]
    table = summarize(sweep, metrics=metrics, n_resamples=999).set_index("variant")
    none, sg = table.loc["none"], table.loc["scale_gradient"]
    assert (none["runs"], none["seeds"], none["not_averaged"], none["not_averaged_note"]) == (
        3, 3, 0, "")  # fmt: skip
    assert (sg["runs"], sg["seeds"], sg["not_averaged"]) == (5, 3, 2)
    assert sg["not_averaged_note"] == "1 failed, 1 running"
    # unstable: none 2 of 3, sg 1 of 3 (the running and failed runs' 1s are not counted)
    assert (none["unstable_k"], none["unstable_n"], none["unstable"]) == (
        2,
        3,
        pytest.approx(2 / 3),
    )
    assert (sg["unstable_k"], sg["unstable_n"]) == (1, 3)
    assert sg["unstable_ci_low"] == pytest.approx(1 - 0.975 ** (1 / 3))  # closed form, k = 1
    assert sg["unstable_ci_high"] == pytest.approx(stats.beta.ppf(0.975, 2, 2))
    assert none["unstable_ci_high"] == pytest.approx(0.975 ** (1 / 3))  # closed form, k = n - 1
    # Fisher, 1/3 vs 2/3: the tables k = 0..3 have probabilities 1, 9, 9, 1 (/20): p = 1
    assert sg["unstable_p"] == pytest.approx(1.0) and sg["unstable_p_adjusted"] == 1.0
    assert math.isnan(none["unstable_p"]) and none["is_baseline"]
    assert none["final_return"] == pytest.approx(0.4)
    assert sg["final_return"] == pytest.approx(0.5)  # (0.5 + 0.9 + 0.1) / 3: not 100 or -50
    assert sg["final_loss"] == pytest.approx(1.0) and sg["final_loss_n"] == 2
    assert sg["final_return_p_better"] == pytest.approx(5 / 9)  # pairs x > y: 2 + 3 + 0
    assert sg["final_loss_p_better"] == pytest.approx(5 / 6)  # pairs x < y: 3 + 2
    assert sg["final_return_p"] == pytest.approx(
        stats.mannwhitneyu([0.5, 0.9, 0.1], [0.2, 0.4, 0.6]).pvalue
    )
    low, high = bootstrap_ci([0.2, 0.4, 0.6], n_resamples=999)
    assert (none["final_return_ci_low"], none["final_return_ci_high"]) == (low, high)
    assert 0.2 <= low <= 0.4 <= high <= 0.6


def test_default_metrics():
    assert DEFAULT_METRICS == (
        "unstable", "final_return", "steps_to_threshold", "grad_norm_p99", "hidden_norm_growth"
    )  # fmt: skip


def test_fisher_holm_and_bold_by_hand(stress):
    table = summarize(stress, metrics=["unstable", "final_return"], n_resamples=99)
    table = table.set_index("variant")
    assert list(table.index) == ["none", "clip", "sg"]  # the baseline first
    # raw Fisher p against none (5/5): sg 0/5 -> 2/252; clip 2/5 -> 42/252 (see significance tests)
    assert table.loc["sg", "unstable_p"] == pytest.approx(2 / 252)
    assert table.loc["clip", "unstable_p"] == pytest.approx(42 / 252)
    # Holm over the m = 2 rows compared: 2/252 x 2; max(42/252 x 1, that)
    assert table.loc["sg", "unstable_p_adjusted"] == pytest.approx(4 / 252)
    assert table.loc["clip", "unstable_p_adjusted"] == pytest.approx(42 / 252)
    assert table.attrs["compared"] == {"unstable": 2, "final_return": 2}
    # bold (lower is better): best sg 0/5; vs none 2/252 (x2 < 0.05: worse), vs clip 112/252
    assert table["unstable_bold"].to_dict() == {"none": False, "clip": True, "sg": True}
    # final return: sg beats every seed of both others: p = 2/252 each, x2 after Holm < 0.05
    assert table["final_return_bold"].to_dict() == {"none": False, "clip": False, "sg": True}
    assert table.loc["sg", "final_return_p"] == pytest.approx(2 / comb(10, 5))


def test_no_bold_when_nothing_separates_the_rows(sweep):
    table = summarize(sweep, metrics=["unstable", "final_return"], n_resamples=99)
    assert not table["unstable_bold"].any() and not table["final_return_bold"].any()


def test_no_bold_when_all_tied_or_no_direction(tmp_path):
    for variant, seed in itertools.product(["none", "sg"], range(4)):
        growth = seed + (variant == "sg") * 9
        _job(tmp_path, f"{variant}-{seed}", status="completed", group={"variant": variant},
             seed=seed, stability={"unstable": 0, "hidden_norm_growth": growth})  # fmt: skip
    table = summarize(load_results(tmp_path), metrics=["unstable", "hidden_norm_growth"])
    assert not table["unstable_bold"].any() and not table["hidden_norm_growth_bold"].any()
    assert table["hidden_norm_growth_p"].iloc[1] == pytest.approx(2 / comb(8, 4))  # still tested


def test_strata_holm_over_the_table_and_bold_per_stratum(tmp_path):
    results = load_results(_stress(tmp_path, regimes=("tuned", "stress")))
    table = summarize(results, metrics=["unstable"], n_resamples=99)
    assert list(zip(table["regime"], table["variant"], strict=True)) == [
        (r, v) for r in ("tuned", "stress") for v in ("none", "clip", "sg")
    ]  # baseline first within each regime
    # each row is compared with the none of its own regime; Holm over all m = 4 compared rows
    assert table.attrs["compared"] == {"unstable": 4}
    sg = table[table["variant"] == "sg"]
    assert sg["unstable_p"].tolist() == pytest.approx([2 / 252] * 2)
    assert sg["unstable_p_adjusted"].tolist() == pytest.approx([8 / 252] * 2)  # 2/252 x 4
    clip = table[table["variant"] == "clip"]
    assert clip["unstable_p_adjusted"].tolist() == pytest.approx([84 / 252] * 2)  # x2, 3rd/4th
    assert table["unstable_bold"].tolist() == [False, True, True] * 2  # per regime
    assert table.attrs["shown_keys"] == ["regime", "variant"]
    assert table.attrs["constants"] == {"task": "catch"}
    assert table.attrs["compared_key"] == "variant"


def test_constants_go_to_attrs(stress):
    table = summarize(stress, metrics=["unstable"], n_resamples=99)
    assert table.attrs["constants"] == {"regime": "stress", "task": "catch"}
    assert table.attrs["shown_keys"] == ["variant"]
    assert table.attrs["threshold"] == 0.9


def test_median_and_explicit_baseline(sweep):
    table = summarize(sweep, metrics=["final_return"], stat="median", baseline="scale_gradient")
    table = table.set_index("variant")
    assert table.loc["scale_gradient", "final_return"] == pytest.approx(0.5)
    assert table.loc["none", "final_return_p_better"] == pytest.approx(4 / 9)
    assert table.attrs["baseline"] == "variant=scale_gradient"
    assert list(table.index) == ["scale_gradient", "none"]


def test_no_baseline_no_tests(tmp_path):
    for lr, seed in itertools.product(["0.1", "0.01"], range(3)):
        _job(tmp_path, f"{lr}-{seed}", status="completed", group={"lr": lr}, seed=seed,
             stability={"unstable": int(seed == 0 and lr == "0.1")})  # fmt: skip
    table = summarize(load_results(tmp_path), metrics=["unstable"])
    assert table.attrs["baseline"] is None and table["unstable_p"].isna().all()
    assert table.attrs["compared"] == {"unstable": 0}


def test_same_folder_same_table(sweep):
    assert summarize(sweep).equals(summarize(sweep))


def test_baseline_compared_within_each_stratum(tmp_path):
    for task, variant, seed in itertools.product(["catch", "cartpole"], ["none", "sg"], [0, 1]):
        value = {"catch": 1.0, "cartpole": 100.0}[task] + (variant == "sg") * seed
        group = {"task": task, "variant": variant}
        _job(tmp_path, f"{task}-{variant}-{seed}", status="completed", seed=seed, group=group,
             stability={"final_return": value})  # fmt: skip
    table = summarize(load_results(tmp_path), metrics=["final_return"]).set_index("group")
    # sg seeds (v, v+1) vs none (v, v) of the same task: pairs > : 2 of 4, ties: 2 -> 0.75
    assert table.loc["task=catch, variant=sg", "final_return_p_better"] == pytest.approx(0.75)
    assert table.loc["task=cartpole, variant=sg", "final_return_p_better"] == pytest.approx(0.75)
    with pytest.raises(ConfigError, match="baseline variant 'x'"):
        summarize(load_results(tmp_path), baseline="x")
    with pytest.raises(ConfigError, match="baseline key 'lr'"):
        summarize(load_results(tmp_path), baseline="lr=1")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"metrics": ["nope"]}, "unknown metric 'nope'"),
        ({"metrics": []}, "no metric chosen; choose from: unstable"),
        ({"stat": "mode"}, "unknown statistic 'mode'; choose one of: iqm, mean, median"),
        ({"baseline": "adam"}, "baseline variant 'adam'"),
    ],
)
def test_bad_arguments(sweep, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        summarize(sweep, **kwargs)


# --- the folder ----------------------------------------------------------------------------------


def test_statuses_are_the_stores():
    assert set(AVERAGED) <= set(store.STATUSES)
    assert "timeout" in store.FINISHED and "timeout" not in AVERAGED  # done, but not averaged


def test_timeout_is_listed_not_averaged(tmp_path):
    _job(tmp_path, "a", status="completed", group={"variant": "none"}, seed=0,
         stability={"unstable": 0})  # fmt: skip
    _job(tmp_path, "b", status="timeout", group={"variant": "none"}, seed=1,
         stability={"unstable": 1})  # fmt: skip
    results = load_results(tmp_path)
    assert results.averaged["job"].tolist() == ["a"]
    row = summarize(results, metrics=["unstable"]).iloc[0]
    assert (row["unstable_k"], row["unstable_n"], row["not_averaged_note"]) == (0, 1, "1 timeout")


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
    row = summarize(load_results(tmp_path), metrics=["unstable", "final_return"]).iloc[0]
    assert (row["unstable_ci_low"], row["unstable_ci_high"]) == pytest.approx(binomial_ci(1, 1))
    assert np.isnan(row["final_return_ci_low"])


def _placements(root):
    """variant and regime constant, variant.placement swept, 6 seeds each: unstable pseudocode
    1/6, paper 6/6, hook 0/6."""
    unstable = {"pseudocode": [0, 1, 0, 0, 0, 0], "paper": [1] * 6, "hook": [0] * 6}
    for placement, seed in itertools.product(unstable, range(6)):
        group = {"regime": "stress", "variant": "scale_gradient", "variant.placement": placement}
        stability = {"unstable": unstable[placement][seed], "final_return": seed / 6}
        _job(root, f"{placement}-{seed}", status="completed", group=group, seed=seed,
             stability=stability, ablation="scale_placement")  # fmt: skip
    return load_results(root)


def test_a_key_the_sweep_holds_constant_compares_nothing(tmp_path):
    """scale_placement holds variant (and regime) constant: the placements are compared with each
    other in one stratum, not each in a stratum of its own (where nothing could be bold)."""
    table = summarize(_placements(tmp_path), metrics=["unstable"], n_resamples=99)
    assert table.attrs["compared_key"] == "variant.placement"
    assert table["stratum"].nunique() == 1
    # against the best (hook, 0/6), two-sided Fisher: paper 6/6 p = 2/C(12,6) = 2/924, Holm x2
    # = 4/924 < 0.05 (significantly worse); pseudocode 1/6 p = 1 (not)
    bold = table.set_index("variant.placement")["unstable_bold"]
    assert bold.to_dict() == {"pseudocode": True, "paper": False, "hook": True}
    # a bare baseline value names the key that varies, not the constant variant
    again = _placements(tmp_path / "again")
    bare = summarize(again, metrics=["unstable"], baseline="hook", n_resamples=99)
    p = bare.set_index("variant.placement")["unstable_p"]
    assert p["paper"] == pytest.approx(2 / 924) and p["pseudocode"] == pytest.approx(1.0)
