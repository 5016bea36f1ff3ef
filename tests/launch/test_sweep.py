"""A real tiny multirun through Hydra (joblib launcher), resume, and failure isolation.

The job is the stand-in (``tests/_standin_job.py``): the point here is the machinery around it.
"""

from __future__ import annotations

import json
import os

import _standin_job as standin
import pytest
from typer.testing import CliRunner

from cli.main import app
from experiments.jobs import store

JOBS = [f"regime=tuned__variant={v}__seed={s}" for v in ("none", "scale_gradient") for s in (0, 1)]


def _invoke(args):
    return CliRunner().invoke(app, [str(a) for a in args], obj=standin.JOB)


def _summary(job_dir):
    return json.loads((job_dir / "summary.json").read_text())


def _sweep_args(conf, res, *, seeds):
    """A stand-in sweep of 2 variants in one regime of the main job's two."""
    return standin.sweep_args(conf, res, "variant=none,scale_gradient", f"seed={seeds}")


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """One joblib sweep of 2 variants x 2 seeds, shared by the tests below."""
    root = tmp_path_factory.mktemp("sweep")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("WANDB_MODE", raising=False)
        conf = standin.make_conf(root)
        res = root / "res"
        args = _sweep_args(conf, res, seeds="0,1")
        result = _invoke([*args, "--jobs", "2"])
        yield {"result": result, "args": args, "res": res, "mp": mp}


