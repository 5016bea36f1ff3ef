"""Figures: hand-computed lines and bands on a synthetic results folder; files written."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from experiments.report.plots import (
    OKABE_ITO,
    divergence_counts,
    hidden_grad_by_depth,
    learning_curve,
    plot_all,
)
from experiments.report.results import load_curves, load_results

_K = 3


def _row(step: int, seed: int) -> dict:
    row = {
        "step": step,
        "loss/total": 10.0 - 0.1 * step + seed,
        "grad/global_norm": 100.0**seed,  # seeds 0, 1: 1 and 100 -> geometric mean 10
        "nonfinite": 0.0,
    }
    for k in range(_K + 1):
        row[f"grad/hidden_depth_{k}"] = 2.0**-k * 4.0**seed  # geometric mean 2 * 2^-k
    if step % 5 == 0:
        row["eval/return"] = 0.04 * step + 0.1 * seed
    return row


def _job(root, name, *, status, variant, seed, rows):
    job = root / name
    job.mkdir(parents=True)
    summary = {"status": status, "job": name, "ablation": "hs", "group": {"variant": variant},
               "seed": seed, "threshold": 0.9, "stability": {}}  # fmt: skip
    (job / "summary.json").write_text(json.dumps(summary))
    (job / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows))


@pytest.fixture()
def folder(tmp_path):
    root = tmp_path / "hs"
    for seed in (0, 1):
        rows = [_row(t, seed) for t in range(1, 21)]
        _job(root, f"none-{seed}", status="completed", variant="none", seed=seed, rows=rows)
    _job(root, "sg-0", status="completed", variant="sg", seed=0,
         rows=[_row(t, 0) for t in range(1, 21)])  # fmt: skip
    diverged = [_row(t, 1) for t in range(1, 16)]
    diverged[-1].update({"loss/total": float("nan"), "nonfinite": 1.0})
    _job(root, "sg-1", status="diverged", variant="sg", seed=1, rows=diverged)
    _job(root, "sg-2", status="failed", variant="sg", seed=2, rows=[_row(1, 2)])  # not plotted
    return root


def test_loss_curve_mean_and_band(folder):
    results = load_results(folder)
    curves = load_curves(results)
    assert set(curves["job"]) == {"none-0", "none-1", "sg-0", "sg-1"}  # the failed run is left out
    fig = learning_curve(results, curves, "loss/total", ylabel="total loss")
    ax = fig.axes[0]
    lines = ax.get_lines()
    assert len(lines) == 2 and [ln.get_label() for ln in lines] == ["none (n=2)", "sg (n=2)"]
    steps = np.arange(1, 21)
    np.testing.assert_allclose(lines[0].get_xdata(), steps)
    np.testing.assert_allclose(lines[0].get_ydata(), 10.5 - 0.1 * steps)
    assert lines[0].get_color() == OKABE_ITO[0] and lines[1].get_color() == OKABE_ITO[1]
    # sg: both seeds up to step 14, only seed 0 after (step 15 of seed 1 is NaN)
    sg = lines[1].get_ydata()
    np.testing.assert_allclose(sg[:14], 10.5 - 0.1 * steps[:14])
    np.testing.assert_allclose(sg[14:], 10.0 - 0.1 * steps[14:])
    low, high = stats.t.interval(0.95, df=1, loc=10.4, scale=stats.sem([9.9, 10.9]))
    band = ax.collections[0].get_paths()[0].vertices
    at_step_1 = band[np.isclose(band[:, 0], 1.0), 1]
    assert at_step_1.min() == pytest.approx(low) and at_step_1.max() == pytest.approx(high)
    assert ax.get_xlabel() == "training step" and ax.get_ylabel() == "total loss"
    assert ax.get_legend() is not None


def test_return_curve_has_threshold_line(folder):
    results = load_results(folder)
    fig = learning_curve(
        results, load_curves(results), "eval/return", ylabel="return", threshold=0.9
    )
    lines = fig.axes[0].get_lines()
    assert len(lines) == 3 and lines[-1].get_label() == "threshold"
    np.testing.assert_allclose(lines[0].get_xdata(), [5, 10, 15, 20])
    np.testing.assert_allclose(lines[0].get_ydata(), [0.25, 0.45, 0.65, 0.85])


def test_grad_norm_is_geometric_mean_on_log_axis(folder):
    results = load_results(folder)
    fig = learning_curve(results, load_curves(results), "grad/global_norm", ylabel="g", log=True)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), 10.0)


def test_binning_limits_points(tmp_path):
    rows = [{"step": t, "loss/total": float(t)} for t in range(1, 1001)]
    _job(tmp_path, "a", status="completed", variant="none", seed=0, rows=rows)
    results = load_results(tmp_path)
    fig = learning_curve(results, load_curves(results), "loss/total", ylabel="l", n_bins=100)
    line = fig.axes[0].get_lines()[0]
    assert len(line.get_xdata()) == 100
    np.testing.assert_allclose(line.get_ydata()[:2], [5.5, 15.5], atol=0.6)  # bin means
    assert len(fig.axes[0].collections[0].get_paths()) <= 1  # one seed: no band drawn


def test_hidden_grad_by_depth(folder):
    results = load_results(folder)
    fig = hidden_grad_by_depth(results, load_curves(results))
    ax = fig.axes[0]
    lines = ax.get_lines()
    assert len(lines) == 2 and ax.get_yscale() == "log"
    np.testing.assert_allclose(lines[0].get_xdata(), [0, 1, 2, 3])
    np.testing.assert_allclose(lines[0].get_ydata(), 2.0 * 2.0 ** -np.arange(4))
    assert "unroll depth" in ax.get_xlabel()


def test_divergence_counts(folder):
    fig = divergence_counts(load_results(folder))
    ax = fig.axes[0]
    assert [c.get_label() for c in ax.containers] == ["completed", "diverged", "failed"]
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["0/2 diverged", "1/2 diverged"]
    assert [b.get_width() for b in ax.containers[0]] == [2, 1]  # completed per group


def test_plot_all_writes_png_and_pdf(folder, tmp_path):
    written = plot_all(load_results(folder), tmp_path / "figs")
    assert set(written) == {
        "return", "loss", "grad_norm", "hidden_grad_depth", "profile", "divergence"
    }  # fmt: skip
    for png, pdf in written.values():
        assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size > 5000
        assert pdf.read_bytes()[:4] == b"%PDF" and pdf.stat().st_size > 1000


def test_plot_all_skips_figures_without_data(tmp_path):
    _job(tmp_path, "a", status="completed", variant="none", seed=0,
         rows=[{"step": 1, "loss/total": 1.0}, {"step": 2, "loss/total": 0.5}])  # fmt: skip
    written = plot_all(load_results(tmp_path), tmp_path / "figs")
    assert set(written) == {"loss", "divergence"}
