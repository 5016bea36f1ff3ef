"""A real sweep on a local Ray instance (hydra-ray-launcher), with the stand-in job.

Needs Ray (the ``test`` and ``ray`` extras install it); skipped without it. The sweeps are
marked ``slow``: a local Ray instance takes tens of seconds to start on two cores (figures in the
README); the launcher's configuration is checked in every run.
"""

from __future__ import annotations

import json
import os

import _standin_job as standin
import pytest

from experiments.jobs import store

pytest.importorskip("hydra_plugins.hydra_ray_launcher")


@pytest.fixture
def ray_session(monkeypatch):
    """Ray's workers import the stand-in job: they inherit the driver's PYTHONPATH."""
    import ray

    tests = str(standin.PATH.parent)
    paths = [p for p in (tests, os.environ.get("PYTHONPATH")) if p]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    yield
    ray.shutdown()


@pytest.mark.slow
def test_ray_sweep_runs_each_job_once_and_a_killed_job_is_one_failed_job(
    standin_env, tmp_path, monkeypatch, ray_session
):
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps({"scale_gradient/1": {"kill_at": 2}}))
    monkeypatch.setenv(standin.FAULTS_ENV, str(faults))
    args = [
        "sweep",
        "ablation=hidden_scale",
        "regime=tuned",
        "variant=none,scale_gradient",
        "seed=0,1",
        *standin_env.common,
        "hydra/launcher=ray",
        "hydra.launcher.ray.init.num_cpus=2",
        "--config-dir",
        standin_env.conf,
    ]
    first = standin_env.invoke(args)
    assert first.exit_code == 1, first.output  # one job failed: the others completed
    assert "4 jobs: 3 completed, 0 diverged, 0 timeout, 1 failed, 0 skipped" in first.output
    ablation = standin_env.res / "hidden_scale"
    killed = store.read_summary(ablation / "regime=tuned__variant=scale_gradient__seed=1")
    assert killed.status == "failed" and "killed by signal 9 (SIGKILL)" in killed.error

    again = standin_env.invoke(args)  # the results folder decides: only the failed job re-runs
    assert again.exit_code == 0, again.output
    assert "4 jobs: 1 completed, 0 diverged, 0 timeout, 0 failed, 3 skipped" in again.output
    for name in ("variant=none__seed=0", "variant=scale_gradient__seed=1"):
        name = f"regime=tuned__{name}"
        summary = store.read_summary(ablation / name)
        assert summary.status == "completed" and summary.steps == 5


def test_ray_launcher_has_retries_off(standin_env):
    from conftest import compose_config

    cfg = compose_config(standin_env.conf, ["hydra/launcher=ray"], schema=standin.MuZeroConfig)
    assert cfg.hydra.launcher.ray.remote.max_retries == 0
