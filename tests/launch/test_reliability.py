"""Reliability (issue 7): no result lost or duplicated under SIGKILL, injected faults, W&B trouble
or budgets.

Real processes are killed with SIGKILL: a whole sweep (``os.killpg``) at a moment chosen by
watching its files, one job killing itself inside a sweep, and one job killed at every write
boundary of its life (a forked copy of this process, so each kill costs milliseconds). After each
kill the same command runs again and every job must end ``completed`` exactly once, with metric
rows 1..N once each and whole, parseable ``summary.json`` and ``metrics.jsonl`` files.

The job is the stand-in (``tests/_standin_job.py``): the point is the machinery around it.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import _standin_job as standin
import pytest
from conftest import compose_config
from typer.testing import CliRunner

from cli.main import app
from experiments.jobs import store
from experiments.jobs.process import isolation
from experiments.launch.hydra_app import job_request
from experiments.report.runs.results import load_results

STEPS = 8


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "TF_NUM"))}
    path = os.pathsep.join(p for p in (str(standin.PATH.parent), env.get("PYTHONPATH")) if p)
    env.update({"PYTHONPATH": path, "TF_CPP_MIN_LOG_LEVEL": "3", **extra})
    return env


def _cli(*args: str) -> list[str]:
    """The gradlab command line in a fresh process, running the stand-in job (a test's caller
    passes its job to the app, as ``CliRunner`` tests do with ``obj``)."""
    code = "import _standin_job as s; from cli.main import app; app(prog_name='gradlab', obj=s.JOB)"
    return [sys.executable, "-c", code, *args]


def _invoke(args: list[str]):
    return CliRunner().invoke(app, [str(a) for a in args], obj=standin.JOB)


def _sweep_args(res: Path, conf: Path, *overrides: str) -> list[str]:
    return [
        *standin.sweep_args(conf, res, f"muzero.training_steps={STEPS}", "logger=none", *overrides),
        "--jobs",
        "1",  # in turn: the tests below reason about the order of the jobs
    ]


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _assert_each_job_completed_once(ablation: Path, jobs: list[str], *, steps: int) -> None:
    """Every job folder: one whole summary (completed), rows 1..steps once each, no temp file."""
    assert sorted(p.name for p in ablation.iterdir() if p.is_dir()) == sorted(jobs)
    for name in jobs:
        job = ablation / name
        summary = json.loads((job / "summary.json").read_text())  # whole JSON, not torn
        assert summary["status"] == "completed" and summary["job"] == name
        assert summary["steps"] == steps and summary["stability"]["steps"] == steps
        text = (job / "metrics.jsonl").read_text()
        assert text.endswith("\n") and text.count("\n") == steps  # no torn or extra line
        rows = [json.loads(line) for line in text.splitlines()]
        assert [r["step"] for r in rows] == list(range(1, steps + 1))
        assert not list(job.glob(".*.tmp")) and not (job / "error.txt").exists()


def _table_counts(ablation: Path) -> dict[str, tuple[int, int]]:
    """``gradlab table --format json`` on the folder: (runs, finished seeds) per group."""
    result = _invoke(["table", str(ablation), "--format", "json"])
    assert result.exit_code == 0, result.output
    return {r["group"]: (r["runs"], r["seeds"]) for r in json.loads(result.stdout)["rows"]}


# --------------------------------------------------------------------------------------------
# 1. SIGKILL of a whole sweep (process group), then the same command again


def test_sigkill_of_the_whole_sweep_then_rerun_completes_each_job_once(tmp_path):
    conf, res = standin.make_conf(tmp_path), tmp_path / "res"
    args = _sweep_args(res, conf, "variant=none", "seed=0,1,2", "muzero.sleep_s=0.05")
    ablation = res / "hidden_scale"
    name = f"muzero.sleep_s=0.05__muzero.training_steps={STEPS}__regime=tuned__variant=none"
    jobs = [f"{name}__seed={s}" for s in range(3)]
    log = (tmp_path / "first.log").open("w")
    proc = subprocess.Popen(
        _cli(*args), env=_env(), cwd=tmp_path, stdout=log, stderr=log, start_new_session=True
    )
    watched = ablation / jobs[1] / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while _lines(watched) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)  # the sweep and everything it started
    assert proc.wait(timeout=30) == -signal.SIGKILL, (tmp_path / "first.log").read_text()

    # killed mid-run: job 0 done, job 1 "running" with some rows, job 2 not started
    assert store.read_summary(ablation / jobs[0]).status == "completed"
    assert store.read_summary(ablation / jobs[1]).status == "running"
    partial = store.read_metrics(watched)
    assert 3 <= len(partial) < STEPS
    assert [r["step"] for r in partial] == list(range(1, len(partial) + 1))
    assert not (ablation / jobs[2]).exists()
    assert load_results(ablation).averaged["job"].tolist() == [jobs[0]]  # never averaged

    again = subprocess.run(
        _cli(*args), env=_env(), cwd=tmp_path, capture_output=True, text=True, timeout=180
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "3 jobs: 2 completed, 0 diverged, 0 timeout, 0 failed, 1 skipped" in again.stdout
    _assert_each_job_completed_once(ablation, jobs, steps=STEPS)
    assert _table_counts(ablation) == {
        f"muzero.sleep_s=0.05, muzero.training_steps={STEPS}, regime=tuned, variant=none": (3, 3)
    }


# --------------------------------------------------------------------------------------------
# 2. Fault injection (issue 7, item 6): one job raises, one job is SIGKILLed, in one sweep


def test_fault_injection_raise_and_sigkill_then_rerun_counts_each_job_once(tmp_path):
    conf, res = standin.make_conf(tmp_path), tmp_path / "res"
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps({"none/0": {"raise_at": 2}, "scale_gradient/0": {"kill_at": 3}}))
    env = _env(**{standin.FAULTS_ENV: str(faults)})
    args = _sweep_args(res, conf, "variant=none,scale_gradient", "seed=0,1")
    ablation = res / "hidden_scale"
    name = f"muzero.training_steps={STEPS}__regime=tuned__variant={{}}__seed={{}}"
    jobs = [name.format(v, s) for v in ("none", "scale_gradient") for s in (0, 1)]

    first = subprocess.run(
        _cli(*args), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180
    )
    # none/0 raises (recorded), none/1 completes, scale_gradient/0 SIGKILLs its own process at
    # step 3 (recorded failed with the signal), and the sweep goes on: scale_gradient/1 completes
    assert first.returncode == 1, first.stdout + first.stderr
    assert "4 jobs: 2 completed, 0 diverged, 0 timeout, 2 failed, 0 skipped" in first.stdout
    failed = store.read_summary(ablation / jobs[0])
    assert failed.status == "failed" and "injected failure at step 2" in failed.error
    assert "injected failure" in (ablation / jobs[0] / "error.txt").read_text()
    assert store.read_summary(ablation / jobs[1]).status == "completed"
    killed = store.read_summary(ablation / jobs[2])
    assert killed.status == "failed" and "killed by signal 9 (SIGKILL)" in killed.error
    assert len(store.read_metrics(ablation / jobs[2] / "metrics.jsonl")) == 2
    assert store.read_summary(ablation / jobs[3]).status == "completed"

    again = subprocess.run(
        _cli(*args), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "4 jobs: 2 completed, 0 diverged, 0 timeout, 0 failed, 2 skipped" in again.stdout
    _assert_each_job_completed_once(ablation, jobs, steps=STEPS)
    assert _table_counts(ablation) == {
        f"muzero.training_steps={STEPS}, regime=tuned, variant={v}": (2, 2)
        for v in ("none", "scale_gradient")
    }


def test_a_sweep_stopped_by_its_launcher_says_so_in_one_line(tmp_path, monkeypatch):
    """When the launcher itself fails (a Ray cluster gone, a scheduler error), the command
    reports it in one line, keeps what finished and exits 1; the same command finishes it."""
    from experiments.launch import hydra_app

    conf, res = standin.make_conf(tmp_path), tmp_path / "res"
    real_launch = hydra_app.launch

    def launch_then_die(overrides, **kwargs):
        real_launch([*overrides, "seed=0"], **kwargs)  # the first job finishes, then:
        raise RuntimeError("A worker process managed by the executor was unexpectedly terminated.")

    monkeypatch.setattr(hydra_app, "launch", launch_then_die)
    args = _sweep_args(res, conf, "variant=none", "seed=0,1")
    result = _invoke(args)
    assert result.exit_code == 1 and "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "the sweep stopped early (RuntimeError: A worker" in errors[0]
    assert "2 jobs: 1 completed" in result.stdout and "1 unfinished" in result.stdout
    monkeypatch.setattr(hydra_app, "launch", real_launch)
    again = _invoke(args)
    assert (
        again.exit_code == 0
        and "2 jobs: 1 completed, 0 diverged, 0 timeout, 0 failed, 1 skipped" in again.stdout
    )


# --------------------------------------------------------------------------------------------
# 3. SIGKILL at every write boundary of a job's life (forked copies of this process)


_OVERRIDES = ["variant=scale_gradient", "seed=3"]
_ARGS = {"overrides": _OVERRIDES, "choices": {"task": "catch", "ablation": "a"}}


@pytest.fixture(scope="module")
def _composed(tmp_path_factory):
    conf = standin.make_conf(tmp_path_factory.mktemp("conf"))
    extra = ["muzero.training_steps=5", "logger=none", "runtime.progress=false"]
    return compose_config(conf, [*_OVERRIDES, *extra], schema=standin.MuZeroConfig)


@pytest.fixture
def _request(_composed):
    """The job in ``job_dir``, as the Hydra entry hands it over."""
    return lambda job_dir: job_request(_composed, job_dir, **_ARGS)


def _child_killed_at(request, kill_at: int) -> None:
    """In the forked child: runs the job, SIGKILLing itself at its ``kill_at``-th write moment
    (after each fsync, before and after each rename, in the middle of and after each metrics
    line)."""
    moments = itertools.count(1)

    def moment() -> None:
        if next(moments) == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    real_replace, real_fsync = os.replace, os.fsync

    def replace(src, dst):
        moment()
        real_replace(src, dst)
        moment()

    def fsync(fd):
        real_fsync(fd)
        moment()

    def append(self, row):
        line = json.dumps(store._jsonable(dict(row)), separators=(",", ":")) + "\n"
        half = len(line) // 2
        self._file.write(line[:half])
        self._file.flush()
        moment()  # a kill here leaves a torn last line
        self._file.write(line[half:])
        self._file.flush()
        self.rows += 1
        moment()

    os.replace, os.fsync = replace, fsync
    store.MetricsWriter.append = append
    isolation.run_in_process(request, job=standin.JOB)  # the job's own process, here the fork


def _fork_job(request, kill_at: int) -> bool:
    """Runs the job in a forked child; True when it was killed (False: it ran to the end)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns into pytest
        code = 0
        try:
            with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
                _child_killed_at(request, kill_at)
        except BaseException:  # noqa: BLE001
            code = 3
        os._exit(code)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            pytest.fail(f"forked job (kill_at={kill_at}) hung")
        time.sleep(0.005)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    assert os.WEXITSTATUS(status) == 0, f"child failed at kill_at={kill_at}"
    return False


