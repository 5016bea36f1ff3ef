"""``gradlab export``: the run frame and curves as CSV/parquet, and the score matrix rliable takes,
checked with rliable itself against gradlab's own IQM and interval, on committed studies."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

import gradlab
from cli.main import app
from experiments.base.errors import ConfigError
from experiments.report.export import score_matrix

FINDINGS = Path(__file__).resolve().parents[2] / "results" / "findings"
MAIN = FINDINGS / "hidden_scale"
STUDY4 = {t: FINDINGS / f"study_faithful_{t}" for t in ("catch", "cartpole", "breakout",
                                                          "space_invaders")}  # fmt: skip
STUDY6 = FINDINGS / "study_minatar_return"

committed = pytest.mark.skipif(
    not all(p.is_dir() for p in [MAIN, *STUDY4.values()]), reason="no committed runs here"
)


def _export(*args):
    result = CliRunner().invoke(app, ["export", *map(str, args)])
    return result


def _load(out: Path) -> tuple[dict[str, np.ndarray], dict]:
    data = np.load(out / "scores.npz")
    return {arm: data[arm] for arm in data.files}, json.loads((out / "scores.json").read_text())


def _rliable_iqm(matrices, *, reps=2000, seed=1):
    """rliable's own IQM and 95% stratified-bootstrap percentile interval per arm."""
    from rliable import library, metrics

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # arch's RandomState deprecation
        points, intervals = library.get_interval_estimates(
            matrices,
            lambda x: np.array([metrics.aggregate_iqm(x)]),
            reps=reps,
            random_state=np.random.RandomState(seed),
        )
    return {arm: float(points[arm][0]) for arm in points}, {
        arm: (float(intervals[arm][0, 0]), float(intervals[arm][1, 0])) for arm in intervals
    }


