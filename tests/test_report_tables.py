"""Seed statistics and tables: hand-computed cells on a synthetic results folder, statistics against
scipy and brute force, output formats, and bad folders."""

from __future__ import annotations

import io
import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from experiments.errors import ConfigError
from experiments.report.markup import latex_escape, markdown_table
from experiments.report.results import load_results
from experiments.report.stats import bootstrap_ci, probability_of_improvement, statistic
from experiments.report.tables import format_number, render, summarize


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
        ("none", 0, "completed", 0.2, 1.0),
        ("none", 1, "completed", 0.4, 2.0),
        ("none", 2, "completed", 0.6, 3.0),
        ("scale_gradient", 0, "completed", 0.5, 0.5),
        ("scale_gradient", 1, "completed", 0.9, 1.5),
        ("scale_gradient", 2, "diverged", 0.1, None),
        ("scale_gradient", 3, "running", 100.0, 100.0),  # must never be averaged
        ("scale_gradient", 4, "failed", -50.0, -50.0),
    ]
    for variant, seed, status, ret, loss in cells:
        stability = {"final_return": ret, "final_loss": loss, "diverged": int(status == "diverged")}
        _job(root, f"variant={variant},seed={seed}", status=status, group={"variant": variant},
             seed=seed, stability=stability)  # fmt: skip
    return root


@pytest.fixture()
def sweep(tmp_path):
    return load_results(_sweep(tmp_path / "hidden_scale"))


# --- statistics ------------------------------------------------------------------------------


def test_point_estimates():
    x = [1, 2, 3, 4, 5, 6, 7, 100, float("nan")]
    assert statistic(x, stat="mean") == pytest.approx(16.0)
    assert statistic(x, stat="median") == pytest.approx(4.5)
    assert statistic(x, stat="iqm") == pytest.approx(4.5)  # mean of 3, 4, 5, 6
    assert statistic(x, stat="iqm") == pytest.approx(stats.trim_mean(x[:-1], 0.25))
    assert math.isnan(statistic([], stat="mean"))


@pytest.mark.parametrize("stat, fn", [("mean", np.mean), ("median", np.median)])
def test_bootstrap_matches_scipy(stat, fn):
    x = np.array([0.3, 1.2, 0.7, 2.5, 0.9])
    expected = stats.bootstrap(
        (x,), fn, method="percentile", n_resamples=2000, rng=np.random.default_rng(7)
    ).confidence_interval
    got = bootstrap_ci(x, stat=stat, n_resamples=2000, seed=7)
    assert got == pytest.approx((expected.low, expected.high))
    assert bootstrap_ci(x, stat=stat, n_resamples=2000, seed=7) == got  # seeded: repeatable
    assert x.min() <= got[0] < fn(x) < got[1] <= x.max()


def test_bootstrap_degenerate_inputs():
    assert all(math.isnan(v) for v in bootstrap_ci([0.5]))  # one seed: no interval
    assert all(math.isnan(v) for v in bootstrap_ci([float("nan"), 0.5]))
    assert bootstrap_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)
    with pytest.raises(ConfigError, match="statistic 'mode'"):
        bootstrap_ci([1.0, 2.0], stat="mode")
    with pytest.raises(ConfigError, match="confidence"):
        bootstrap_ci([1.0, 2.0], confidence=95)


def test_probability_of_improvement_against_pair_counting():
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 5, size=7).astype(float), rng.integers(0, 5, size=4).astype(float)
    pairs = list(itertools.product(x, y))
    greater = sum((a > b) + 0.5 * (a == b) for a, b in pairs) / len(pairs)
    less = sum((a < b) + 0.5 * (a == b) for a, b in pairs) / len(pairs)
    assert probability_of_improvement(x, y) == pytest.approx(greater)
    assert probability_of_improvement(x, y, higher_is_better=False) == pytest.approx(less)
    assert greater + less == pytest.approx(1.0)
    assert probability_of_improvement([1.0, 2.0], [3.0]) == 0.0
    assert math.isnan(probability_of_improvement([], [1.0]))


# --- the table ---------------------------------------------------------------------------------


def test_hand_computed_cells(sweep):
    table = summarize(sweep, metrics=["final_return", "final_loss"], n_resamples=999).set_index(
        "variant"
    )
    none, sg = table.loc["none"], table.loc["scale_gradient"]
    assert (none["runs"], none["seeds"], none["diverged"], none["not_finished"]) == (3, 3, 0, "")
    assert (sg["runs"], sg["seeds"], sg["diverged"]) == (5, 3, 1)
    assert sg["not_finished"] == "1 failed, 1 running"
    assert none["final_return"] == pytest.approx(0.4)
    assert sg["final_return"] == pytest.approx(0.5)  # (0.5 + 0.9 + 0.1) / 3: not 100 or -50
    assert none["final_loss"] == pytest.approx(2.0)
    assert sg["final_loss"] == pytest.approx(1.0) and sg["final_loss_n"] == 2
    assert sg["final_return_p_better"] == pytest.approx(5 / 9)  # pairs x > y: 2 + 3 + 0
    assert sg["final_loss_p_better"] == pytest.approx(5 / 6)  # pairs x < y: 3 + 2
    assert math.isnan(none["final_return_p_better"]) and none["is_baseline"]
    low, high = bootstrap_ci([0.2, 0.4, 0.6], n_resamples=999)
    assert (none["final_return_ci_low"], none["final_return_ci_high"]) == (low, high)
    assert 0.2 <= low <= 0.4 <= high <= 0.6


