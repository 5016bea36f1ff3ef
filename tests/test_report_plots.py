"""Figures: hand-computed intention-to-treat means, bands inside the support, one panel per regime,
one colour per variant in every figure, the legend outside the data, a paper's size, files."""

from __future__ import annotations

import itertools
import json
import shutil
import sys

import numpy as np
import pandas as pd
import pytest
from matplotlib.text import Text
from scipy import stats

from experiments.errors import ConfigError
from experiments.jobs.summary import STATUSES
from experiments.report.bands import mean_band
from experiments.report.curves import run_curves, write_curves
from experiments.report.drawing import STATUS_STYLES
from experiments.report.itt import itt_matrix, random_return, run_random_return
from experiments.report.plots import (
    divergence_counts,
    hidden_grad_by_depth,
    performance_profiles,
    plot_all,
    return_curves,
    survivor_curves,
)
from experiments.report.results import load_curves, load_results
from experiments.report.style import COLUMN_WIDTH, OKABE_ITO

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
        "return": return_curves(results, curves, random_return_value=_RANDOM, **boot),
        "grad_norm": survivor_curves(
            results, curves, "grad/global_norm", ylabel="g", log=True, **boot
        ),  # fmt: skip
        "hidden": hidden_grad_by_depth(results, load_curves(results), **boot),
        "profile": performance_profiles(results, **boot),
        "divergence": divergence_counts(results),
    }


def _line(ax, label):
    (line,) = [ln for ln in ax.get_lines() if ln.get_label() == label]
    return line


def test_itt_mean_by_hand(figures):
    fig = figures["return"]
    stress, tuned = fig.axes[:2]
    none = _line(stress, "none")
    # every evaluation step, all three runs; seed 2 diverged at 25: -0.6 at steps 30 and 40
    np.testing.assert_array_equal(none.get_xdata(), _EVALS)
    expected = [(1 - 1 + 0.2) / 3, (1 + 1 - 0.4) / 3, (1 + 1 - 0.6) / 3, (1 + 1 - 0.6) / 3]
    np.testing.assert_allclose(none.get_ydata(), expected)  # 0.0667, 0.5333, 0.4667, 0.4667
    # the survivors-only mean at step 30 would be 1.0: the curve no longer climbs as runs die
    assert none.get_ydata()[2] < 0.5
    np.testing.assert_allclose(_line(tuned, "none").get_ydata(), [-1 / 3, 0.5 / 3, 0.5, 1.0])
    assert stress.get_title(loc="left").splitlines() == ["regime=stress", "n=3 each, 1 diverged"]
    # the divergence is marked on the line at step 25: between 0.5333 (20) and 0.4667 (30)
    marks = [ln for ln in stress.get_lines() if ln.get_marker() == "x"]
    assert len(marks) == 1 and marks[0].get_xdata()[0] == 25
    assert marks[0].get_ydata()[0] == pytest.approx((1.6 / 3 + 1.4 / 3) / 2)


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


def test_return_bands_stay_in_the_support(figures):
    fig = figures["return"]
    for ax in fig.axes:
        for band in ax.collections:
            y = band.get_paths()[0].vertices[:, 1]
            assert y.min() >= -1.0 and y.max() <= 1.0


def test_percentile_band_stays_in_bounds_where_a_t_interval_leaves():
    values = np.array([[1.0], [1.0], [1.0], [-1.0]])  # mean 0.5, sd 1, sem 0.5, t(3) = 3.18
    t_low, t_high = stats.t.interval(0.95, 3, loc=0.5, scale=0.5)
    assert t_low < -1 and t_high > 1  # the old band: [-1.09, 2.09], outside [-1, 1]
    mean, low, high = mean_band(values, n_resamples=999, seed=0)
    assert mean[0] == 0.5 and -1 <= low[0] <= 0.5 <= high[0] <= 1
    rng = np.random.default_rng(1)
    for n in (2, 3, 5, 10):  # bounded data of every small size: the band within [min, max]
        data = rng.choice([-1.0, -0.6, 1.0], size=(n, 7))
        _, low, high = mean_band(data, n_resamples=199, seed=n)
        assert np.all(low >= data.min(axis=0)) and np.all(high <= data.max(axis=0))


def test_band_is_seeded_and_none_for_one_run():
    data = np.random.default_rng(0).normal(size=(6, 3))
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
        visible = [ax for ax in fig.axes if ax.get_visible()]
        assert len(visible) == 2, name
        titles = [ax.get_title(loc="left").splitlines()[0] for ax in visible]
        assert titles == ["regime=stress", "regime=tuned"], name


def test_a_variant_has_its_registry_colour_in_every_figure(figures):
    # registry order: none 0, scale_gradient 1, stop_gradient 2, clipnorm 3: clipnorm is the
    # 4th colour although it is the second variant of this folder
    for name, fig in figures.items():
        if name == "divergence":
            continue
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


def test_divergence_counts(folder):
    fig = divergence_counts(load_results(folder))
    stress = fig.axes[0]
    assert [c.get_label() for c in stress.containers] == ["completed", "diverged"]
    assert [t.get_text() for t in stress.texts] == ["1/3", "0/3"]  # none, clipnorm
    assert [b.get_width() for b in stress.containers[0]] == [2, 3]
    assert stress.get_ylim() == (1.5, -0.5)  # the first variant (registry order) on top
    assert [t.get_text() for t in stress.get_yticklabels()] == ["none", "clipnorm"]
    assert fig.axes[1].get_ylim() == (1.5, -0.5)  # shared: not inverted back by the 2nd panel


def test_every_status_has_a_bar_style(tmp_path):
    for seed, status in enumerate(STATUSES):
        job = tmp_path / status
        job.mkdir()
        summary = {"status": status, "job": status, "seed": seed, "group": {"variant": "none"}}
        (job / "summary.json").write_text(json.dumps(summary))
    ax = divergence_counts(load_results(tmp_path)).axes[0]
    assert [c.get_label() for c in ax.containers] == list(STATUSES)
    assert set(STATUS_STYLES) == set(STATUSES)


def test_plot_all_writes_png_and_pdf(folder, tmp_path):
    written = plot_all(load_results(folder), tmp_path / "figs", random_return_value=_RANDOM,
                       n_resamples=99)  # fmt: skip
    names = {"return", "loss", "grad_norm", "hidden_grad_depth", "profile", "divergence"}
    assert set(written) == names
    for png, pdf in written.values():
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
    written = plot_all(load_results(tmp_path), tmp_path / "figs")  # ...and only losses logged
    assert set(written) == {"loss", "divergence"}


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
    monkeypatch.setitem(sys.modules, "experiments.tasks.registry", None)  # no task registry
    with pytest.raises(ConfigError, match="no random-policy return known for task 'catch'"):
        random_return("catch")


def test_diverged_run_without_a_random_return_is_one_error(folder, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "experiments.tasks.registry", None)
    with pytest.raises(ConfigError, match="pass random_return="):
        plot_all(load_results(folder), tmp_path / "figs", n_resamples=99)
    assert not (tmp_path / "figs").exists()  # nothing written


def test_an_arm_with_parameters_keeps_its_variants_look():
    from experiments.report.style import value_styles

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