def test_joblib_sweep_writes_every_job_folder(swept):
    result = swept["result"]
    assert result.exit_code == 0, result.output
    assert "4 jobs: 4 completed, 0 diverged, 0 timeout, 0 failed, 0 skipped" in result.output
    ablation = swept["res"] / "hidden_scale"
    assert f"wandb sync {ablation}/*/wandb/offline-run-*" in result.output
    assert sorted(p.name for p in ablation.iterdir() if p.is_dir()) == sorted(JOBS)
    for name in JOBS:
        job = ablation / name
        summary = _summary(job)
        assert summary["status"] == "completed" and summary["job"] == name
        assert summary["ablation"] == "hidden_scale" and summary["steps"] == 5
        regime, variant, seed = name.split("__")
        assert summary["group"] == {"regime": "tuned", "variant": variant.split("=")[1]}
        assert summary["seed"] == int(seed.split("=")[1])
        rows = store.read_metrics(job / "metrics.jsonl")
        assert [r["step"] for r in rows] == [1, 2, 3, 4, 5]
        scale = 0.5 if "scale_gradient" in name else 0.0
        expected = standin.loss_at(5, seed=summary["seed"], base_loss=1.0, scale=scale)
        assert rows[-1]["loss/total"] == pytest.approx(expected)
        # each of the 2 parallel jobs got its share of the cores as TensorFlow threads
        assert rows[0]["env/threads"] == max(1, len(os.sched_getaffinity(0)) // 2)
        # the stand-in runs no TensorFlow: nor did its job's process or the process server of
        # the joblib worker it was forked from (fresh for the sweep) import it
        assert rows[0]["env/tensorflow"] == 0.0
        assert "variant:" in (job / "config.yaml").read_text()
        assert len(list(job.glob("wandb/offline-run-*/run-*.wandb"))) == 1
    assert "WANDB_DIR" not in os.environ and "TF_NUM_INTRAOP_THREADS" not in os.environ


def test_second_invocation_runs_nothing_and_deleted_summary_reruns(swept):
    ablation = swept["res"] / "hidden_scale"
    before = {n: (ablation / n / "metrics.jsonl").stat().st_mtime_ns for n in JOBS}
    again = _invoke(swept["args"])
    assert again.exit_code == 0, again.output
    assert "4 jobs: 0 completed, 0 diverged, 0 timeout, 0 failed, 4 skipped" in again.output
    assert {n: (ablation / n / "metrics.jsonl").stat().st_mtime_ns for n in JOBS} == before

    dry = _invoke([*swept["args"], "--dry-run"])
    assert "0 to run, 4 to skip" in dry.output

    (ablation / JOBS[1] / "summary.json").unlink()
    dry = _invoke([*swept["args"], "--dry-run"])
    assert (
        "1 to run, 3 to skip" in dry.output and f"run   {ablation / JOBS[1]}  (new)" in dry.output
    )
    rerun = _invoke(swept["args"])
    assert rerun.exit_code == 0, rerun.output
    assert "4 jobs: 1 completed, 0 diverged, 0 timeout, 0 failed, 3 skipped" in rerun.output
    assert _summary(ablation / JOBS[1])["status"] == "completed"
    assert len(store.read_metrics(ablation / JOBS[1] / "metrics.jsonl")) == 5
    # the unfinished attempt's W&B run is discarded: wandb sync uploads each job once
    assert len(list((ablation / JOBS[1]).glob("wandb/offline-run-*"))) == 1

    forced = _invoke([*swept["args"], "--force", "logger=none"])
    assert "4 jobs: 4 completed" in forced.output


def test_failures_are_isolated_and_rerun(tmp_path, monkeypatch):
    conf = standin.make_conf(tmp_path)
    res = tmp_path / "res"
    args = [
        "sweep",
        "ablation=hidden_scale",
        "regime=tuned",
        "variant=none",
        "seed=0",
        "muzero.nan_at=0,2",
        "muzero.fail_at=0,3",
        "logger=none",
        f"runtime.results_dir={res}",
        "--config-dir",
        str(conf),
    ]
    result = _invoke(args)
    assert result.exit_code == 1, result.output  # a job failed: non-zero, after all jobs ran
    assert "4 jobs: 1 completed, 2 diverged, 0 timeout, 1 failed, 0 skipped" in result.output
    ablation = res / "hidden_scale"
    failed = ablation / "muzero.fail_at=3__muzero.nan_at=0__regime=tuned__variant=none__seed=0"
    assert _summary(failed)["status"] == "failed"
    assert "stand-in failure at step 3" in (failed / "error.txt").read_text()
    diverged = _summary(
        ablation / "muzero.fail_at=3__muzero.nan_at=2__regime=tuned__variant=none__seed=0"
    )
    assert diverged["status"] == "diverged" and diverged["diverged_step"] == 2

    # a job killed mid-run: summary says running, metrics torn; the re-run redoes it exactly once
    killed = ablation / "muzero.fail_at=0__muzero.nan_at=0__regime=tuned__variant=none__seed=0"
    store.write_json_atomic(killed / "summary.json", {**_summary(killed), "status": "running"})
    with open(killed / "metrics.jsonl", "a") as f:
        f.write('{"step": 6, "loss/to')
    again = _invoke(args)
    assert again.exit_code == 1
    assert "4 jobs: 1 completed, 0 diverged, 0 timeout, 1 failed, 2 skipped" in again.output
    assert [r["step"] for r in store.read_metrics(killed / "metrics.jsonl")] == [1, 2, 3, 4, 5]


def test_parallel_sweep_deals_the_seeds_of_a_configuration_to_one_worker(tmp_path, monkeypatch):
    """With --jobs 2, 2 variants x 3 seeds go to the workers a variant at a time (joblib's
    batch_size from experiments/launch/dealing.py, all dispatched at once so that deals start at a
    variant's first seed), so each variant's seeds run in one host process."""
    monkeypatch.delenv("WANDB_MODE", raising=False)
    conf = standin.make_conf(tmp_path)
    res = tmp_path / "res"
    args = [*_sweep_args(conf, res, seeds="0,1,2"), "logger=none", "--jobs", "2"]
    result = CliRunner().invoke(app, args, obj=standin.HOSTED_JOB)
    assert result.exit_code == 0, result.output
    assert "6 jobs: 6 completed" in result.output
    for variant in ("none", "scale_gradient"):
        names = [f"regime=tuned__variant={variant}__seed={s}" for s in (0, 1, 2)]
        pids = {_summary(res / "hidden_scale" / name)["pid"] for name in names}
        assert len(pids) == 1, (variant, pids)


# --------------------------------------------------------------------------------------------
# the sweep service itself (experiments/launch/sweep.py), without the command line


def _request(conf, res, *overrides, **kwargs):
    from experiments.launch.sweep import SweepRequest

    args = ["ablation=hidden_scale", "regime=tuned", *overrides, f"runtime.results_dir={res}"]
    return SweepRequest(tuple(args), config_dir=conf, job=standin.JOB, **kwargs)


def test_the_service_plans_runs_and_counts_into_one_typed_result(tmp_path):
    from experiments.launch.sweep import prepare_sweep, run_sweep

    conf, res = standin.make_conf(tmp_path), tmp_path / "res"
    faults = ("variant=none", "seed=0", "muzero.nan_at=0,2", "muzero.fail_at=0,3", "logger=none")
    plan = prepare_sweep(_request(conf, res, *faults, jobs="1"))
    assert len(plan.jobs) == 4 and plan.skipped == frozenset() and plan.parallel.count == 1
    assert plan.wandb_folder is None  # logger=none, as the jobs' typed configs say
    result = run_sweep(plan)
    assert result.launched.stopped is None and result.launched.launcher_error is None
    # by hand: fail_at=0 nan_at=0 completes, nan_at=2 diverges (twice), fail_at=3 fails
    assert result.counts.by_status == {
        "completed": 1, "diverged": 2, "timeout": 0, "failed": 1, "skipped": 0,
    }  # fmt: skip
    assert result.counts.unfinished == () and result.exit_code == 1
    again = run_sweep(prepare_sweep(_request(conf, res, *faults, jobs="1")))
    assert again.plan.skipped == {j.name for j in again.plan.jobs if j.reason != "failed"}
    assert again.counts.by_status["failed"] == 1 and again.counts.by_status["skipped"] == 3
    assert again.exit_code == 1


@pytest.mark.parametrize(
    ("overrides", "wandb"),
    [((), True), (("logger=none",), False), (("logger.mode=none",), False),
     (("logger=wandb_online",), True)],
)  # fmt: skip
def test_the_logger_is_read_from_the_jobs_typed_configs(tmp_path, overrides, wandb):
    # logger.mode=none named no logger file: the YAML the command line used to read said W&B
    from experiments.launch.sweep import prepare_sweep

    conf, res = standin.make_conf(tmp_path), tmp_path / "res"
    plan = prepare_sweep(_request(conf, res, "seed=0", *overrides, dry_run=True))
    assert plan.wandb_folder == (res / "hidden_scale" if wandb else None)
    assert not res.exists()  # planned, nothing written


def test_the_service_refuses_before_anything_is_written(tmp_path):
    from experiments.base.errors import ConfigError
    from experiments.launch.sweep import SweepRequest, prepare_sweep, run_sweep

    conf, res = standin.make_conf(tmp_path), tmp_path / "res"
    with pytest.raises(ConfigError, match="gradlab sweep needs ablation=NAME; choose one of: "):
        prepare_sweep(SweepRequest(("seed=0",), config_dir=conf, job=standin.JOB))
    with pytest.raises(ConfigError, match="--jobs 0 is out of range"):
        prepare_sweep(_request(conf, res, jobs="0"))
    warned = []
    prepare_sweep(_request(conf, res, "seed=0", jobs="100000", dry_run=True), warn=warned.append)
    assert len(warned) == 1 and warned[0].startswith("--jobs 100000 capped at ")
    with pytest.raises(ValueError, match="a dry run's plan is not run"):
        run_sweep(prepare_sweep(_request(conf, res, "seed=0", dry_run=True)))
    assert not res.exists()


def test_launcher_overrides_by_hand(tmp_path):
    from experiments.launch.plan import PlannedJob
    from experiments.launch.settings import launch_overrides

    jobs = [
        PlannedJob(f"v={v}__seed={s}", (f"v={v}", f"seed={s}"), tmp_path, True, "new", "none")
        for v in ("a", "b")
        for s in (0, 1)
    ]
    # 2 configurations x 2 seeds on 2 workers: deals of 2 (tests/launch/test_dealing.py: 2.5 < 3)
    assert launch_overrides(["x=1"], [], planned=jobs, parallel=2, jobs="auto", force=False) == [
        "x=1", "runtime.progress=false", "runtime.threads=1", "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2", "hydra.launcher.batch_size=2",
        "hydra.launcher.pre_dispatch=all", "hydra/sweeper=planned",
    ]  # fmt: skip
    own = ["hydra/sweeper=basic"]
    assert launch_overrides(["x=1"], own, planned=jobs, parallel=1, jobs="1", force=True) == [
        "x=1", "runtime.progress=false", "runtime.force=true", "hydra/sweeper=basic",
    ]  # fmt: skip
