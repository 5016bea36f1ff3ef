"""Stopping a sweep (issue 27): SIGTERM, SIGHUP, SIGINT (Ctrl-C) and SIGKILL of a running sweep's
main process leave no process of the sweep alive, and the same command then completes every job
exactly once.

Real sweeps run in a subprocess (the stand-in job, ``tests/_standin_job.py``, 2 variants x 2
seeds, two jobs at a time): a signal is sent once a job has written rows; every process below
the sweep's main one, collected *before* the signal with psutil, must be gone within 15 s.
Each job's start is logged to a file (:func:`train_counted`), so "exactly once" is counted, not
inferred from the final files. The unit tests at the end check the pieces (:mod:`experiments.
jobs.process.lifetime`, :mod:`experiments.launch.lifetime`, the runner's stop, the store's
``interrupted``) in this process.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import _standin_job as standin
import psutil
import pytest

from experiments.jobs import runner, store
from experiments.jobs.process import lifetime
from experiments.launch.lifetime import Sweep

STEPS = 30
SLEEP_S = 0.1  # per step: a job runs about 3 s once started
RUNS_ENV = "GRADLAB_TEST_RUNS"  # the file each job start is appended to
NAME = f"muzero.sleep_s={SLEEP_S}__muzero.training_steps={STEPS}__regime=tuned__variant={{}}"
NAME += "__seed={}"
JOBS = {f"{v}/{s}": NAME.format(v, s) for v in ("none", "scale_gradient") for s in (0, 1)}
WITHIN_S = 15.0  # no process of the sweep alive this long after the signal (the bar)


def train_counted(config, task, variant, placement, *, seed, cache=None):
    """The stand-in's training, each start logged to ``$GRADLAB_TEST_RUNS`` (one line, one
    ``write`` in append mode: whole lines even from processes writing at once)."""
    del cache
    with open(os.environ[RUNS_ENV], "a", encoding="utf-8") as log:
        log.write(f"{variant.name}/{seed}\n")
    yield from standin.train(config, task, variant, placement, seed=seed)


COUNTED = dataclasses.replace(standin.JOB, name="counted", train=train_counted, cache=dict)
"""The stand-in as MuZero runs: a launcher worker's jobs in one job host (``cache``)."""


def _env(runs: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "TF_NUM"))}
    here = str(Path(__file__).resolve().parent)  # the sweep's processes import this module
    path = os.pathsep.join(p for p in (here, str(standin.PATH.parent), env.get("PYTHONPATH")) if p)
    env.update({"PYTHONPATH": path, "TF_CPP_MIN_LOG_LEVEL": "3", RUNS_ENV: str(runs)})
    return env


def _cli(*args: str) -> list[str]:
    code = (
        "import test_stops as t; from cli.main import app; app(prog_name='gradlab', obj=t.COUNTED)"
    )
    return [sys.executable, "-c", code, *args]


def _args(tmp_path: Path, *extra: str) -> list[str]:
    conf = tmp_path / "conf"
    if not conf.exists():
        standin.make_conf(tmp_path)
    return standin.sweep_args(
        conf,
        tmp_path / "res",
        "variant=none,scale_gradient",
        "seed=0,1",
        f"muzero.training_steps={STEPS}",
        f"muzero.sleep_s={SLEEP_S}",
        *extra,
    )