def _summaries(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*/summary.json"))]


@committed
def test_rliable_s_iqm_and_interval_are_gradlab_table_s_on_one_task(tmp_path):
    # Study 4's Space Invaders folder, one task: rliable's stratified bootstrap is then the plain
    # bootstrap over runs, the one `gradlab table --stat iqm` draws (9,999 resamples, seeded)
    folder = STUDY4["space_invaders"]
    done = _export(folder, "-f", "rliable", "-o", tmp_path / "si")
    assert done.exit_code == 0, done.output
    matrices, statement = _load(tmp_path / "si")
    assert {arm: m.shape for arm, m in matrices.items()} == {
        "none": (47, 1), "scale_gradient": (47, 1), "depth_loss_scale": (47, 1)
    }  # fmt: skip
    points, intervals = _rliable_iqm(matrices)
    table = gradlab.table(folder, metrics=["final_return"], stat="iqm").rows.set_index("variant")
    for arm in matrices:
        assert points[arm] == pytest.approx(table.loc[arm, "final_return"], abs=1e-12)
        assert statement["iqm"][arm] == pytest.approx(points[arm], abs=1e-12)
        low, high = intervals[arm]
        ours = table.loc[arm, ["final_return_ci_low", "final_return_ci_high"]].to_numpy(float)
        # two Monte Carlo percentile intervals of one bootstrap: within 5% of the width
        assert (low, high) == pytest.approx(tuple(ours), abs=0.05 * (ours[1] - ours[0]))
    assert statement["score"] == "final_return" and statement["normalisation"] is None
    assert "raw" in statement["score_definition"]
    # by hand from the summaries: each arm's IQM of its final returns (no run diverged)
    for arm in matrices:
        runs = [s for s in _summaries(folder) if s["variant"] == arm]
        assert all(s["status"] == "completed" and not s["stability"]["diverged"] for s in runs)
        finals = [s["stability"]["final_return"] for s in runs]
        assert points[arm] == pytest.approx(stats.trim_mean(finals, 0.25), abs=1e-12)
    # the figures docs/usage.md quotes (gradlab's estimate and seeded bootstrap interval)
    quoted = {"none": "9.25 [8.53, 9.88]", "scale_gradient": "7.95 [7.36, 8.44]",
              "depth_loss_scale": "7.64 [7.11, 8.21]"}  # fmt: skip
    for arm, text in quoted.items():
        est, low, high = table.loc[arm, ["final_return", "final_return_ci_low",
                                         "final_return_ci_high"]]  # fmt: skip
        assert f"{est:.2f} [{low:.2f}, {high:.2f}]" == text


def _stratified_iqm_interval(matrix, *, reps, seed):
    """A stratified percentile bootstrap of the IQM written here: each task's runs resampled
    on their own, the IQM of the flattened resample."""
    rng = np.random.default_rng(seed)
    n, tasks = matrix.shape
    draws = np.empty(reps)
    for r in range(reps):
        rows = rng.integers(0, n, size=(n, tasks))
        draws[r] = stats.trim_mean(np.take_along_axis(matrix, rows, 0), 0.25, axis=None)
    return tuple(np.percentile(draws, [2.5, 97.5]))


@committed
def test_study_4_across_its_four_tasks_rliable_equals_gradlab_s_iqm(tmp_path):
    done = _export(*STUDY4.values(), "-f", "rliable", "-o", tmp_path / "s4")
    assert done.exit_code == 0, done.output
    matrices, statement = _load(tmp_path / "s4")
    assert statement["tasks"] == ["breakout", "cartpole", "catch", "space_invaders"]
    points, intervals = _rliable_iqm(matrices)
    for arm, matrix in matrices.items():
        assert matrix.shape == (47, 4)
        # by hand from the summaries: each task's column is the arm's final returns by seed
        by_task = {}
        for task, folder in STUDY4.items():
            runs = [s for s in _summaries(folder) if s["variant"] == arm]
            assert all(s["status"] == "completed" and not s["stability"]["diverged"]
                       for s in runs)  # fmt: skip
            runs.sort(key=lambda s: s["seed"])
            by_task[task] = [s["stability"]["final_return"] for s in runs]
            assert statement["seeds"][arm][task] == [s["seed"] for s in runs]
        expected = np.array([by_task[t] for t in statement["tasks"]]).T
        np.testing.assert_array_equal(matrix, expected)
        flat_iqm = stats.trim_mean(expected.ravel(), 0.25)
        assert points[arm] == pytest.approx(flat_iqm, abs=1e-12)
        assert statement["iqm"][arm] == pytest.approx(flat_iqm, abs=1e-12)
        ours = _stratified_iqm_interval(expected, reps=2000, seed=0)
        assert intervals[arm] == pytest.approx(ours, abs=0.05 * (ours[1] - ours[0]))
        assert intervals[arm][0] < points[arm] < intervals[arm][1]
    assert gradlab.scores(list(STUDY4.values())).iqm() == pytest.approx(statement["iqm"])


def _full_arms_copy(study: Path, root: Path) -> Path:
    """A copy of a study folder (its record and runs) with only the arms that have finished runs
    on every task with any: a study still running may have an arm on one task only, and a score
    matrix needs every arm on every task (export refuses the folder as it stands, by design)."""
    runs: dict[str, list[Path]] = {}
    tasks_of: dict[str, set[str]] = {}
    for path in sorted(study.glob("*/summary.json")):
        summary = json.loads(path.read_text())
        if summary["status"] not in ("completed", "diverged"):
            continue
        runs.setdefault(summary["variant"], []).append(path.parent)
        tasks_of.setdefault(summary["variant"], set()).add(summary["group"]["task"])
    every_task = set().union(*tasks_of.values()) if tasks_of else set()
    copy = root / study.name
    copy.mkdir(parents=True)
    shutil.copy2(study / "preregistration.json", copy)
    for arm, folders in runs.items():
        if tasks_of[arm] == every_task:
            for folder in folders:
                shutil.copytree(folder, copy / folder.name)
    return copy


@pytest.mark.skipif(not (STUDY6 / "preregistration.json").is_file(), reason="no Study 6 here")
def test_a_study_s_declared_normalisation_is_applied_and_written_beside(tmp_path):
    study = _full_arms_copy(STUDY6, tmp_path / "in")
    done = _export(study, "-f", "rliable", "-o", tmp_path / "s6")
    if "no runs in" in done.output:
        pytest.skip("Study 6 has no finished run here yet")
    assert done.exit_code == 0, done.output
    matrices, statement = _load(tmp_path / "s6")
    assert set(matrices) and len(statement["tasks"]) >= 1
    record = json.loads((STUDY6 / "preregistration.json").read_text())["design"]["normalisation"]
    assert statement["score"] == "normalised_return"
    for task in statement["tasks"]:
        assert statement["normalisation"][task] == record[task]
    points, _ = _rliable_iqm(matrices, reps=200)
    for arm, matrix in matrices.items():
        for j, task in enumerate(statement["tasks"]):
            ref, rand = record[task]["r_ref"], record[task]["r_rand"]
            runs = {s["seed"]: s for s in _summaries(study)
                    if s["variant"] == arm and s["group"]["task"] == task}  # fmt: skip
            seeds = statement["seeds"][arm][task]
            expected = [0.0 if runs[s]["stability"]["diverged"] else
                        (runs[s]["stability"]["final_return"] / runs[s]["reward_scale"] - rand)
                        / (ref - rand) for s in seeds]  # fmt: skip
            np.testing.assert_allclose(matrix[:, j], expected, rtol=0, atol=1e-12)
        assert points[arm] == pytest.approx(stats.trim_mean(matrix, 0.25, axis=None), abs=1e-12)


def _frame(rows):
    return pd.DataFrame(
        [{"status": st, "seed": seed, "task": task, "variant": arm, "final_return": r,
          "diverged": float(d), "reward_scale": 1.0} for arm, task, seed, r, d, st in rows]
    )  # fmt: skip


def test_ragged_arms_keep_their_smallest_seeds_and_list_the_others():
    frame = _frame([
        ("a", "x", 3, 1.0, 0, "completed"), ("a", "x", 1, 2.0, 0, "completed"),
        ("a", "x", 2, 3.0, 0, "completed"), ("a", "y", 7, 4.0, 0, "completed"),
        ("a", "y", 5, 5.0, 0, "completed"), ("b", "x", 1, 6.0, 0, "completed"),
        ("b", "y", 1, 7.0, 0, "failed"), ("b", "y", 2, 8.0, 0, "completed"),
    ])  # fmt: skip
    scores = score_matrix(frame, keys=["task", "variant"])
    # by hand: a's rows are its seeds 1, 2 on x and 5, 7 on y; seed 3 on x is left out; b's
    # failed run does not count
    np.testing.assert_array_equal(scores.matrices["a"], [[2.0, 5.0], [3.0, 4.0]])
    np.testing.assert_array_equal(scores.matrices["b"], [[6.0, 8.0]])
    assert scores.seeds["a"] == {"x": [1, 2], "y": [5, 7]}
    assert scores.left_out == {"a": {"x": [3]}}
    assert scores.excluded == {"failed": 1}
    assert scores.iqm()["a"] == pytest.approx(stats.trim_mean([2, 5, 3, 4], 0.25))


def test_a_diverged_run_scores_0_normalised_and_the_random_return_raw():
    frame = _frame([("a", "catch", 0, 0.9, 0, "completed"), ("a", "catch", 1, 5.0, 1, "diverged")])
    normalised = score_matrix(frame, keys=["variant"], normalisation={"catch": (1.0, -0.5)})
    np.testing.assert_allclose(normalised.matrices["a"][:, 0], [(0.9 + 0.5) / 1.5, 0.0])
    raw = score_matrix(frame, keys=["variant"])
    from experiments.tasks.registry import task_facts

    np.testing.assert_allclose(raw.matrices["a"][:, 0], [0.9, task_facts("catch").random_return])


def test_a_run_twice_or_an_arm_missing_a_task_is_refused():
    twice = _frame([("a", "x", 1, 1.0, 0, "completed"), ("a", "x", 1, 1.0, 0, "completed")])
    with pytest.raises(ConfigError, match="seed 1 is there twice"):
        score_matrix(twice, keys=["variant"])
    missing = _frame([("a", "x", 1, 1.0, 0, "completed"), ("a", "y", 1, 1.0, 0, "completed"),
                      ("b", "x", 1, 1.0, 0, "completed")])  # fmt: skip
    with pytest.raises(ConfigError, match="arm 'b' has no run on task 'y'"):
        score_matrix(missing, keys=["variant"])


@committed
def test_csv_and_parquet_hold_the_run_frame_and_the_curves_in_long_format(tmp_path):
    for fmt in ("csv", "parquet"):
        done = _export(MAIN, "-f", fmt, "-o", tmp_path / fmt)
        assert done.exit_code == 0, done.output
        assert sorted(p.name for p in (tmp_path / fmt).iterdir()) == [
            f"curves.{fmt}",
            f"runs.{fmt}",
        ]
    runs = pd.read_csv(tmp_path / "csv" / "runs.csv")
    assert len(runs) == 50 and set(runs["folder"]) == {str(MAIN)}
    # by hand from the summaries: every run's status and final return, by job
    by_job = {s["job"]: s for s in _summaries(MAIN)}
    for row in runs.itertuples():
        assert row.status == by_job[row.job]["status"]
        final = by_job[row.job]["stability"]["final_return"]  # None: diverged before any
        assert row.final_return == pytest.approx(np.nan if final is None else final, nan_ok=True)
    assert runs["outcome"].notna().all()
    parquet = pd.read_parquet(tmp_path / "parquet" / "runs.parquet")
    assert list(parquet.columns) == list(runs.columns)
    np.testing.assert_allclose(parquet["final_return"], runs["final_return"])
    curves = pd.read_parquet(tmp_path / "parquet" / "curves.parquet")
    assert list(curves.columns) == ["folder", "job", "variant", "task", "seed", "step", "metric",
                                    "value"]  # fmt: skip
    assert set(curves["metric"]) == {"eval/return", "grad/global_norm", "loss/total"}
    evals = curves[curves["metric"] == "eval/return"].drop(columns="folder")
    pd.testing.assert_frame_equal(evals.reset_index(drop=True), gradlab.curves(MAIN))
    assert len(pd.read_csv(tmp_path / "csv" / "curves.csv")) == len(curves)


def _refused(args, tmp_path, expected):
    before = sorted(p.name for p in tmp_path.iterdir())
    done = _export(*args)
    assert done.exit_code == 2
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], lines
    assert "Traceback" not in done.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


