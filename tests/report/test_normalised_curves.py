"""The normalised learning curves of a study across tasks: every run's evaluations normalised by
hand, a diverged run at 0 from its divergence, each arm's mean with a band only over >= 10 runs,
one panel per task; ``gradlab plot`` draws it where a study's record declares R_ref and R_rand,
and refuses in one line a task the record does not declare."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from cli.main import app
from experiments.base.errors import ConfigError
from experiments.report.figures.bands import MIN_BAND_RUNS, mean_band
from experiments.report.figures.curves import run_curves
from experiments.report.figures.normalised import normalised_curves
from experiments.report.figures.style import OKABE_ITO, registry_order, value_styles
from experiments.report.runs.results import load_results

_EVALS = (10, 20, 30, 40)
_STEPS = 40
_DIVERGED_AT = 25
# task -> (r_ref, r_rand), unscaled
_NORM = {"catch": (1.0, -0.6), "cartpole": (400.0, 20.0)}
_SCALE = {"catch": 1.0, "cartpole": 2.0}  # cartpole's runs are scaled: returns x2 in its files


def _raw(task, variant, seed):
    """A run's evaluation returns, unscaled (None: diverged at step 25)."""
    if task == "catch":
        base = 0.1 * seed if variant == "none" else -0.2 * seed
        return [base - 0.5, base, base + 0.2, base + 0.4]
    if variant == "scale_gradient" and seed == 1:
        return [60.0, 100.0, None, None]
    return [20.0 + 10 * seed, 100.0 + seed, 200.0, 300.0 + 5 * seed]