def test_median_and_explicit_baseline(sweep):
    table = summarize(sweep, metrics=["final_return"], stat="median", baseline="scale_gradient")
    table = table.set_index("variant")
    assert table.loc["scale_gradient", "final_return"] == pytest.approx(0.5)
    assert table.loc["none", "final_return_p_better"] == pytest.approx(4 / 9)
    assert table.attrs["baseline"] == "variant=scale_gradient"


def test_same_folder_same_table(sweep):
    assert summarize(sweep).equals(summarize(sweep))


@pytest.mark.parametrize("stored", [None, {}])
def test_stability_recomputed_from_metrics_when_absent(tmp_path, stored):
    job = _job(tmp_path, "a", status="completed", group={"variant": "none"}, seed=0,
               stability=stored)  # fmt: skip
    rows = [{"step": s, "loss/total": 4.0 - s, "eval/return": 0.3 * s} for s in (1, 2, 3)]
    (job / "metrics.jsonl").write_text("\n".join(map(json.dumps, rows)))
    runs = load_results(tmp_path).runs
    assert runs.loc[0, "final_return"] == pytest.approx(0.9)
    assert runs.loc[0, "final_loss"] == pytest.approx(1.0)


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
        ({"stat": "mode"}, "unknown statistic 'mode'; choose one of: iqm, mean, median"),
        ({"baseline": "adam"}, "baseline variant 'adam'"),
    ],
)
def test_bad_arguments(sweep, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        summarize(sweep, **kwargs)


# --- rendering ---------------------------------------------------------------------------------


def test_markdown(sweep):
    text = render(summarize(sweep, metrics=["final_return", "final_loss"]), fmt="md")
    lines = text.splitlines()
    assert lines[0].startswith("| variant") and "final return ↑" in lines[0]
    assert set(lines[1]) <= set("|-: ")
    none, sg = lines[2], lines[3]  # the baseline first
    cells = [c.strip() for c in sg.strip("|").split("|")]
    assert cells[:3] == ["scale_gradient", "3", "1/3"]
    assert cells[3].startswith("**0.5 [") and cells[4] == "0.56"  # best return, P = 5/9
    assert cells[5].startswith("**1.00 [") and cells[5].endswith("(n=2)**")  # best loss, 2 seeds
    assert cells[7] == "1 failed, 1 running"
    assert [c.strip() for c in none.strip("|").split("|")][4] == "base" and "**" not in none
    assert "mean over seeds" in text


def test_latex_structure(sweep):
    text = render(summarize(sweep, metrics=["final_return", "final_loss"]), fmt="latex")
    for piece in (r"\begin{table}", r"\toprule", r"\midrule", r"\bottomrule", r"\caption{"):
        assert text.count(piece) == 1, piece
    assert text.index(r"\toprule") < text.index(r"\midrule") < text.index(r"\bottomrule")
    assert r"\label{tab:hidden_scale}" in text
    assert r"scale\_gradient" in text and "scale_gradient &" not in text
    assert r"final return $\uparrow$" in text and r"final loss $\downarrow$" in text
    row = next(line for line in text.splitlines() if line.startswith(r"scale\_gradient"))
    assert row.count(r"\textbf{") == 2 and r"\textbf{0.5 [" in row
    none_row = next(line for line in text.splitlines() if line.startswith("none &"))
    assert r"\textbf" not in none_row
    assert r"95\% percentile-bootstrap" in text  # caption escaped


def test_csv_and_json(sweep):
    table = summarize(sweep, metrics=["final_return"])
    back = pd.read_csv(io.StringIO(render(table, fmt="csv")))
    assert list(back["variant"]) == ["none", "scale_gradient"]
    assert back["final_return"].tolist() == pytest.approx([0.4, 0.5])
    data = json.loads(render(table, fmt="json"))
    assert data["ablation"] == "hidden_scale" and data["baseline"] == "variant=none"
    assert data["rows"][0]["final_return_p_better"] is None  # NaN -> null
    assert data["rows"][1]["diverged"] == 1
    with pytest.raises(ConfigError, match="unknown format 'xml'"):
        render(table, fmt="xml")


def test_single_seed_shows_no_interval(tmp_path):
    _job(tmp_path, "a", status="completed", group={"variant": "none"}, seed=0,
         stability={"final_return": 0.25})  # fmt: skip
    text = render(summarize(load_results(tmp_path), metrics=["final_return"]), fmt="md")
    assert "0.25 [—]" in text


@pytest.mark.parametrize(
    "value, text",
    [(0.8123, "0.812"), (3.14159, "3.14"), (12.34, "12.3"), (475.3, "475"), (12345.6, "12,346"),
     (1.5e6, "1.5e+06"), (-0.5, "-0.5"), (float("nan"), "—")],
)  # fmt: skip
def test_format_number(value, text):
    assert format_number(value) == text


def test_markup_helpers():
    assert latex_escape("a_b 5% {x} #1 & $") == r"a\_b 5\% \{x\} \#1 \& \$"
    table = markdown_table(["name", "n"], [["a|b", "10"], ["c", "2"]], align=["left", "right"])
    expected = ["| name |   n |", "| ---- | --: |", r"| a\|b |  10 |", "| c    |   2 |"]
    assert table.splitlines() == expected
    with pytest.raises(ValueError):
        markdown_table(["a"], [["1", "2"]])


# --- bad folders ----------------------------------------------------------------------------------


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


def test_no_finished_run(tmp_path):
    _job(tmp_path, "a", status="running", group={"variant": "none"}, seed=0)
    _job(tmp_path, "b", status="failed", group={"variant": "none"}, seed=1)
    with pytest.raises(ConfigError, match="no finished .* 1 failed, 1 running"):
        summarize(load_results(tmp_path))