@committed
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path):
    main_before = sorted(p.name for p in MAIN.iterdir())
    _refused([MAIN, "-f", "xlsx", "-o", tmp_path / "x"], tmp_path,
             "unknown format 'xlsx'; choose one of: csv, parquet, rliable")  # fmt: skip
    (tmp_path / "empty").mkdir()
    _refused([tmp_path / "empty", "-o", tmp_path / "x"], tmp_path, "no runs in")
    _refused([MAIN, "-o", MAIN], tmp_path, "is the input")
    _refused([MAIN, "-o", MAIN / "export"], tmp_path, "lies inside the input")
    _refused([MAIN, "-o", MAIN / "regime=stress__variant=none__seed=0"], tmp_path,
             "lies inside the input")  # fmt: skip
    _refused([MAIN, MAIN, "-o", tmp_path / "x"], tmp_path, "given twice")
    _refused([MAIN, "-o", tmp_path / "no" / "such"], tmp_path, "does not exist")
    assert sorted(p.name for p in MAIN.iterdir()) == main_before


@committed
@pytest.mark.skipif(not (STUDY6 / "preregistration.json").is_file(), reason="no Study 6 here")
def test_folders_on_two_scales_are_refused(tmp_path):
    if not list(STUDY6.glob("*/summary.json")):
        pytest.skip("Study 6 has no finished run here yet")
    _refused([STUDY6, STUDY4["breakout"], "-f", "rliable", "-o", tmp_path / "x"], tmp_path,
             "declares a normalisation and")  # fmt: skip
