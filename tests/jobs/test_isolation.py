"""Tests of a job from the launcher's side: skipped when finished or held, run in a process of
its own, a job killed by a signal or a refused config recorded as one failed job."""

from __future__ import annotations

import importlib.util
import json
import os

import _standin_job as standin
import pytest

from experiments.base import process
from experiments.jobs import store
from experiments.jobs.process import hosting, isolation
from experiments.launch.hydra_app import job_request


def test_execute_skips_finished_and_never_raises(standin_env, capsys):
    job_dir = standin_env.res / "variant=none__seed=0"
    overrides = ["variant=none", "seed=0"]
    common = ["muzero.training_steps=2", "logger=none", "runtime.progress=false"]

    def execute(*extra):
        cfg = standin_env.compose([*overrides, *common, *extra])
        choices = {"task": "catch", "ablation": "t"}
        request = job_request(cfg, job_dir, overrides=overrides, choices=choices)
        return isolation.execute(request, job=standin.JOB)

    assert execute().status == "completed"
    assert execute() == isolation.Skipped("variant=none__seed=0", "completed")
    assert execute("runtime.force=true").status == "completed"
    result = execute("runtime.force=true", "muzero.fail_at=1")  # the job's own error: recorded
    assert result.status == "failed" and "stand-in failure at step 1" in result.error
    assert "Traceback" in (job_dir / "error.txt").read_text()
    out = capsys.readouterr().out
    assert "[completed] variant=none__seed=0: 2 steps" in out and "[  skipped]" in out


def test_a_job_killed_by_a_signal_is_one_failed_job(standin_env, tmp_path):
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps({"none/0": {"kill_at": 2}}))
    job_dir = standin_env.res / "variant=none__seed=0"
    overrides = ["variant=none", "seed=0"]
    cfg = standin_env.compose([*overrides, "muzero.training_steps=4", "logger=none"])
    os.environ[standin.FAULTS_ENV] = str(faults)  # the job's process gets the caller's environment
    try:
        request = job_request(cfg, job_dir, overrides=overrides, choices={"task": "catch"})
        result = isolation.execute(request, job=standin.JOB)
    finally:
        del os.environ[standin.FAULTS_ENV]
    assert result.status == "failed" and result.steps == 0
    assert result.error.startswith("the job's process killed by signal 9 (SIGKILL)")
    assert "killed by signal 9" in (job_dir / "error.txt").read_text()
    assert [r["step"] for r in store.read_metrics(job_dir / "metrics.jsonl")] == [1]
    request = job_request(cfg, job_dir, overrides=overrides, choices={"task": "catch"})
    again = isolation.execute(request, job=standin.JOB)
    assert again.status == "completed" and again.steps == 4  # the fault fires once


def test_each_configuration_runs_in_a_host_of_its_own_and_its_seeds_share_it(standin_env):
    """Job.programs keys a worker's hosts: the seeds of a variant share its host (and what it
    keeps, here a count of its jobs), another variant gets its own process, and coming back to
    the first variant finds its host still there (a worker keeps two)."""
    common = ["muzero.training_steps=1", "logger=none", "runtime.progress=false"]

    def run(variant, seed):
        overrides = [f"variant={variant}", f"seed={seed}"]
        job_dir = standin_env.res / f"variant={variant}__seed={seed}"
        cfg = standin_env.compose([*overrides, *common])
        request = job_request(cfg, job_dir, overrides=overrides, choices={"task": "catch"})
        assert isolation.execute(request, job=standin.PER_VARIANT_JOB).status == "completed"
        return store.read_summary(job_dir).pid

    try:
        pids = [run("none", 0), run("none", 1), run("scale_gradient", 0), run("none", 2)]
    finally:
        hosting.close_hosts()
    assert pids[0] == pids[1] == pids[3] and pids[2] != pids[0]
    assert os.getpid() not in pids


def test_a_refused_config_is_one_failed_job_and_a_finished_job_stays(standin_env, capsys):
    """The Hydra entry converts the config (``job_request``); one it refuses is recorded
    ``failed`` with its one-line error and traceback, unless the job is finished already."""
    job_dir = standin_env.res / "variant=none__seed=0"
    overrides = ["variant=none", "seed=0"]

    def execute(*extra):
        cfg = standin_env.compose([*overrides, "logger=none", "runtime.progress=false", *extra])
        request = job_request(cfg, job_dir, overrides=overrides, choices={"task": "catch"})
        return isolation.execute(request, job=standin.JOB)

    result = execute("muzero.training_steps=0")
    assert result.status == "failed" and result.steps == 0
    assert result.error == "ConfigError: muzero.training_steps=0 must be >= 1"
    assert "Traceback" in (job_dir / "error.txt").read_text()
    assert store.read_summary(job_dir) == result
    assert execute("muzero.training_steps=2").status == "completed"
    assert execute("muzero.training_steps=0") == isolation.Skipped(job_dir.name, "completed")
    assert execute("muzero.training_steps=0", "runtime.force=true").status == "failed"
    out = capsys.readouterr().out
    assert "[   failed] variant=none__seed=0: 0 steps, 0.0s  ConfigError: muzero" in out