def test_sigkill_at_every_write_moment_then_rerun_is_exact(tmp_path, _request):
    expected = [  # loss = 1 * (1 + 3/10) * (1 + 0.5) / step, by hand
        pytest.approx(1.95 / step) for step in range(1, 6)
    ]
    reference = tmp_path / "reference" / "variant=scale_gradient__seed=3"
    assert isolation.execute(_request(reference), job=standin.JOB).status == "completed"
    seen_states = set()
    for kill_at in itertools.count(1):
        job_dir = tmp_path / f"k{kill_at}" / "variant=scale_gradient__seed=3"
        killed = _fork_job(_request(job_dir), kill_at)
        if not killed:
            assert kill_at > 20  # the job has at least 20 write moments; all were tried
            break
        # what a kill leaves: no summary, or a whole one; whole rows 1..k and at most a torn end
        summary_file = job_dir / "summary.json"
        status = json.loads(summary_file.read_text())["status"] if summary_file.exists() else None
        assert status in (None, "running", "completed")
        rows = store.read_metrics(job_dir / "metrics.jsonl")
        assert [r["step"] for r in rows] == list(range(1, len(rows) + 1))
        seen_states.add((status, len(rows)))
        # the same job again: completed exactly once, identical to the never-killed run
        again = isolation.execute(_request(job_dir), job=standin.JOB)
        assert again.status == ("skipped" if status == "completed" else "completed")
        summary = store.read_summary(job_dir)
        assert summary.status == "completed" and summary.steps == 5
        rows = store.read_metrics(job_dir / "metrics.jsonl")
        assert [r["loss/total"] for r in rows] == expected
        assert (job_dir / "metrics.jsonl").read_text().count("\n") == 5
        assert not list(job_dir.glob(".*.tmp"))
    # the kills landed before the summary, while running (0..5 rows) and after completion
    assert {(None, 0), ("running", 0), ("running", 3), ("completed", 5)} <= seen_states