def _rows(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _start(tmp_path: Path, args: list[str]) -> tuple[subprocess.Popen, Path]:
    """The sweep in a new session (a terminal's Ctrl-C is a SIGINT to its process group),
    returned once a job has written 2 rows."""
    log = tmp_path / "first.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            _cli(*args),
            env=_env(tmp_path / "runs.log"),
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    ablation = tmp_path / "res" / "hidden_scale"
    deadline = time.monotonic() + 300  # a cold start imports TensorFlow in each process server
    while time.monotonic() < deadline and proc.poll() is None:
        if any(_rows(ablation / n / "metrics.jsonl") >= 2 for n in JOBS.values()):
            return proc, log
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail(f"no job ran: {log.read_text()}")


def _alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                out.append(process)
        except psutil.NoSuchProcess:
            continue
    return out


def _stop(proc: subprocess.Popen, sig: int, *, group: bool = False,
          late: tuple[str, ...] = ()) -> tuple[int, float]:  # fmt: skip
    """Sends ``sig`` to the sweep's main process (its process group: ``group``), then asserts
    that no process of the sweep is alive within :data:`WITHIN_S`, but those named ``late``
    (checked apart). Returns the exit status and the seconds until the last process ended."""
    tree = psutil.Process(proc.pid).children(recursive=True)  # before the signal
    slow = [p for p in tree if p.name().startswith(late)] if late else []
    tree = [p for p in tree if p not in slow]
    assert len(tree) >= 2, [p.name() for p in tree]  # process servers, job hosts, workers...
    sent = time.monotonic()
    (os.killpg if group else os.kill)(proc.pid, sig)
    try:
        code = proc.wait(timeout=WITHIN_S)
    except subprocess.TimeoutExpired:
        code = None
    while _alive(tree) and time.monotonic() < sent + WITHIN_S:
        time.sleep(0.05)
    took, left = time.monotonic() - sent, _alive(tree)
    for process in left:  # leave nothing behind for the next test either
        process.kill()
    if code is None:
        os.killpg(proc.pid, signal.SIGKILL)
    described = [(p.pid, p.name()) for p in left]
    assert code is not None and not left, f"alive {WITHIN_S:g} s after {sig!r}: {described}"
    _, still = psutil.wait_procs(slow, timeout=90)
    assert not still, f"alive 90 s after {sig!r}: {[(p.pid, p.name()) for p in still]}"
    return code, took


def _rerun_completes_each_job_once(tmp_path: Path, args: list[str]) -> subprocess.CompletedProcess:
    """The same command at once: exit 0, every job completed once, with rows 1..STEPS and one
    W&B run; the re-run started exactly the jobs that had not completed."""
    ablation = tmp_path / "res" / "hidden_scale"
    summaries = {k: store.read_summary(ablation / n) for k, n in JOBS.items()}
    done = {k for k, s in summaries.items() if s is not None and s.status == "completed"}
    runs = tmp_path / "runs.log"
    runs.write_text("")
    again = subprocess.run(
        _cli(*args), env=_env(runs), cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"4 jobs: {4 - len(done)} completed" in again.stdout
    assert collections.Counter(runs.read_text().split()) == {k: 1 for k in JOBS if k not in done}
    for name in JOBS.values():
        summary = json.loads((ablation / name / "summary.json").read_text())
        assert summary["status"] == "completed" and summary["steps"] == STEPS
        text = (ablation / name / "metrics.jsonl").read_text()
        assert [json.loads(line)["step"] for line in text.splitlines()] == list(range(1, STEPS + 1))
        if "logger=none" not in args:
            assert len(list((ablation / name).glob("wandb/offline-run-*"))) == 1
    return again


def _assert_interrupted(tmp_path: Path, output: str, head: str) -> None:
    """The one line, no traceback; every started job ``interrupted`` with its rows 1..k."""
    assert "Traceback" not in output, output
    lines = [line for line in output.splitlines() if line.startswith("interrupted")]
    assert len(lines) == 1 and lines[0].startswith(f"{head}: "), output
    assert lines[0].endswith("; the same command resumes them"), output
    ablation = tmp_path / "res" / "hidden_scale"
    statuses = collections.Counter()
    for name in JOBS.values():
        summary = store.read_summary(ablation / name)
        status = summary.status if summary else "not started"
        statuses[status] += 1
        if status == "interrupted":
            rows = store.read_metrics(ablation / name / "metrics.jsonl")
            assert [r["step"] for r in rows] == list(range(1, len(rows) + 1))
            assert summary.steps == len(rows) < STEPS
    assert statuses["interrupted"] >= 1 and statuses["running"] == 0, statuses
    shown = (
        f"{statuses['completed']} of 4 jobs completed, {statuses['interrupted']} interrupted, "
        f"{statuses['not started']} not started"
    )
    assert shown in lines[0], (lines[0], statuses)


# --------------------------------------------------------------------------------------------
# Real sweeps (joblib, 2 workers): a few by default, the rest slow


@pytest.mark.parametrize(
    ("sig", "head", "group"),
    [
        (signal.SIGTERM, "interrupted by SIGTERM", False),
        (signal.SIGINT, "interrupted", True),  # a terminal's Ctrl-C: the whole process group
        pytest.param(signal.SIGHUP, "interrupted by SIGHUP", False, marks=pytest.mark.slow),
        pytest.param(signal.SIGINT, "interrupted", False, marks=pytest.mark.slow),
    ],
)
def test_a_stop_signal_interrupts_the_jobs_and_the_same_command_resumes(tmp_path, sig, head,
                                                                        group):  # fmt: skip
    args = [*_args(tmp_path), "--jobs", "2"]
    proc, log = _start(tmp_path, args)
    code, _ = _stop(proc, sig, group=group)
    assert code == 128 + sig, log.read_text()
    _assert_interrupted(tmp_path, log.read_text(), head)
    _rerun_completes_each_job_once(tmp_path, args)


def test_sigkill_of_the_main_process_ends_every_process_and_the_rerun_proceeds(tmp_path):
    args = [*_args(tmp_path, "logger=none"), "--jobs", "2"]
    proc, _ = _start(tmp_path, args)
    code, _ = _stop(proc, signal.SIGKILL)  # nothing can catch it: the children notice
    assert code == -signal.SIGKILL
    _rerun_completes_each_job_once(tmp_path, args)  # no lock outlived its holder


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_the_basic_launcher_one_job_at_a_time(tmp_path, sig):
    args = [*_args(tmp_path, "logger=none"), "--jobs", "1"]
    proc, log = _start(tmp_path, args)
    code, _ = _stop(proc, sig)
    assert code == (128 + sig if sig != signal.SIGKILL else -sig), log.read_text()
    if sig != signal.SIGKILL:
        _assert_interrupted(tmp_path, log.read_text(), "interrupted by SIGTERM")
    _rerun_completes_each_job_once(tmp_path, args)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_submitit_local_launcher(tmp_path, sig):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    args = [*_args(tmp_path, "logger=none", "hydra/launcher=submitit_local")]
    proc, log = _start(tmp_path, args)
    code, _ = _stop(proc, sig)
    assert code == (128 + sig if sig != signal.SIGKILL else -sig), log.read_text()
    if sig != signal.SIGKILL:
        _assert_interrupted(tmp_path, log.read_text(), "interrupted by SIGTERM")
    _rerun_completes_each_job_once(tmp_path, args)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_ray_launcher_and_its_local_instance(tmp_path, sig):
    """Ray's 20-odd processes (GCS, raylet, dashboard, workers) end with the sweep; Ray's driver
    turns SIGTERM into ``sys.exit(15)`` itself, still a stop (143, jobs interrupted)."""
    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    ray_init = ("hydra/launcher=ray", "hydra.launcher.ray.init.num_cpus=2")
    args = [*_args(tmp_path, "logger=none", *ray_init)]
    proc, log = _start(tmp_path, args)
    # after a SIGKILL, Ray's two agents end by themselves about 60 s later (docs/stopping.md)
    late = ("ray::DashboardA", "ray::RuntimeEnv") if sig == signal.SIGKILL else ()
    code, _ = _stop(proc, sig, late=late)
    assert code == (128 + sig if sig != signal.SIGKILL else -sig), log.read_text()
    if sig != signal.SIGKILL:
        _assert_interrupted(tmp_path, log.read_text(), "interrupted by SIGTERM")
    _rerun_completes_each_job_once(tmp_path, args)


# --------------------------------------------------------------------------------------------
# Two sweeps on one folder at once never run a job twice


def test_two_sweeps_on_one_folder_at_once_run_each_job_once(tmp_path):
    args = [*_args(tmp_path, "logger=none"), "--jobs", "1"]
    runs = tmp_path / "runs.log"
    procs = [
        subprocess.Popen(
            _cli(*args), env=_env(runs), cwd=tmp_path, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    # a sweep that met a job the other one was running says so and exits 1 (unfinished then)
    assert {p.returncode for p in procs} <= {0, 1}, outputs
    assert collections.Counter(runs.read_text().split()) == dict.fromkeys(JOBS, 1), outputs
    ablation = tmp_path / "res" / "hidden_scale"
    for name in JOBS.values():
        assert store.read_summary(ablation / name).status == "completed"
        assert len(store.read_metrics(ablation / name / "metrics.jsonl")) == STEPS


# --------------------------------------------------------------------------------------------
# The pieces, in this process


def _standin_run(tmp_path, stop, steps=6):
    from conftest import compose_config

    from experiments.config import to_run_config

    conf = standin.make_conf(tmp_path)
    cfg = compose_config(
        conf, [f"muzero.training_steps={steps}", "logger=none"], schema=standin.MuZeroConfig
    )
    return runner.run_job(
        to_run_config(cfg),
        tmp_path / "job",
        job="job",
        overrides={},
        choices={},
        resolved={},
        train_fn=standin.train,
        ablation=None,
        stop=stop,
        tensorflow=standin.JOB.tensorflow,
    )


def test_run_job_stops_at_the_step_it_is_asked_and_keeps_the_rows(tmp_path):
    asked = iter([False, False, False, True])  # asked before each step: stop before step 4
    summary = _standin_run(tmp_path, stop=lambda: next(asked))
    assert summary.status == "interrupted" and summary.steps == 3
    assert store.read_summary(tmp_path / "job").status == "interrupted"
    rows = store.read_metrics(tmp_path / "job" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3]
    # loss = 1 * (1 + 0/10) * (1 + 0) / step for the stand-in's seed 0, variant none
    assert [r["loss/total"] for r in rows] == pytest.approx([1.0, 0.5, 1 / 3])
    assert summary.stability["steps"] == 3
    assert store.should_run(tmp_path / "job") == (True, "interrupted")


def test_job_stop_by_stop_file_or_by_a_signal_to_the_process(tmp_path):
    stop_file = tmp_path / "stop"
    with lifetime.JobStop(stop_file) as stop:
        assert not stop()
        stop_file.touch()
        assert stop()
    before = signal.getsignal(signal.SIGTERM)
    with lifetime.JobStop(tmp_path / "never") as stop:
        os.kill(os.getpid(), signal.SIGTERM)  # raises nothing, ends nothing: asks to stop
        deadline = time.monotonic() + 5
        while not stop() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stop() and stop.signal == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before


def test_sweep_takes_a_signal_as_a_stop_request_and_puts_everything_back(tmp_path):
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    with Sweep(grace_s=60) as sweep:
        stop_file = Path(os.environ[lifetime.STOP_FILE_ENV])
        assert os.environ[lifetime.MAIN_PID_ENV] == str(os.getpid())
        assert not lifetime.stop_requested()
        os.kill(os.getpid(), signal.SIGINT)  # no KeyboardInterrupt: the watcher takes it
        deadline = time.monotonic() + 5
        while sweep.signal is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sweep.signal == signal.SIGINT and sweep.exit_code == 130
        assert stop_file.exists() and lifetime.stop_requested()
    assert sweep.exit_code == 130 and not stop_file.exists()
    assert lifetime.STOP_FILE_ENV not in os.environ and lifetime.MAIN_PID_ENV not in os.environ
    assert {s: signal.getsignal(s) for s in before} == before
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def test_a_second_signal_kills_what_is_left_and_exits_at_once(tmp_path):
    """In a fresh process: a child that ignores the stop, two SIGTERMs: the child is killed, the
    hard-stop callback runs, and the process exits 143 (128 + SIGTERM) well before the grace."""
    script = textwrap.dedent(
        """
        import os, signal, subprocess, sys, time
        from experiments.launch import lifetime
        with lifetime.Sweep(grace_s=60, on_hard_stop=lambda s: print("hard stop", s)):
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            print("child", child.pid, flush=True)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
        print("not reached")
        """
    )
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 143, done.stdout + done.stderr
    assert time.monotonic() - start < 20
    child = int(done.stdout.split("child ")[1].split()[0])
    assert f"hard stop {int(signal.SIGTERM)}" in done.stdout and "not reached" not in done.stdout
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE


def test_a_child_dies_with_its_parent(tmp_path):
    """die_with_parent in a grandchild; SIGKILL of its parent: the grandchild goes too."""
    script = textwrap.dedent(
        """
        import subprocess, sys
        code = "from experiments.jobs.process.lifetime import die_with_parent; import time; "
        code += "die_with_parent(); print('ready', flush=True); time.sleep(60)"
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        child.stdout.readline()
        print(child.pid, flush=True)
        import time; time.sleep(60)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    grandchild = psutil.Process(int(parent.stdout.readline()))
    parent.kill()
    parent.wait(timeout=10)
    gone, _ = psutil.wait_procs([grandchild], timeout=5)
    assert gone, "the grandchild outlived its parent"


def test_mark_interrupted_only_a_running_job_no_live_process_holds(tmp_path):
    job = tmp_path / "job"
    store.write_json_atomic(job / "summary.json", {"status": "running", "job": "job", "steps": 0})
    with store.MetricsWriter(job / "metrics.jsonl") as writer:
        for step in (1, 2):
            writer.append({"step": step})
    with store.job_lock(job) as locked:  # a live process holds it: left alone
        assert locked and not store.mark_interrupted(job, reason="x")
    assert store.mark_interrupted(job, reason="stopped by SIGTERM before its next step")
    summary = store.read_summary(job)
    assert summary.status == "interrupted" and summary.steps == 2
    assert summary.error == "stopped by SIGTERM before its next step"
    assert not store.mark_interrupted(job, reason="again")  # no longer running
    assert not store.mark_interrupted(tmp_path / "missing", reason="x")
    assert not (tmp_path / "missing").exists()


def test_a_stop_records_the_jobs_left_running_and_counts_them(tmp_path):
    """The sweep service's count after a stop (experiments/launch/counting.py): a job left
    running with no live process is recorded interrupted, a job a live process holds is left to
    it, finished ones counted as they are, the rest not started."""
    from experiments.launch.counting import mark_stopped
    from experiments.launch.plan import PlannedJob

    jobs = [
        PlannedJob(n, (), tmp_path / n, True, "new", "none")
        for n in ("done", "killed", "held", "new")
    ]
    for job, status in zip(jobs[:3], ("completed", "running", "running"), strict=True):
        store.write_json_atomic(job.job_dir / "summary.json", {"status": status, "job": job.name})
    with store.job_lock(jobs[2].job_dir) as locked:
        assert locked
        stopped = mark_stopped(jobs, signal.SIGTERM)
    assert store.read_summary(jobs[1].job_dir).status == "interrupted"
    assert store.read_summary(jobs[2].job_dir).status == "running"
    # by hand: 1 completed, 1 interrupted; "held" (running) and "new" (none) not counted
    assert stopped.by_status == {
        "completed": 1, "diverged": 0, "timeout": 0, "failed": 0, "interrupted": 1,
    }  # fmt: skip
    assert (stopped.jobs, stopped.not_started, stopped.exit_code) == (4, 2, 143)
    assert stopped.name == "SIGTERM"


def test_the_stopped_exit_codes_are_128_plus_each_stop_signal():
    """`gradlab study run` ends on these and goes on after any other code: SIGHUP 1, SIGINT 2,
    SIGTERM 15."""
    from experiments.launch.lifetime import STOPPED_EXIT_CODES

    assert frozenset({129, 130, 143}) == STOPPED_EXIT_CODES
