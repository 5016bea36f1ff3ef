"""Performance profiles: hand-computed fractions, the bootstrap band against scipy, the grid, and
the figure on a hand-built folder (panels per regime, one line per variant, files written); refused
below 10 runs an arm, no band below 10 runs, an x axis that holds every run (diverged ones at the
random-policy return included)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy import stats

from experiments.base.errors import ConfigError
from experiments.report.figures.plots import plot_all
from experiments.report.figures.profile import (
    MIN_PROFILE_RUNS,
    itt_final_returns,
    performance_profile,
    performance_profiles,
    profile_band,
    tau_grid,
)
from experiments.report.figures.style import OKABE_ITO
from experiments.report.runs.results import load_results


def test_profile_by_hand():
    scores = np.array([0.2, 0.5, 0.9])
    taus = np.array([0.0, 0.2, 0.3, 0.5, 0.9, 1.0])
    # strictly above tau: at 0.2 the run scoring 0.2 no longer counts
    np.testing.assert_allclose(performance_profile(scores, taus), [1, 2 / 3, 2 / 3, 1 / 3, 0, 0])


def test_run_without_a_final_return_is_below_every_level():
    np.testing.assert_allclose(performance_profile([0.1, np.nan], [-1e9, 0.0, 0.1]), [0.5, 0.5, 0])
    assert np.isnan(performance_profile([], [0.0, 1.0])).all()


def test_band_matches_scipy_bootstrap_of_each_level():
    scores = np.array([0.1, 0.4, 0.45, 0.8, np.nan, 0.95, 0.3, 0.2, 0.6, 0.7, 0.05, 0.5])
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


def test_no_band_below_ten_runs():
    for n in (1, 2, 5, 9):
        low, high = profile_band(np.linspace(0, 1, n), [0.0, 0.5])
        assert np.isnan(low).all() and np.isnan(high).all(), n
    low, high = profile_band([0.5] * 10, [0.0, 0.5])
    np.testing.assert_allclose(low, [1, 0])  # ten equal runs: every resample the same
    np.testing.assert_allclose(high, [1, 0])


def test_tau_grid():
    taus = tau_grid(np.array([0.2, np.nan, 1.2, 0.77]), points=11)
    assert taus[0] == pytest.approx(0.15) and taus[-1] == pytest.approx(1.25)  # 5% of 1.0 padding
    assert {0.2, 0.77, 1.2} <= set(taus) and np.all(np.diff(taus) > 0)
    single = tau_grid(np.array([2.0]), points=3)
    np.testing.assert_allclose(single, [1.9, 2.0, 2.1])
    assert len(tau_grid(np.array([np.nan]))) == 0


def _job(root, name, *, status, regime, variant, seed, final_return, diverged=None):
    job = root / name
    job.mkdir(parents=True)
    stability = {"final_return": final_return}
    if diverged is not None:
        stability["diverged"] = diverged
    summary = {"status": status, "job": name, "ablation": "hs", "seed": seed, "threshold": 0.9,
               "group": {"regime": regime, "variant": variant},
               "stability": stability}  # fmt: skip
    (job / "summary.json").write_text(json.dumps(summary))


_RANDOM = -0.6  # the random-policy return these tests declare
_RETURNS = {
    ("tuned", "none"): [0.2, 0.5, 0.9] + [0.3] * 7,
    ("tuned", "scale_gradient"): [0.6, 0.7, 0.8] + [0.75] * 7,
    ("stress", "none"): [-1.0, None, None] + [0.0] * 7,  # two diverged before the final window
    ("stress", "scale_gradient"): [0.4, 0.9, 1.0] + [0.95] * 7,
}


def _folder(root, returns, *, seeds=None):
    for (regime, variant), values in returns.items():
        for seed, ret in enumerate(values[:seeds]):
            status = "diverged" if ret is None else "completed"
            _job(root, f"{regime}-{variant}-{seed}", status=status, regime=regime,
                 variant=variant, seed=seed, final_return=ret)  # fmt: skip
    return root


@pytest.fixture()
def folder(tmp_path):
    _folder(tmp_path, _RETURNS)
    _job(tmp_path, "x", status="running", regime="stress", variant="scale_gradient", seed=10,
         final_return=9.0)  # fmt: skip
    return tmp_path


def test_profile_figure_one_panel_per_regime(folder):
    fig = performance_profiles(load_results(folder), random_return_value=_RANDOM, n_resamples=199)
    assert len(fig.axes) == 2
    stress, tuned = fig.axes
    assert stress.get_title(loc="left") == "regime=stress"
    assert tuned.get_title(loc="left") == "regime=tuned"
    labels = [[line.get_label() for line in ax.get_lines() if line.get_linestyle() != ":"]
              for ax in fig.axes]  # fmt: skip
    both = ["none (n=10)", "scale_gradient (n=10)"]
    assert labels == [both, both]  # the running job is left out
    colours = [[line.get_color() for line in ax.get_lines()][:2] for ax in fig.axes]
    assert colours == [[OKABE_ITO[0], OKABE_ITO[1]]] * 2  # the variant registry's colours
    assert len(fig.legends) == 1 and not any(ax.get_legend() for ax in fig.axes)
    none = stress.get_lines()[0]
    at = {float(t): float(v) for t, v in zip(none.get_xdata(), none.get_ydata(), strict=True)}
    # every run counts: -1.0, the two diverged runs at the random policy's -0.6, seven at 0.0
    assert none.get_ydata()[0] == 1.0
    assert at[-1.0] == pytest.approx(9 / 10) and at[-0.6] == pytest.approx(7 / 10)
    assert at[0.0] == 0.0
    sg = tuned.get_lines()[1]
    at = {float(t): float(v) for t, v in zip(sg.get_xdata(), sg.get_ydata(), strict=True)}
    # 0.6, 0.7, 0.8 and seven at 0.75: above 0.6 nine, above 0.7 eight, above 0.75 one (0.8)
    assert at[0.6] == pytest.approx(9 / 10) and at[0.7] == pytest.approx(8 / 10)
    assert at[0.75] == pytest.approx(1 / 10) and at[0.8] == 0
    assert none.get_drawstyle() == "steps-post"
    assert "fraction of runs" in stress.get_ylabel() and "final return" in tuned.get_xlabel()
    assert len(tuned.collections) == 2  # a band per line: 10 runs each
    # the random-policy return the diverged runs count as: a dotted vertical line
    dotted = [ln for ln in stress.get_lines() if ln.get_linestyle() == ":"]
    assert [ln.get_xdata()[0] for ln in dotted] == [_RANDOM]


def test_x_axis_covers_every_run_diverged_ones_included(folder):
    results = load_results(folder)
    values, imputed = itt_final_returns(results.averaged, random_return_value=-1.5)
    assert imputed.sum() == 2 and sorted(values[imputed]) == [-1.5, -1.5]
    fig = performance_profiles(results, random_return_value=-1.5, n_resamples=99)
    # min over every run: a diverged run's -1.5 (below every logged final return); max 1.0
    for ax in fig.axes:
        low, high = ax.get_xlim()
        assert low < -1.5 and high > 1.0
        assert (low, high) == pytest.approx((-1.5 - 0.125, 1.0 + 0.125))  # 5% of 2.5 each side
        for line in ax.get_lines()[:2]:
            x = line.get_xdata()
            assert x[0] == pytest.approx(low) and x[-1] == pytest.approx(high)


def test_profile_refused_below_ten_runs_an_arm(tmp_path):
    assert MIN_PROFILE_RUNS == 10
    _folder(tmp_path / "nine", _RETURNS, seeds=9)
    with pytest.raises(ConfigError) as err:
        performance_profiles(load_results(tmp_path / "nine"), random_return_value=_RANDOM)
    message = str(err.value)
    assert "\n" not in message and "needs >= 10 runs per arm" in message
    assert "4 of 4 arms" in message and "n=9" in message
    # one arm short of ten is enough to refuse
    returns = dict(_RETURNS)
    returns[("tuned", "none")] = returns[("tuned", "none")][:9]
    _folder(tmp_path / "one", returns)
    with pytest.raises(ConfigError, match=r"1 of 4 arms .*none \(regime=tuned\), n=9"):
        performance_profiles(load_results(tmp_path / "one"), random_return_value=_RANDOM)
    # and plot_all skips the figure, with that reason
    plotted = plot_all(load_results(tmp_path / "one"), tmp_path / "figs",
                       random_return_value=_RANDOM, n_resamples=99)  # fmt: skip
    assert "profile" not in plotted.written and "1 of 4 arms" in plotted.skipped["profile"]
    assert not (tmp_path / "figs" / "profile.png").exists()


def test_a_constant_key_is_neither_a_panel_nor_the_compared_key(tmp_path):
    """variant held constant (scale_placement, scale_value): one panel, a line per placement."""
    for placement, seed in itertools.product(["pseudocode", "paper", "hook"], range(10)):
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
    assert labels == ["pseudocode (n=10)", "paper (n=10)", "hook (n=10)"]
    assert [ln.get_color() for ln in fig.axes[0].get_lines()] == list(OKABE_ITO[:3])


def test_profile_single_panel_without_other_keys(tmp_path):
    for variant, seed in itertools.product(["none", "scale_gradient"], range(10)):
        _job(tmp_path, f"{variant}-{seed}", status="completed", regime="tuned", variant=variant,
             seed=seed, final_return=seed + 0.5)  # fmt: skip
    fig = performance_profiles(load_results(tmp_path), n_resamples=99)
    assert len(fig.axes) == 1 and fig.axes[0].get_title(loc="left") == ""  # regime is constant


def test_plot_all_writes_the_profile(folder, tmp_path):
    plotted = plot_all(load_results(folder), tmp_path / "figs", random_return_value=_RANDOM,
                       n_resamples=99)  # fmt: skip
    png, pdf = plotted.written["profile"]
    assert png.read_bytes()[:4] == b"\x89PNG" and pdf.read_bytes()[:4] == b"%PDF"
    assert png.stat().st_size > 5000 and pdf.stat().st_size > 1000
    assert plotted.skipped == {}


def test_a_diverged_run_with_a_final_return_counts_at_the_random_return(tmp_path):
    """Intention to treat as the table counts it: diverged (by status or flag) -> the declared
    return, whatever the run logged before."""
    _job(tmp_path, "a", status="diverged", regime="t", variant="none", seed=0, final_return=0.9,
         diverged=1)  # fmt: skip
    _job(tmp_path, "b", status="completed", regime="t", variant="none", seed=1, final_return=0.4,
         diverged=0)  # fmt: skip
    runs = load_results(tmp_path).averaged
    values, imputed = itt_final_returns(runs, random_return_value=-0.25)
    assert dict(zip(runs["job"], values, strict=True)) == {"a": -0.25, "b": 0.4}
    assert dict(zip(runs["job"], imputed, strict=True)) == {"a": True, "b": False}
