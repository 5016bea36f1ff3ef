"""Figures: every run drawn with its hand-computed intention-to-treat returns, one panel per arm in
the return figure and per regime in the others, bands inside the support and none below 10 runs,
outcome bars equal to hand counts, one colour per variant in every figure, the legend outside the
data, a paper's size, files."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.text import Text
from scipy import stats

from experiments.base.errors import ConfigError
from experiments.jobs.curves import write_curves
from experiments.jobs.summary import STATUSES
from experiments.report.figures.bands import MIN_BAND_RUNS, mean_band
from experiments.report.figures.curves import run_curves
from experiments.report.figures.itt import itt_matrix, random_return, run_random_return
from experiments.report.figures.plots import (
    final_returns,
    hidden_grad_by_depth,
    outcome_counts,
    outcome_counts_across,
    plot_across,
    plot_all,
    return_curves,
    survivor_curves,
)
from experiments.report.figures.run_status import SEGMENTS
from experiments.report.figures.style import COLUMN_WIDTH, OKABE_ITO
from experiments.report.runs.results import Results, load_curves, load_results

_RANDOM = -0.6  # the random-policy return these tests declare for their task
_STEPS = 40
_EVALS = (10, 20, 30, 40)
# evaluation returns per (regime, variant): one list per seed; None = diverged at step 25
_RETURNS = {
    ("stress", "none"): [[1.0, 1.0, 1.0, 1.0], [-1.0, 1.0, 1.0, 1.0], [0.2, -0.4, None, None]],
    ("stress", "clipnorm"): [[-1.0, -1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]],
    ("tuned", "none"): [[0.0, 0.5, 1.0, 1.0], [-1.0, 0.0, 0.5, 1.0], [0.0, 0.0, 0.0, 1.0]],
    ("tuned", "clipnorm"): [[0.0, 0.5, 1.0, 1.0], [0.5, 0.5, 0.5, 0.5], [1.0, 1.0, 1.0, 1.0]],
}
_DIVERGED_AT = 25


def _job(root, regime, variant, seed, returns, *, task="catch"):
    name = f"regime={regime}__variant={variant}__seed={seed}"
    diverged = returns[-1] is None
    last = _DIVERGED_AT if diverged else _STEPS
    rows = []
    for t in range(1, last + 1):
        row = {"step": t, "loss/total": 2.0 - t / 40 + seed, "grad/global_norm": 2.0**seed}
        for k in range(3):
            row[f"grad/hidden_depth_{k}"] = 2.0**-k * 4.0**seed
        if t in _EVALS:
            row["eval/return"] = returns[_EVALS.index(t)]
        rows.append(row)
    if diverged:
        rows[-1].update({"loss/total": "nan", "grad/global_norm": "inf"})
    evals = [r for r in returns if r is not None]
    stability = {"diverged": int(diverged), "diverged_step": _DIVERGED_AT if diverged else None,
                 "final_return": None if diverged else evals[-1], "steps": last}  # fmt: skip
    summary = {"status": "diverged" if diverged else "completed", "job": name, "seed": seed,
               "ablation": "hs", "group": {"regime": regime, "variant": variant}, "task": task,
               "threshold": 0.9, "training_steps": _STEPS, "reward_scale": 1.0,
               "stability": stability}  # fmt: skip
    job = root / name
    job.mkdir(parents=True)
    (job / "summary.json").write_text(json.dumps(summary))
    (job / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return job


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("results") / "hs"
    for (regime, variant), seeds in _RETURNS.items():
        for seed, returns in enumerate(seeds):
            _job(root, regime, variant, seed, returns)
    return root


@pytest.fixture(scope="module")
def figures(folder):
    return _figures(folder)


def _figures(folder):
    results = load_results(folder)
    curves = run_curves(results.averaged)
    boot = {"n_resamples": 199, "seed": 0}
    return {
        "return": return_curves(results, curves, random_return_value=_RANDOM),
        "final_return": final_returns(results, random_return_value=_RANDOM),
        "grad_norm": survivor_curves(
            results, curves, "grad/global_norm", ylabel="g", log=True, **boot
        ),  # fmt: skip
        "hidden": hidden_grad_by_depth(results, load_curves(results), **boot),
        "outcome": outcome_counts(results),
    }


def _line(ax, label):
    (line,) = [ln for ln in ax.get_lines() if ln.get_label() == label]
    return line


def test_return_draws_every_run_by_hand(figures):
    fig = figures["return"]
    # one panel per arm and regime, arm-major: none | none, then clipnorm | clipnorm
    titles = [ax.get_title(loc="left").splitlines() for ax in fig.axes]
    assert titles == [["none, stress", "n=3, 1 diverged"], ["none, tuned", "n=3, 0 diverged"],
                      ["clipnorm, stress", "n=3, 0 diverged"],
                      ["clipnorm, tuned", "n=3, 0 diverged"]]  # fmt: skip
    stress = fig.axes[0]
    runs = [ln for ln in stress.get_lines() if ln.get_label() == "run"]
    for line in runs:
        np.testing.assert_array_equal(line.get_xdata(), _EVALS)
    # seed 2 diverged at 25: its own returns at 10 and 20, the random policy's -0.6 at 30 and 40
    expected = [[1.0, 1.0, 1.0, 1.0], [-1.0, 1.0, 1.0, 1.0], [0.2, -0.4, -0.6, -0.6]]
    np.testing.assert_allclose([ln.get_ydata() for ln in runs], expected)
    assert all(ln.get_color() == OKABE_ITO[0] for ln in runs)  # none's colour
    # no mean: no line with the per-step mean (0.0667, 0.5333, 0.4667, 0.4667)
    means = np.mean(expected, axis=0)
    assert not any(np.allclose(ln.get_ydata(), means) for ln in stress.get_lines()
                   if len(ln.get_ydata()) == len(means))  # fmt: skip
    # the divergence is marked on its run at step 25: between -0.4 (20) and -0.6 (30)
    marks = [ln for ln in stress.get_lines() if ln.get_marker() == "x"]
    assert len(marks) == 1 and marks[0].get_xdata()[0] == 25
    assert marks[0].get_ydata()[0] == pytest.approx(-0.5)
    assert not stress.collections  # no band


def test_final_returns_one_dot_per_run_by_hand(figures):
    stress = figures["final_return"].axes[0]
    dots = {c.get_label(): sorted(c.get_offsets()[:, 0]) for c in stress.collections}
    # none: seeds 0 and 1 end at 1.0; seed 2 diverged, counted at the random policy's -0.6
    assert dots == {"none": [1.0, 1.0], "none: diverged": [-0.6], "clipnorm": [0.0, 1.0, 1.0]}
    assert [t.get_text() for t in stress.get_yticklabels()] == ["none", "clipnorm"]
    low, high = stress.get_xlim()
    assert low < -0.6 and high > 1.0  # every run inside the panel
    assert stress.get_title(loc="left") == "regime=stress\nn=3 each"


def test_itt_matrix_by_hand():
    evals = pd.DataFrame({"job": ["a", "a", "a", "b", "b", "c"], "step": [10, 20, 30, 10, 20, 10],
                          "eval/return": [0.1, 0.2, 0.3, 0.5, -0.5, 0.9]})  # fmt: skip
    runs = pd.DataFrame({"job": ["a", "b", "c"], "diverged_step": [np.nan, 20, np.nan]})
    steps, values = itt_matrix(evals, runs, {"b": -0.6})
    # b diverged at 20: its evaluation at 20 is replaced (>= 20) and 30 held at -0.6;
    # c (not diverged) lacks 20 and 30, so only step 10 has every run: n stays 3
    np.testing.assert_array_equal(steps, [10])
    np.testing.assert_allclose(values, [[0.1], [0.5], [0.9]])
    steps, values = itt_matrix(evals[evals["job"] != "c"], runs[:2], {"b": -0.6})
    np.testing.assert_array_equal(steps, [10, 20, 30])
    np.testing.assert_allclose(values, [[0.1, 0.2, 0.3], [0.5, -0.6, -0.6]])


def test_no_band_below_ten_runs_in_any_figure(figures):
    for name in ("grad_norm", "hidden"):  # 3 runs a line: the curves, no band
        for ax in figures[name].axes:
            assert ax.get_lines() and not ax.collections, name
    mean, low, high = mean_band(np.arange(18.0).reshape(9, 2))
    np.testing.assert_allclose(mean, [8, 9])
    assert MIN_BAND_RUNS == 10 and np.isnan(low).all() and np.isnan(high).all()
    mean, low, high = mean_band(np.arange(20.0).reshape(10, 2), n_resamples=99)
    assert np.isfinite(low).all() and np.all(low <= mean) and np.all(mean <= high)


def test_bands_from_ten_runs_and_inside_the_support(tmp_path):
    for seed in range(10):
        _job(tmp_path, "tuned", "none", seed, [-1.0, 0.0, 1.0, 1.0 if seed % 2 else -1.0])
    results = load_results(tmp_path)
    curves = run_curves(results.averaged)
    fig = survivor_curves(results, curves, "grad/global_norm", ylabel="g", log=True,
                          n_resamples=99)  # fmt: skip
    (band,) = fig.axes[0].collections
    y = band.get_paths()[0].vertices[:, 1]
    # per-step norms 2**seed (seeds 0-9): the band of their geometric mean lies in [1, 512]
    assert y.min() >= 1.0 and y.max() <= 2.0**9


def test_percentile_band_stays_in_bounds_where_a_t_interval_leaves():
    values = np.array([[1.0]] * 9 + [[-1.0]])  # mean 0.8, sd 0.632, sem 0.2, t(9) = 2.26
    t_low, t_high = stats.t.interval(0.95, 9, loc=0.8, scale=np.sqrt(0.4 / 10))
    assert t_high > 1  # the old band's top: 1.25, outside [-1, 1]
    mean, low, high = mean_band(values, n_resamples=999, seed=0)
    assert mean[0] == pytest.approx(0.8) and -1 <= low[0] <= 0.8 <= high[0] <= 1
    rng = np.random.default_rng(1)
    for n in (10, 11, 15, 20):  # bounded data of small sizes: the band within [min, max]
        data = rng.choice([-1.0, -0.6, 1.0], size=(n, 7))
        _, low, high = mean_band(data, n_resamples=199, seed=n)
        assert np.all(low >= data.min(axis=0)) and np.all(high <= data.max(axis=0))


def test_band_is_seeded_and_none_for_one_run():
    data = np.random.default_rng(0).normal(size=(12, 3))
    a, b = mean_band(data, seed=4), mean_band(data, seed=4)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    mean, low, high = mean_band(data[:1])
    np.testing.assert_array_equal(mean, data[0])
    assert np.isnan(low).all() and np.isnan(high).all()


def test_survivor_curve_geometric_mean_by_hand(figures):
    ax = figures["grad_norm"].axes[0]  # stress
    none = _line(ax, "none")
    x, y = none.get_xdata(), none.get_ydata()
    # norms 2**seed: seeds 0, 1, 2 -> geometric mean 2 up to step 24; seed 2's norm at 25 is
    # inf (its divergence) and it stops: seeds 0 and 1 -> sqrt(1 * 2) from step 25 on
    np.testing.assert_allclose(y[x < 25], 2.0)
    np.testing.assert_allclose(y[x >= 25], np.sqrt(2.0))
    assert ax.get_yscale() == "log" and ax.get_title(loc="left").endswith("1 diverged")


def test_one_panel_per_regime_in_every_figure(figures):
    for name, fig in figures.items():
        if name == "return":
            continue  # one panel per arm and regime: test_return_draws_every_run_by_hand
        visible = [ax for ax in fig.axes if ax.get_visible()]
        if name == "outcome":  # each panel's return axis beside its bars, untitled
            visible = [ax for ax in visible if ax.containers]
        assert len(visible) == 2, name
        titles = [ax.get_title(loc="left").splitlines()[0] for ax in visible]
        assert titles == ["regime=stress", "regime=tuned"], name


def test_a_variant_has_its_registry_colour_in_every_figure(figures):
    # registry order: none 0, scale_gradient 1, stop_gradient 2, clipnorm 3: clipnorm is the
    # 4th colour although it is the second variant of this folder
    for name, fig in figures.items():
        if name in ("outcome", "return", "final_return"):
            continue  # bars coloured by class; the runs: by hand above
        for ax in fig.axes:
            colours = {ln.get_label(): ln.get_color() for ln in ax.get_lines()}
            assert colours.get("none", OKABE_ITO[0]) == OKABE_ITO[0], name
            clip = [c for label, c in colours.items() if label.startswith("clipnorm")]
            assert clip and set(clip) == {OKABE_ITO[3]}, name


def test_legend_outside_every_panel_and_no_text_overlaps(figures):
    for name, fig in figures.items():
        fig.draw_without_rendering()
        renderer = fig._get_renderer()
        (legend,) = fig.legends
        box = legend.get_window_extent(renderer)
        panels = [ax for ax in fig.axes if ax.get_visible()]
        assert not any(box.overlaps(ax.bbox) for ax in panels), name
        texts = [legend.get_window_extent(renderer)]
        for ax in panels:
            for text in (ax.title, ax._left_title, ax.xaxis.label, ax.yaxis.label):
                if text.get_text():
                    texts.append(text.get_window_extent(renderer))
        for a, b in itertools.combinations(texts, 2):
            assert not a.overlaps(b), name


def test_a_paper_column_wide_with_fonts_of_at_least_7pt(figures):
    for name, fig in figures.items():
        assert fig.get_figwidth() == pytest.approx(COLUMN_WIDTH), name
        sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_text() and t.get_visible()]
        assert min(sizes) >= 7, name


def test_hidden_grad_by_depth(figures):
    ax = figures["hidden"].axes[1]  # tuned
    line = _line(ax, "none")
    np.testing.assert_allclose(line.get_xdata(), [0, 1, 2])
    # per run 2^-k 4^seed: geometric mean over seeds 0, 1, 2 = 2^-k * 4 (4^(0+1+2)/3 = 4)
    np.testing.assert_allclose(line.get_ydata(), 4.0 * 2.0 ** -np.arange(3))


def _hand_built(rows):
    """A Results of hand-written rows ``(regime, variant, status, outcome, threshold)``."""
    runs = pd.DataFrame(rows, columns=["regime", "variant", "status", "outcome", "threshold"])
    runs = runs.assign(job=[f"j{i}" for i in range(len(runs))], seed=range(len(runs)))
    return Results(root=None, ablation="hs", group_keys=("regime", "variant"), runs=runs)


def test_outcome_bars_equal_hand_counts():
    c, d = "completed", "diverged"
    rows = [
        # stress, none: 1 held, 2 lost, 1 diverged after, 3 diverged before, 1 never, 1 crashed
        ("stress", "none", c, "held", 0.9),
        ("stress", "none", c, "lost", 0.9),
        ("stress", "none", c, "lost", 0.9),
        ("stress", "none", d, "diverged_after_learning", 0.9),
        ("stress", "none", d, "diverged_before_learning", 0.9),
        ("stress", "none", d, "diverged_before_learning", 0.9),
        ("stress", "none", d, "diverged_before_learning", 0.9),
        ("stress", "none", c, "never_learned", 0.9),
        ("stress", "none", "failed", None, 0.9),
        # stress, scale_gradient: 3 held, 1 never learned, 1 with no outcome (stopped early)
        ("stress", "scale_gradient", c, "held", 0.9),
        ("stress", "scale_gradient", c, "held", 0.9),
        ("stress", "scale_gradient", c, "held", 0.9),
        ("stress", "scale_gradient", c, "never_learned", 0.9),
        ("stress", "scale_gradient", c, None, 0.9),
        # tuned: 2 held each
        ("tuned", "none", c, "held", 0.9),
        ("tuned", "none", c, "held", 0.9),
        ("tuned", "scale_gradient", c, "held", 0.9),
        ("tuned", "scale_gradient", c, "held", 0.9),
    ]
    fig = outcome_counts(_hand_built(rows))
    stress, tuned = fig.axes
    expected = {  # segment: [none, scale_gradient], top to bottom
        "held": [1, 3],
        "lost": [2, 0],
        "diverged_after_learning": [1, 0],
        "diverged_before_learning": [3, 0],
        "never_learned": [1, 1],
        "no outcome": [0, 1],
        "not finished": [1, 0],
    }
    assert [b.get_label() for b in stress.containers] == list(expected)  # SEGMENTS order
    for bars in stress.containers:
        assert [b.get_width() for b in bars] == expected[bars.get_label()], bars.get_label()
    # each bar starts where the previous segment ended, and ends at n
    ends = np.sum([[b.get_width() for b in bars] for bars in stress.containers], axis=0)
    assert list(ends) == [9, 5]
    assert [t.get_text() for t in stress.texts if t.get_text().startswith("n=")] == ["n=9", "n=5"]
    # under each bar, its failed rate (every class but held) and exact interval, by scipy
    assert [t.get_text() for t in stress.texts if "[" in t.get_text()] == [
        _rate(7, 8), _rate(1, 4)
    ]  # fmt: skip
    assert [t.get_text() for t in stress.get_yticklabels()] == ["none", "scale_gradient"]
    assert [b.get_width() for b in tuned.containers[0]] == [2, 2]
    assert stress.get_ylim() == (1.9, -0.5)  # the first variant (registry order) on top
    assert tuned.get_ylim() == (1.9, -0.5)  # shared: not inverted back by the 2nd panel


def _rate(k: int, m: int) -> str:
    """The label at a bar's end, computed apart: Clopper-Pearson by scipy's exact binomial."""
    from scipy.stats import binomtest

    ci = binomtest(k, m).proportion_ci(confidence_level=0.95, method="exact")
    return f"{k / m:.2f} [{ci.low:.2f}, {ci.high:.2f}]"


def _task_folder(name, rows):
    """A Results named ``name`` of rows ``(variant, status, outcome)``: one task, one regime."""
    built = _hand_built([("tuned", v, status, outcome, 0.9) for v, status, outcome in rows])
    return dataclasses.replace(built, root=Path("results") / name)


def test_outcome_across_folders_one_panel_per_folder_by_hand():
    c, d = "completed", "diverged"
    catch = _task_folder("study_faithful_catch", [
        ("none", c, "held"), ("none", c, "held"), ("none", c, "never_learned"),
        ("scale_gradient", c, "held"), ("scale_gradient", d, "diverged_before_learning"),
        ("scale_gradient", c, "held"),
    ])  # fmt: skip
    # the other folder lists scale_gradient first and has an arm the first has not
    cartpole = _task_folder("study_faithful_cartpole", [
        ("scale_gradient", c, "lost"), ("none", c, "held"), ("none", c, "lost"),
        ("maxnorm", c, "held"), ("maxnorm", "failed", None),
    ])  # fmt: skip
    fig = outcome_counts_across([catch, cartpole])
    left, right = [ax for ax in fig.axes if ax.get_visible() and ax.containers]
    # titles: the folders' names less their shared prefix
    assert [left.get_title(loc="left"), right.get_title(loc="left")] == ["catch", "cartpole"]
    # the same arms, in registry order, in both panels (y shared: labelled on the left)
    names = [t.get_text() for t in left.get_yticklabels()]
    assert names == ["none", "scale_gradient", "maxnorm"]
    assert [t.get_text() for t in right.texts if "[" in t.get_text()] == [
        _rate(1, 2), _rate(1, 1), _rate(0, 1)
    ]  # fmt: skip
    assert list(right.get_yticks()) == [0, 1, 2] and right.get_ylim() == (2.9, -0.5)
    expected_left = {"held": [2, 2, 0], "lost": [0, 0, 0], "diverged_before_learning": [0, 1, 0],
                     "never_learned": [1, 0, 0], "not finished": [0, 0, 0]}  # fmt: skip
    expected_right = {"held": [1, 0, 1], "lost": [1, 1, 0], "diverged_before_learning": [0, 0, 0],
                      "never_learned": [0, 0, 0], "not finished": [0, 0, 1]}  # fmt: skip
    for ax, expected in ((left, expected_left), (right, expected_right)):
        assert [b.get_label() for b in ax.containers] == list(expected)  # SEGMENTS order
        for bars in ax.containers:
            assert [b.get_width() for b in bars] == expected[bars.get_label()], bars.get_label()
    # no n= where an arm did not run
    assert [t.get_text() for t in left.texts if t.get_text().startswith("n=")] == ["n=3", "n=3"]
    assert [t.get_text() for t in right.texts if t.get_text().startswith("n=")] == [
        "n=2", "n=1", "n=2"
    ]  # fmt: skip
    # every non-zero count is written, a sliver's above its bar: the figure's counts sum to n
    numbers = [int(t.get_text()) for t in right.texts if t.get_text().isdigit()]
    assert sum(numbers) == 5


def test_outcome_across_folders_refuses_what_it_cannot_draw():
    one = _task_folder("a", [("none", "completed", "held")])
    with pytest.raises(ConfigError, match="at least two folders"):
        outcome_counts_across([one])
    scales = Results(
        root=Path("scale_value"), ablation="sv", group_keys=("variant.scale",),
        runs=pd.DataFrame({"variant.scale": ["0.5", "1.0"], "status": "completed",
                           "outcome": "held", "threshold": 0.9, "job": ["a", "b"], "seed": 0}),
    )  # fmt: skip
    message = "'scale_value' does not compare variants (it sweeps variant.scale)"
    with pytest.raises(ConfigError, match=re.escape(message)):
        outcome_counts_across([one, scales])


def test_outcome_across_a_folder_of_one_arm_and_of_two_regimes():
    # one arm so far (a study's first arm): a panel of one bar; two regimes: two panels
    early = _task_folder("study_b", [("none", "completed", "held")])
    both = _hand_built([("stress", "none", "completed", "lost", 0.9),
                        ("tuned", "scale_gradient", "completed", "held", 0.9)])  # fmt: skip
    both = dataclasses.replace(both, root=Path("study_a"))
    axes = [ax for ax in outcome_counts_across([both, early]).axes if ax.containers]
    titles = [ax.get_title(loc="left") for ax in axes]
    assert titles == ["a, regime=stress", "a, regime=tuned", "b"]
    held = [[b.get_width() for b in ax.containers[0]] for ax in axes]
    assert held == [[0, 0], [0, 1], [1, 0]]  # rows: none, scale_gradient


def test_outcome_across_keeps_names_that_the_shared_prefix_would_empty_or_merge():
    from experiments.report.figures.run_status import _short_names

    assert _short_names(["study_x_catch", "study_x_cartpole"]) == ["catch", "cartpole"]
    assert _short_names(["run_a", "run_a_b"]) == ["a", "a_b"]
    assert _short_names(["hidden_scale", "study_catch_stress"]) == [
        "hidden_scale", "study_catch_stress"
    ]  # fmt: skip
    assert _short_names(["x/a", "a"]) == ["x/a", "a"]  # no separator shared: unchanged
    assert _short_names(["ab_", "ab_c"]) == ["ab_", "ab_c"]  # one would be empty


def test_plot_across_writes_outcome_only(tmp_path):
    folders = [_task_folder(n, [("none", "completed", "held")]) for n in ("s_a", "s_b")]
    plotted = plot_across(folders, tmp_path)
    assert plotted.written == {"outcome": [tmp_path / "outcome.png", tmp_path / "outcome.pdf"]}
    assert all(p.stat().st_size > 0 for p in plotted.written["outcome"])


def test_outcome_of_a_task_without_threshold_says_so():
    rows = [("stress", v, "completed", None, np.nan) for v in ("none", "none", "maxnorm")]
    ax = outcome_counts(_hand_built(rows)).axes[0]
    assert [c.get_label() for c in ax.containers] == ["no threshold"]
    assert [b.get_width() for b in ax.containers[0]] == [2, 1]
    assert "no threshold" in ax.get_title(loc="left")


def test_every_status_is_counted_in_the_outcome_figure(tmp_path):
    for seed, status in enumerate(STATUSES):
        job = tmp_path / status
        job.mkdir()
        summary = {"status": status, "job": status, "seed": seed, "group": {"variant": "none"}}
        (job / "summary.json").write_text(json.dumps(summary))
    ax = outcome_counts(load_results(tmp_path)).axes[0]
    widths = {c.get_label(): c[0].get_width() for c in ax.containers}
    unfinished = len([s for s in STATUSES if s not in ("completed", "diverged")])
    # no threshold in these summaries: the finished ones have no class
    assert widths == {"no threshold": 2, "not finished": unfinished}
    assert set(widths) <= set(SEGMENTS)


def test_plot_all_writes_png_and_pdf(folder, tmp_path):
    plotted = plot_all(load_results(folder), tmp_path / "figs", random_return_value=_RANDOM,
                       n_resamples=99)  # fmt: skip
    names = {"return", "final_return", "loss", "grad_norm", "hidden_grad_depth", "outcome"}
    assert set(plotted.written) == names
    assert list(plotted.skipped) == ["profile"]  # 3 runs an arm
    assert "needs >= 10 runs per arm" in plotted.skipped["profile"]
    for png, pdf in plotted.written.values():
        assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size > 5000
        assert pdf.read_bytes()[:4] == b"%PDF" and pdf.stat().st_size > 1000


def test_figures_regenerate_from_curves_files_alone(folder, figures, tmp_path):
    """A fresh clone has summary.json and curves.csv.gz, no metrics.jsonl: the same curves."""
    before = figures
    folder = shutil.copytree(folder, tmp_path / "hs")
    for job in folder.iterdir():
        write_curves(job)
        (job / "metrics.jsonl").unlink()
    after = _figures(folder)
    for name in ("return", "grad_norm"):
        for ax_a, ax_b in zip(before[name].axes, after[name].axes, strict=True):
            for a, b in zip(ax_a.get_lines(), ax_b.get_lines(), strict=True):
                np.testing.assert_array_equal(a.get_xdata(), b.get_xdata())
                np.testing.assert_array_equal(a.get_ydata(), b.get_ydata())


def test_plot_all_skips_figures_without_data(tmp_path):
    _job(tmp_path, "tuned", "none", 0, [None] * 4)  # diverged at 25, before any evaluation...
    job = next(tmp_path.iterdir())
    rows = [{"step": 1, "loss/total": 1.0}, {"step": 2, "loss/total": 0.5}]
    (job / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    plotted = plot_all(load_results(tmp_path), tmp_path / "figs")  # ...and only losses logged
    assert set(plotted.written) == {"loss", "final_return", "outcome"}


def test_random_return_from_the_task_registry(tmp_path):
    from experiments.tasks.registry import task_facts

    assert random_return("catch") == task_facts("catch").random_return
    job = tmp_path / "job"
    job.mkdir()
    summary = {"status": "diverged", "task": "minatar", "reward_scale": 2.0}
    (job / "summary.json").write_text(json.dumps(summary))
    (job / "config.yaml").write_text("task:\n  name: minatar\n  id: breakout\n")
    # a MinAtar job's registry name is its game; the return is in the run's (scaled) units
    assert run_random_return(job) == 2.0 * task_facts("breakout").random_return
    assert run_random_return(job, explicit=-0.5) == -1.0
    with pytest.raises(ConfigError, match="unknown task"):
        random_return("pong")


def test_random_return_explicit_scaled_and_missing(monkeypatch):
    assert random_return("catch", explicit=-0.6, reward_scale=10.0) == pytest.approx(-6.0)
    monkeypatch.setitem(sys.modules, "experiments.tasks", None)  # no task registry
    with pytest.raises(ConfigError, match="no random-policy return known for task 'catch'"):
        random_return("catch")


def test_diverged_run_without_a_random_return_is_one_error(folder, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "experiments.tasks", None)
    with pytest.raises(ConfigError, match="pass random_return="):
        plot_all(load_results(folder), tmp_path / "figs", n_resamples=99)
    assert not (tmp_path / "figs").exists()  # nothing written


def test_an_arm_with_parameters_keeps_its_variants_look():
    from experiments.report.figures.style import value_styles

    plain = value_styles("variant", ["none", "clipnorm", "global_clipnorm"])
    folded = value_styles(
        "variant", ["none", "clipnorm (clipnorm=0.6)", "global_clipnorm (clipnorm=0.6)"]
    )
    assert folded["clipnorm (clipnorm=0.6)"] == plain["clipnorm"]
    assert folded["global_clipnorm (clipnorm=0.6)"] == plain["global_clipnorm"]
    # two arms of one variant: neither borrows the name's look, and they differ
    two = value_styles("variant", ["none", "clipnorm (clipnorm=0.6)", "clipnorm (clipnorm=1)"])
    looks = [tuple(d.items()) for d in two.values()]
    assert len(set(looks)) == 3


def _with_returns(rows):
    """A Results of rows ``(variant, status, outcome, final_return)``: task catch, one regime."""
    frame = pd.DataFrame(rows, columns=["variant", "status", "outcome", "final_return"])
    frame = frame.assign(
        regime="tuned", threshold=0.9, task="catch", reward_scale=1.0,
        diverged=(frame["status"] == "diverged").astype(int),
        job=[f"j{i}" for i in range(len(frame))], seed=range(len(frame)),
    )  # fmt: skip
    return Results(root=None, ablation="hs", group_keys=("regime", "variant"), runs=frame)


def test_outcome_figure_draws_each_runs_final_return_beside_its_bars():
    from experiments.tasks.registry import task_facts

    c, d = "completed", "diverged"
    rows = [("none", c, "held", 1.0), ("none", c, "held", 0.96), ("none", c, "lost", 0.5),
            ("scale_gradient", c, "held", 0.98), ("scale_gradient", d,
            "diverged_before_learning", 0.99), ("scale_gradient", "failed", None, 0.7)]  # fmt: skip
    fig = outcome_counts(_with_returns(rows))
    bars, beside = fig.axes
    assert [b.get_label() for b in bars.containers][0] == "held"
    # the return axis: on the bars' rows (same y), one point per finished run at its final
    # return; the diverged run at catch's declared random-policy return (intention to treat),
    # the failed job not drawn (it is no run of the design)
    assert beside.get_shared_y_axes().joined(bars, beside)
    points = {}
    for collection in beside.collections:
        arm = collection.get_label().split(":")[0]
        points.setdefault(arm, []).extend(collection.get_offsets()[:, 0].tolist())
    random = task_facts("catch").random_return
    assert sorted(points["none"]) == [0.5, 0.96, 1.0]
    assert sorted(points["scale_gradient"]) == sorted([0.98, random])
    rows_of = {c.get_label().split(":")[0]: set(np.round(c.get_offsets()[:, 1])) for c in
               beside.collections}  # fmt: skip
    assert rows_of == {"none": {0.0}, "scale_gradient": {1.0}}  # first arm on top, as the bars
    # each arm's mean over every run (the table's figure), as a tick on its row
    means = {ln.get_label().split(":")[0]: ln.get_xdata()[0] for ln in beside.lines
             if ln.get_label().endswith("mean")}  # fmt: skip
    assert means["none"] == pytest.approx((1.0 + 0.96 + 0.5) / 3)
    assert means["scale_gradient"] == pytest.approx((0.98 + random) / 2)
    # the threshold, dashed, inside the axis
    dashed = [ln.get_xdata()[0] for ln in beside.lines if ln.get_linestyle() == "--"]
    assert dashed == [0.9]
    low, high = beside.get_xlim()
    assert low < min(0.5, random) and high > 1.0


def test_outcome_figure_across_tasks_gives_each_task_its_own_return_scale():
    a = dataclasses.replace(_with_returns([("none", "completed", "held", 1.0)]),
                            root=Path("s_catch"))  # fmt: skip
    frame = _with_returns([("none", "completed", "held", 480.0)]).runs.assign(
        task="cartpole", threshold=475.0
    )
    b = Results(root=Path("s_cartpole"), ablation="hs", group_keys=("regime", "variant"),
                runs=frame)  # fmt: skip
    fig = outcome_counts_across([a, b])
    beside = [ax for ax in fig.axes if not ax.containers]
    assert len(beside) == 2
    (l0, h0), (l1, h1) = (ax.get_xlim() for ax in beside)
    assert l0 < 0.9 < 1.0 < h0 < 2 and l1 < 475 < 480 < h1


def test_outcome_figure_without_final_returns_has_bars_only():
    rows = [
        ("stress", "none", "completed", "held", 0.9),
        ("stress", "maxnorm", "failed", None, 0.9),
    ]
    assert len(outcome_counts(_hand_built(rows)).axes) == 1