def test_a_job_running_in_another_process_is_not_run_twice(tmp_path, _request, capsys):
    job_dir = tmp_path / "variant=scale_gradient__seed=3"
    job_dir.mkdir()
    fd = os.open(job_dir / ".lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as a live job holding its folder
    try:
        result = isolation.execute(_request(job_dir), job=standin.JOB)
    finally:
        os.close(fd)
    assert result == isolation.Skipped(job_dir.name, "running elsewhere")
    assert "running in another process" in capsys.readouterr().out
    assert not (job_dir / "summary.json").exists()
    assert isolation.execute(_request(job_dir), job=standin.JOB).status == "completed"  # freed


# --------------------------------------------------------------------------------------------
# 4. W&B trouble: online with no key or no server warns once and continues; results intact


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on exit: connecting is refused


@pytest.mark.parametrize("trouble", ["no_server", "no_key"])
def test_wandb_online_trouble_warns_once_and_keeps_local_results(tmp_path, monkeypatch, trouble):
    for var in [v for v in os.environ if v.startswith("WANDB_")]:
        monkeypatch.delenv(var)
    if trouble == "no_server":
        monkeypatch.setenv("WANDB_API_KEY", "0" * 40)  # a dummy key
        monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{_closed_port()}")
    else:
        monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    conf, res = standin.make_conf(tmp_path), tmp_path / "res"
    args = ["run", "seed=2", "logger=wandb_online", f"runtime.results_dir={res}"]
    start = time.monotonic()
    result = _invoke([*args, "--config-dir", str(conf)])
    took = time.monotonic() - start
    assert result.exit_code == 0, result.output
    job = res / "runs" / "seed=2"
    summary = store.read_summary(job)
    warnings = summary.warnings  # the job's process printed it (live) and kept it here
    assert len(warnings) == 1, warnings
    assert ("cannot reach" if trouble == "no_server" else "no W&B API key") in warnings[0]
    assert "logging offline" in warnings[0] and "Traceback" not in result.output
    assert took < 20  # no wait for wandb.init's online timeout
    assert summary.status == "completed" and summary.steps == 5
    rows = store.read_metrics(job / "metrics.jsonl")
    assert [r["loss/total"] for r in rows] == [pytest.approx(1.2 / s) for s in range(1, 6)]
    assert len(list(job.glob("wandb/offline-run-*/run-*.wandb"))) == 1


# --------------------------------------------------------------------------------------------
# 5. Budgets: wall time and steps stop cleanly with status timeout, partial metrics kept


@pytest.mark.parametrize(
    ("budget", "job_name"),
    [
        ("budget.max_steps=4", "budget.max_steps=4__muzero.training_steps=40"),
        ("budget.max_wall_s=0.5", "budget.max_wall_s=0.5__muzero.training_steps=40"),
    ],
)
def test_budget_stops_with_timeout_and_keeps_partial_metrics(tmp_path, monkeypatch, budget,
                                                             job_name):  # fmt: skip
    conf, res = standin.make_conf(tmp_path), tmp_path / "res"
    (conf / "muzero" / "default.yaml").write_text(
        standin.STANDIN_MUZERO_YAML.replace("sleep_s: 0.0", "sleep_s: 0.05")
    )
    args = ["run", "muzero.training_steps=40", budget, "logger=none", f"runtime.results_dir={res}"]
    result = _invoke([*args, "--config-dir", str(conf)])
    assert result.exit_code == 0, result.output
    job = res / "runs" / job_name
    assert f"timeout: {job}" in result.output
    summary = store.read_summary(job)
    rows = store.read_metrics(job / "metrics.jsonl")
    assert summary.status == "timeout" and summary.steps == len(rows)
    assert [r["step"] for r in rows] == list(range(1, len(rows) + 1))
    if "max_steps" in budget:
        assert len(rows) == 4
    else:  # 0.05 s per step: about 10 steps in 0.5 s, far fewer than 40
        assert 2 <= len(rows) <= 20 and summary.wall_time_s >= 0.5
    assert summary.stability["steps"] == len(rows)  # figures from the partial metrics
    n = len(rows)  # final_loss: mean loss of the last ceil(10%) rows; loss = 1 / step here
    tail = range(n - max(1, math.ceil(0.1 * n)) + 1, n + 1)
    assert summary.stability["final_loss"] == pytest.approx(sum(1 / s for s in tail) / len(tail))
    again = _invoke([*args, "--config-dir", str(conf)])
    assert again.exit_code == 0 and "already timeout" in again.output  # a result: kept


# --------------------------------------------------------------------------------------------
# 6. A full disk mid-run: one failed job whose error names the file, the files around it whole


def _file_size_limit(limit: int):
    """For ``preexec_fn``: writes past ``limit`` bytes fail (``EFBIG``) instead of killing the
    process (SIGXFSZ ignored, which its children inherit), as writes to a full disk fail."""

    def apply() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    return apply


def test_a_full_disk_mid_run_is_a_failed_job_naming_the_file(tmp_path):
    conf, res = standin.make_conf(tmp_path), tmp_path / "res"
    args = ["run", "seed=4", "muzero.training_steps=60", "logger=none"]
    args += [f"runtime.results_dir={res}", "--config-dir", str(conf)]
    result = subprocess.run(
        _cli(*args),
        env=_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_file_size_limit(4000),  # metrics.jsonl (~150 bytes a row) outgrows it
    )
    job = res / "runs" / "muzero.training_steps=60__seed=4"
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output, output
    assert f"failed: {job}" in result.stdout
    summary = json.loads((job / "summary.json").read_text())  # whole: written atomically
    assert summary["status"] == "failed"
    assert summary["error"] == f"OSError: [Errno 27] File too large: '{job / 'metrics.jsonl'}'"
    rows = store.read_metrics(job / "metrics.jsonl")  # whole rows, at most a torn last line
    assert 10 <= len(rows) < 60 and [r["step"] for r in rows] == list(range(1, len(rows) + 1))
    assert summary["steps"] == len(rows)  # the row that could not be written is not counted
    again = subprocess.run(  # room again: the same command runs the job to its end
        _cli(*args), env=_env(), cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(store.read_metrics(job / "metrics.jsonl")) == 60