def _write(root, task, variant, seed):
    scale = _SCALE[task]
    returns = _raw(task, variant, seed)
    diverged = returns[-1] is None
    last = _DIVERGED_AT if diverged else _STEPS
    rows = []
    for t in range(1, last + 1):
        row = {"step": t, "loss/total": 1.0, "grad/global_norm": 1.0}
        if t in _EVALS and returns[_EVALS.index(t)] is not None:
            row["eval/return"] = returns[_EVALS.index(t)] * scale
        rows.append(row)
    if diverged:  # the report reads divergence from the metrics, as a run records it
        rows[-1].update({"loss/total": "nan", "grad/global_norm": "inf"})
    name = f"task={task}__variant={variant}__seed={seed}"
    final = None if diverged else returns[-1] * scale
    summary = {"status": "diverged" if diverged else "completed", "job": name, "seed": seed,
               "ablation": "study_demo", "group": {"task": task, "variant": variant},
               "task": task, "threshold": None, "training_steps": _STEPS, "reward_scale": scale,
               "diverged_step": _DIVERGED_AT if diverged else None,
               "stability": {"diverged": int(diverged), "final_return": final, "steps": last,
                             "diverged_step": _DIVERGED_AT if diverged else None}}  # fmt: skip
    job = root / name
    job.mkdir(parents=True)
    (job / "summary.json").write_text(json.dumps(summary))
    (job / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("study_demo")
    for seed in range(MIN_BAND_RUNS):  # catch none: a band
        _write(root, "catch", "none", seed)
    for seed in range(3):  # catch scale_gradient: no band
        _write(root, "catch", "scale_gradient", seed)
    for variant in ("none", "scale_gradient"):
        for seed in range(2):
            _write(root, "cartpole", variant, seed)
    return root


def _declare(folder, normalisation):
    declared = {t: {"r_ref": r, "r_rand": q} for t, (r, q) in normalisation.items()}
    design = {"name": "demo", "normalisation": declared}
    (folder / "preregistration.json").write_text(json.dumps({"design": design}))


def _axes_by_task(fig):
    return {ax.get_title(loc="left").split("\n")[0]: ax for ax in fig.axes if ax.get_visible()}


def _hand(task, variant, seed):
    ref, rand = _NORM[task]
    values = []
    for r in _raw(task, variant, seed):
        values.append(0.0 if r is None else (r - rand) / (ref - rand))
    return values


def test_every_run_normalised_by_hand_and_a_diverged_run_at_zero(study):
    results = load_results(study)
    fig = normalised_curves(results, run_curves(results.averaged), _NORM, n_resamples=200)
    axes = _axes_by_task(fig)
    assert set(axes) == {"catch", "cartpole"}
    assert "R_ref 1, R_rand -0.6" in axes["catch"].get_title(loc="left")
    assert "R_ref 400, R_rand 20" in axes["cartpole"].get_title(loc="left")
    assert "1 diverged" in axes["cartpole"].get_title(loc="left")
    for task, ax in axes.items():
        drawn = sorted(tuple(np.round(ln.get_ydata(), 12)) for ln in ax.get_lines()
                       if ln.get_label() == "run")  # fmt: skip
        seeds = {"none": MIN_BAND_RUNS if task == "catch" else 2,
                 "scale_gradient": 3 if task == "catch" else 2}  # fmt: skip
        hand = sorted(tuple(np.round(_hand(task, v, s), 12)) for v, n in seeds.items()
                      for s in range(n))  # fmt: skip
        assert drawn == hand
        for ln in ax.get_lines():
            if ln.get_label() == "run":
                assert list(ln.get_xdata()) == list(_EVALS)
    # by hand: cartpole's diverged run (scale_gradient seed 1) is (60-20)/380, (100-20)/380, 0, 0
    cart = [ln for ln in axes["cartpole"].get_lines() if ln.get_label() == "run"]
    assert any(np.allclose(ln.get_ydata(), [40 / 380, 80 / 380, 0, 0]) for ln in cart)


def test_each_arm_s_mean_and_a_band_only_over_ten_runs(study):
    results = load_results(study)
    fig = normalised_curves(results, run_curves(results.averaged), _NORM, n_resamples=200)
    catch = _axes_by_task(fig)["catch"]
    means = {ln.get_label(): ln.get_ydata() for ln in catch.get_lines() if ln.get_label() != "run"}
    hand_none = np.mean([_hand("catch", "none", s) for s in range(MIN_BAND_RUNS)], axis=0)
    hand_sg = np.mean([_hand("catch", "scale_gradient", s) for s in range(3)], axis=0)
    np.testing.assert_allclose(means["none"], hand_none, rtol=0, atol=1e-12)
    np.testing.assert_allclose(means["scale_gradient"], hand_sg, rtol=0, atol=1e-12)
    # one band (none's 10 runs), the bootstrap of those runs with the figure's seed;
    # scale_gradient's 3 runs and cartpole's 2 have none
    assert len(catch.collections) == 1
    runs = np.array([_hand("catch", "none", s) for s in range(MIN_BAND_RUNS)])
    _, low, high = mean_band(runs, n_resamples=200, seed=0)
    vertices = catch.collections[0].get_paths()[0].vertices
    for i, step in enumerate(_EVALS):
        at = vertices[vertices[:, 0] == step, 1]
        assert at.min() == pytest.approx(low[i], abs=1e-12)
        assert at.max() == pytest.approx(high[i], abs=1e-12)
    assert len(_axes_by_task(fig)["cartpole"].collections) == 0


def test_a_diverged_run_is_marked_where_it_diverged_and_the_legend_says_so(study):
    results = load_results(study)
    fig = normalised_curves(results, run_curves(results.averaged), _NORM, n_resamples=200)
    cart = _axes_by_task(fig)["cartpole"]
    marks = [ln for ln in cart.get_lines() if ln.get_marker() == "x"]
    # by hand: step 25, between the evaluations at 20 (80/380) and 30 (0): halfway, 40/380
    assert len(marks) == 1
    assert marks[0].get_xdata()[0] == 25 and marks[0].get_ydata()[0] == pytest.approx(40 / 380)
    assert not [ln for ln in _axes_by_task(fig)["catch"].get_lines() if ln.get_marker() == "x"]
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["none", "scale_gradient", "one run", "0 random, 1 R_ref", "run diverged"]


def test_one_arm_over_two_tasks_still_gets_a_panel_per_task(tmp_path):
    for task in ("catch", "cartpole"):
        for seed in range(2):
            _write(tmp_path, task, "none", seed)
    results = load_results(tmp_path)
    fig = normalised_curves(results, run_curves(results.averaged), _NORM, n_resamples=200)
    axes = _axes_by_task(fig)
    assert set(axes) == {"catch", "cartpole"}
    for task, ax in axes.items():
        means = [ln for ln in ax.get_lines() if ln.get_label() == "none"]
        hand = np.mean([_hand(task, "none", s) for s in range(2)], axis=0)
        assert len(means) == 1 and np.allclose(means[0].get_ydata(), hand)


def test_arms_that_share_a_colour_in_the_registry_get_two_colours():
    # depth_loss_scale is 8 registry positions after scale_gradient: one colour of 8
    order = registry_order("variant")
    assert order.index("depth_loss_scale") % len(OKABE_ITO) == order.index("scale_gradient")
    looks = value_styles("variant", ["none", "scale_gradient", "depth_loss_scale"])
    colours = [looks[v]["color"] for v in ("none", "scale_gradient", "depth_loss_scale")]
    assert len(set(colours)) == 3
    assert colours[:2] == [OKABE_ITO[0], OKABE_ITO[order.index("scale_gradient")]]
    # it keeps its line style and marker; drawn without scale_gradient, its whole registry look
    alone = value_styles("variant", ["none", "depth_loss_scale"])["depth_loss_scale"]
    assert alone["color"] == OKABE_ITO[order.index("depth_loss_scale") % len(OKABE_ITO)]
    moved = looks["depth_loss_scale"]
    assert (moved["linestyle"], moved["marker"]) == (alone["linestyle"], alone["marker"])
    # it takes a colour no drawn value has, so values after it in the registry keep theirs (two
    # unregistered arms follow the registry: positions n and n + 1)
    n = len(order)
    more = value_styles("variant", ["none", "scale_gradient", "depth_loss_scale", "x1", "x2"])
    assert more["x1"]["color"] == OKABE_ITO[n % len(OKABE_ITO)]
    assert more["x2"]["color"] == OKABE_ITO[(n + 1) % len(OKABE_ITO)]
    owned = {OKABE_ITO[i % len(OKABE_ITO)] for i in (0, 1, n, n + 1)}
    assert more["depth_loss_scale"]["color"] not in owned
    assert len({tuple(map(str, d.values())) for d in more.values()}) == 5


def test_a_task_without_a_declared_normalisation_is_one_error(study):
    results = load_results(study)
    with pytest.raises(ConfigError, match="no R_ref and R_rand declared for task 'cartpole'"):
        normalised_curves(results, run_curves(results.averaged), {"catch": (1.0, -0.6)})
    with pytest.raises(ConfigError, match="task 'catch': R_ref -1.0 is not above R_rand 0.5"):
        normalised_curves(results, run_curves(results.averaged),
                          {"catch": (-1.0, 0.5), "cartpole": (400.0, 20.0)})  # fmt: skip


def test_gradlab_plot_draws_it_where_the_record_declares_the_normalisation(study, tmp_path):
    import shutil

    declared = tmp_path / "declared"
    shutil.copytree(study, declared)
    _declare(declared, _NORM)
    done = CliRunner().invoke(app, ["plot", str(declared), "--out", str(tmp_path / "f1")])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "f1" / "normalised_return.png").is_file()
    assert (tmp_path / "f1" / "normalised_return.pdf").is_file()
    # no record: no normalised figure, the others as before
    done = CliRunner().invoke(app, ["plot", str(study), "--out", str(tmp_path / "f2")])
    assert done.exit_code == 0, done.output
    assert not (tmp_path / "f2" / "normalised_return.png").exists()
    assert (tmp_path / "f2" / "return.png").is_file()
    # a record that leaves a task out: one line naming it, exit 2, nothing written
    partial = tmp_path / "partial"
    shutil.copytree(study, partial)
    _declare(partial, {"catch": _NORM["catch"]})
    done = CliRunner().invoke(app, ["plot", str(partial), "--out", str(tmp_path / "f3")])
    assert done.exit_code == 2
    assert done.output.strip().splitlines() == [
        "error: no R_ref and R_rand declared for task 'cartpole'; declared for: catch"
    ]
    assert not (tmp_path / "f3").exists()