def test_the_muzero_job_s_process_has_tensorflow_its_threads_and_xla_cache(standin_env):
    """The process a MuZero job runs in (MuZero's preload, job host and TensorFlow set-up, with
    the stand-in's training): TensorFlow imported before the thread settings, so its pools hold
    ``runtime.threads`` (TensorFlow's default reads 0), ``TF_XLA_FLAGS`` naming the XLA cache,
    the variant bound; the stand-in itself imports no TensorFlow."""
    from experiments.jobs.job import MUZERO

    assert MUZERO.tensorflow and not standin.JOB.tensorflow
    job_dir = standin_env.res / "variant=scale_gradient__seed=3"
    overrides = ["variant=scale_gradient", "seed=3"]
    xla = f"runtime.xla_cache={standin_env.res / 'xla'}"
    cfg = standin_env.compose(
        [*overrides, "muzero.training_steps=2", "logger=none", "runtime.threads=1", xla]
    )
    request = job_request(cfg, job_dir, overrides=overrides, choices={"task": "catch"})
    try:
        assert isolation.execute(request, job=standin.MUZERO_PROCESS_JOB).status == "completed"
    finally:
        hosting.close_hosts()  # MuZero's jobs run in a job host; none outlives the test
    rows = store.read_metrics(job_dir / "metrics.jsonl")
    # loss = 1 * (1 + 3/10) * (1 + 0.5) / step, by hand
    assert [r["loss/total"] for r in rows] == pytest.approx([1.95, 0.975])
    setup = ("env/tensorflow", "env/threads", "env/intra_op", "env/inter_op", "env/xla_cache")
    setup += ("env/bound",)
    assert {k: rows[0][k] for k in setup} == dict.fromkeys(setup, 1.0)


def test_overlap_only_with_a_core_to_spare(monkeypatch):
    """One thread (gradlab sweep's parallel jobs): no worker threads beside the step; more
    threads, or all cores of a machine with several, yes."""
    assert isolation.overlap_for(1) is False
    assert isolation.overlap_for(2) is True and isolation.overlap_for(16) is True
    monkeypatch.setattr(process, "cores", lambda: 1)
    assert isolation.overlap_for(None) is False
    monkeypatch.setattr(process, "cores", lambda: 2)
    assert isolation.overlap_for(None) is True
    from experiments.jobs.job import MUZERO

    assert MUZERO.overlap and not standin.JOB.overlap


def test_the_process_room_has_one_function_to_run_a_job_and_its_preloads_exist():
    import experiments.jobs.process as room
    from experiments.jobs.job import MUZERO

    assert room.__all__ == ["MAIN_PID_ENV", "STOP_FILE_ENV", "STOP_SIGNALS", "Skipped", "execute"]
    assert room.execute is isolation.execute and room.Skipped is isolation.Skipped
    # a process server skips a preload it cannot import without a word: each name must exist
    names = [hosting._DIES_WITH_PARENT, *MUZERO.preload, *standin.JOB.preload]
    assert [n for n in names if importlib.util.find_spec(n) is None] == []
    assert "experiments.jobs.process._preload_tensorflow" in MUZERO.preload


def test_the_muzero_jobs_configuration_is_everything_its_programs_depend_on_but_the_seed():
    from conftest import compose_config

    from experiments.jobs.job import MUZERO
    from experiments.launch.hydra_app import CONF_DIR
    from experiments.muzero.config import MuZeroConfig

    def programs(*overrides):
        cfg = compose_config(
            CONF_DIR, ["task=catch", "regime=tuned", *overrides], schema=MuZeroConfig
        )
        return MUZERO.programs(cfg)

    base = programs("variant=scale_gradient", "seed=0")
    assert programs("variant=scale_gradient", "seed=7") == base
    assert programs("variant=scale_gradient", "seed=0", "runtime.threads=1") == base  # settings
    assert programs("variant=scale_gradient", "seed=0", "logger=none") == base
    for other in (
        ["variant=none"],
        ["variant=scale_gradient", "variant.scale=0.25"],
        ["variant=scale_gradient", "muzero.unroll_steps=3"],
        ["variant=scale_gradient", "task=cartpole"],
    ):
        assert programs(*other, "seed=0") != base, other
