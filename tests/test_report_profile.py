"""Performance profiles: hand-computed fractions, the bootstrap band against scipy, the grid, and
the figure on a hand-built folder (panels per regime, one line per variant, files written)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy import stats

from experiments.report.plots import plot_all
from experiments.report.profile import (
    performance_profile,
    performance_profiles,
    profile_band,
    tau_grid,
)
from experiments.report.results import load_results
from experiments.report.style import OKABE_ITO


def test_profile_by_hand():
    scores = np.array([0.2, 0.5, 0.9])
    taus = np.array([0.0, 0.2, 0.3, 0.5, 0.9, 1.0])
    # strictly above tau: at 0.2 the run scoring 0.2 no longer counts
    np.testing.assert_allclose(performance_profile(scores, taus), [1, 2 / 3, 2 / 3, 1 / 3, 0, 0])


def test_run_without_a_final_return_is_below_every_level():
    np.testing.assert_allclose(performance_profile([0.1, np.nan], [-1e9, 0.0, 0.1]), [0.5, 0.5, 0])
    assert np.isnan(performance_profile([], [0.0, 1.0])).all()


def test_band_matches_scipy_bootstrap_of_each_level():
    scores = np.array([0.1, 0.4, 0.45, 0.8, np.nan, 0.95, 0.3])
    taus = np.array([0.0, 0.42, 0.9])
    low, high = profile_band(scores, taus, n_resamples=999, seed=3)
    for j, tau in enumerate(taus):
        above = (np.nan_to_num(scores, nan=-np.inf) > tau).astype(float)
        expected = stats.bootstrap((above,), np.mean, n_resamples=999, method="percentile",
                                   rng=np.random.default_rng(3)).confidence_interval  # fmt: skip
        assert (low[j], high[j]) == pytest.approx((expected.low, expected.high))
    profile = performance_profile(scores, taus)
    assert np.all(low <= profile) and np.all(profile <= high)
    again = profile_band(scores, taus, n_resamples=999, seed=3)
    np.testing.assert_array_equal(again[0], low)  # seeded: the same figure every time


def test_band_degenerate():
    low, high = profile_band([0.5], [0.0, 1.0])
    assert np.isnan(low).all() and np.isnan(high).all()
    low, high = profile_band([0.5, 0.5, 0.5], [0.0, 0.5])
    np.testing.assert_allclose(low, [1, 0])
    np.testing.assert_allclose(high, [1, 0])


def test_tau_grid():
    taus = tau_grid(np.array([0.2, np.nan, 1.2, 0.77]), points=11)
    assert taus[0] == pytest.approx(0.15) and taus[-1] == pytest.approx(1.25)  # 5% of 1.0 padding
    assert {0.2, 0.77, 1.2} <= set(taus) and np.all(np.diff(taus) > 0)
    single = tau_grid(np.array([2.0]), points=3)
    np.testing.assert_allclose(single, [1.9, 2.0, 2.1])
    assert len(tau_grid(np.array([np.nan]))) == 0


def _job(root, name, *, status, regime, variant, seed, final_return):
    job = root / name
    job.mkdir(parents=True)
    summary = {"status": status, "job": name, "ablation": "hs", "seed": seed, "threshold": 0.9,
               "group": {"regime": regime, "variant": variant},
               "stability": {"final_return": final_return}}  # fmt: skip
    (job / "summary.json").write_text(json.dumps(summary))


@pytest.fixture()
def folder(tmp_path):
    returns = {
        ("tuned", "none"): [0.2, 0.5, 0.9],
        ("tuned", "scale_gradient"): [0.6, 0.7, 0.8],
        ("stress", "none"): [-1.0, None, None],  # two diverged before the final window
        ("stress", "scale_gradient"): [0.4, 0.9, 1.0],
    }
    for (regime, variant), values in returns.items():
        for seed, ret in enumerate(values):
            status = "diverged" if ret is None else "completed"
            _job(tmp_path, f"{regime}-{variant}-{seed}", status=status, regime=regime,
                 variant=variant, seed=seed, final_return=ret)  # fmt: skip
    _job(tmp_path, "x", status="running", regime="stress", variant="scale_gradient", seed=3,
         final_return=9.0)  # fmt: skip
    return tmp_path


def test_profile_figure_one_panel_per_regime(folder):
    fig = performance_profiles(load_results(folder), n_resamples=199)
    assert len(fig.axes) == 2
    stress, tuned = fig.axes
    assert stress.get_title(loc="left") == "regime=stress"
    assert tuned.get_title(loc="left") == "regime=tuned"
    labels = [[line.get_label() for line in ax.get_lines()] for ax in fig.axes]
    both = ["none (n=3)", "scale_gradient (n=3)"]
    assert labels == [both, both]  # the running job is left out
    colours = [[line.get_color() for line in ax.get_lines()] for ax in fig.axes]
    assert colours == [[OKABE_ITO[0], OKABE_ITO[1]]] * 2  # the variant registry's colours
    assert len(fig.legends) == 1 and not any(ax.get_legend() for ax in fig.axes)
    none = stress.get_lines()[0]
    x, y = none.get_xdata(), none.get_ydata()
    # 1 of 3 runs has a return (-1.0); the two diverged ones never count
    assert y[0] == pytest.approx(1 / 3) and y[np.flatnonzero(x == -1.0)[0]] == 0.0
    assert x[0] == pytest.approx(-1.1) and x[-1] == pytest.approx(1.1)  # -1..1 padded by 0.1
    sg = tuned.get_lines()[1]
    at = {float(t): float(v) for t, v in zip(sg.get_xdata(), sg.get_ydata(), strict=True)}
    assert at[0.5] == 1.0 and at[0.6] == pytest.approx(2 / 3) and at[0.8] == 0.0
    assert none.get_drawstyle() == "steps-post"
    assert "fraction of runs" in stress.get_ylabel() and "final return" in tuned.get_xlabel()
    assert len(tuned.collections) == 2  # a band per line


def test_a_constant_key_is_neither_a_panel_nor_the_compared_key(tmp_path):
    """variant held constant (scale_placement, scale_value): one panel, a line per placement."""
    for placement, seed in itertools.product(["pseudocode", "paper", "hook"], range(2)):
        job = tmp_path / f"{placement}-{seed}"
        job.mkdir()
        group = {"regime": "stress", "variant": "scale_gradient", "variant.placement": placement}
        stability = {"final_return": seed / 2}
        summary = {"status": "completed", "job": job.name, "ablation": "sp", "seed": seed,
                   "threshold": 0.9, "group": group, "stability": stability}  # fmt: skip
        (job / "summary.json").write_text(json.dumps(summary))
    fig = performance_profiles(load_results(tmp_path), n_resamples=99)
    assert len(fig.axes) == 1
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    # in the placement registry's order, with its colours
    assert labels == ["pseudocode (n=2)", "paper (n=2)", "hook (n=2)"]
    assert [ln.get_color() for ln in fig.axes[0].get_lines()] == list(OKABE_ITO[:3])


def test_profile_single_panel_without_other_keys(tmp_path):
    for variant, seed in itertools.product(["none", "scale_gradient"], range(2)):
        _job(tmp_path, f"{variant}-{seed}", status="completed", regime="tuned", variant=variant,
             seed=seed, final_return=seed + 0.5)  # fmt: skip
    fig = performance_profiles(load_results(tmp_path), n_resamples=99)
    assert len(fig.axes) == 1 and fig.axes[0].get_title(loc="left") == ""  # regime is constant


def test_plot_all_writes_the_profile(folder, tmp_path):
    written = plot_all(load_results(folder), tmp_path / "figs")
    png, pdf = written["profile"]
    assert png.read_bytes()[:4] == b"\x89PNG" and pdf.read_bytes()[:4] == b"%PDF"
    assert png.stat().st_size > 5000 and pdf.stat().st_size > 1000


def test_panel_without_final_returns_says_so(tmp_path):
    cells = itertools.product(["tuned", "stress"], ["none", "scale_gradient"], range(2))
    for regime, variant, seed in cells:
        ret = None if regime == "stress" else seed + 0.5
        status = "diverged" if ret is None else "completed"
        _job(tmp_path, f"{regime}-{variant}-{seed}", status=status, regime=regime,
             variant=variant, seed=seed, final_return=ret)  # fmt: skip
    fig = performance_profiles(load_results(tmp_path), n_resamples=99)
    stress, tuned = fig.axes  # panels in the runs' (sorted) order
    assert len(tuned.get_lines()) == 2 and not stress.get_lines()
    assert [t.get_text() for t in stress.texts] == ["no run has a final return"]
