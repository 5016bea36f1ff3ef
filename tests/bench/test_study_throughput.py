"""benchmarks/study_throughput.py: argument checks, the busy-machine refusal, the phase split and
ratio arithmetic on hand-built records, and one tiny end-to-end run of the real harness."""

from __future__ import annotations

import json
import math
import subprocess

import pytest
from conftest import benchmark_script


@pytest.fixture(scope="module")
def st():
    with benchmark_script("study_throughput") as module:
        yield module


def _row(st, elapsed, env_steps, evaluated=False):
    return st.Row(elapsed_s=elapsed, env_steps=env_steps, evaluated=evaluated)


# ---------------------------------------------------------------------------------------------
# Arithmetic on hand-built records


def _rows(st):
    # intervals: plain 0.5, self-play 1.0, plain 0.5, plain 0.7, evaluation (and a move) 2.0
    return (
        _row(st, 10.0, 100),
        _row(st, 10.5, 100),
        _row(st, 11.5, 200),
        _row(st, 12.0, 200),
        _row(st, 12.7, 200),
        _row(st, 14.7, 300, evaluated=True),
    )


def test_split_rows_by_hand(st):
    train, selfplay, evaluation = st.split_rows(_rows(st))
    # median plain interval 0.5: self-play 1.0 - 0.5, evaluation 2.0 - 0.5,
    # train 0.5 + 0.5 + 0.7 + 2 x 0.5
    assert selfplay == pytest.approx(0.5)
    assert evaluation == pytest.approx(1.5)
    assert train == pytest.approx(2.7)
    assert train + selfplay + evaluation == pytest.approx(14.7 - 10.0)


def test_split_rows_needs_a_plain_interval(st):
    assert st.split_rows(()) is None
    assert st.split_rows((_row(st, 1.0, 10),)) is None
    assert st.split_rows((_row(st, 1.0, 10), _row(st, 2.0, 20))) is None  # only a self-play gap


def test_job_phases_by_hand(st):
    job = st.JobRecord(
        name="a", status="completed", pid=7, started=1000.0, ended=1020.0, wall_time_s=19.0,
        rows=_rows(st), warnings=("W&B: x",),
    )  # fmt: skip
    phases = st.job_phases(job, sweep_start=990.0)
    assert (phases.started_s, phases.ended_s) == (10.0, 30.0)
    assert phases.setup_s == pytest.approx(1.0)  # (1020 - 1000) - 19
    assert phases.first_step_s == 10.0
    assert phases.steps_s == pytest.approx(4.7)
    assert phases.tail_s == pytest.approx(19.0 - 14.7)
    assert (phases.train_s, phases.selfplay_s, phases.eval_s) == pytest.approx((2.7, 0.5, 1.5))
    assert (phases.steps, phases.pid, phases.warnings) == (6, 7, ("W&B: x",))


def test_job_phases_of_a_job_without_rows_or_end(st):
    job = st.JobRecord("b", "running", None, 1000.0, None, None, ())
    phases = st.job_phases(job, sweep_start=999.0)
    assert phases.started_s == 1.0
    assert phases.ended_s is phases.setup_s is phases.first_step_s is phases.tail_s is None


def _phases(st, name, pid, started, ended, **times):
    fields = dict.fromkeys(
        ("setup_s", "first_step_s", "steps_s", "train_s", "selfplay_s", "eval_s", "tail_s"), 1.0
    )
    fields.update(times)
    return st.JobPhases(name, "completed", pid, 10, started, ended, **fields)


def test_startup_share_by_hand(st):
    # this AMD's warm Catch sweep (docs/performance.md): 13.4 of 3.7 + 13.4 + 201.5 + 0.1
    jobs = {"setup_s": 3.7, "first_step_s": 13.4, "steps_s": 201.5, "train_s": 166.6,
            "selfplay_s": 24.8, "eval_s": 10.1, "tail_s": 0.1}  # fmt: skip
    assert st.startup_share(jobs) == pytest.approx(13.4 / 218.7)
    assert st.startup_share({}) is None
    run = st.SweepRun("catch", "current", 1, [], 20, {"completed": 20}, 120.0, 600.0,
                      st.SweepPhases(120.0, 2.3, 7.5, 3.6, 0.6, jobs), [])  # fmt: skip
    assert "(first steps 6.1% of the job-seconds)" in st.describe(run)


def test_sweep_phases_by_hand(st):
    jobs = [
        _phases(st, "a", 1, 5.0, 20.0, setup_s=0.5),
        _phases(st, "b", 2, 6.0, 35.0, train_s=None),
        _phases(st, "c", 1, 21.5, 40.0, first_step_s=3.0),
    ]
    sweep = st.sweep_phases(jobs, wall_s=42.0, planned_s=2.0)
    assert sweep.startup_s == 5.0
    assert sweep.between_s == pytest.approx(1.5)  # pid 1: 21.5 - 20.0; pid 2 ran one job
    assert sweep.teardown_s == pytest.approx(2.0)  # 42 - 40
    assert sweep.planning_s == 2.0
    assert sweep.jobs["setup_s"] == pytest.approx(2.5)
    assert sweep.jobs["first_step_s"] == pytest.approx(5.0)
    assert sweep.jobs["train_s"] == pytest.approx(2.0)  # None counts as nothing known


def test_runs_per_hour_and_compare_by_hand(st):
    assert st.runs_per_hour(20, 600.0) == 120.0
    c = st.compare([100.0, 120.0, 80.0], [210.0, 180.0, 200.0])
    assert c.ratios == pytest.approx([2.1, 1.5, 2.5])
    assert (c.baseline_median, c.current_median) == (100.0, 200.0)
    assert c.ratio_of_medians == 2.0
    assert c.ratio_range == pytest.approx((1.5, 2.5))
    with pytest.raises(ValueError):
        st.compare([1.0], [1.0, 2.0])


def test_read_job_from_its_files(st, tmp_path):
    summary = {
        "status": "completed", "pid": 42, "wall_time_s": 10.0, "warnings": [],
        "started_at": "2026-11-27T03:52:00.250000Z", "ended_at": "2026-11-27T03:52:10.750000Z",
    }  # fmt: skip
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    lines = [  # metrics.jsonl writes a NaN return as the bare token NaN
        '{"step": 1.0, "env/steps": 448.0, "time/elapsed_s": 4.0}',
        '{"step": 2.0, "env/steps": 448.0, "time/elapsed_s": 4.25, "eval/return": NaN}',
    ]
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    job = st.read_job(tmp_path)
    assert job.ended - job.started == pytest.approx(10.5)
    assert (job.status, job.pid, job.wall_time_s) == ("completed", 42, 10.0)
    assert job.rows == (st.Row(4.0, 448.0, False), st.Row(4.25, 448.0, True))
    assert st.job_phases(job, job.started).setup_s == pytest.approx(0.5)


# ---------------------------------------------------------------------------------------------
# Arguments and the busy machine


@pytest.mark.parametrize(
    ("argv", "word"),
    [
        (["--rounds", "0"], "--rounds 0"),
        (["--jobs", "two"], "--jobs 'two'"),
        (["--jobs", "0"], "--jobs '0'"),
        (["--override", "noequals"], "not KEY=VALUE"),
        (["--override", "runtime.results_dir=/x"], "the harness sets runtime.results_dir"),
        (["--override", "hydra/launcher=joblib"], "the harness sets hydra/launcher"),
        (["--override", "ablation=clip"], "the harness sets ablation"),
        (["--current-override", "noequals"], "--current-override 'noequals' is not KEY=VALUE"),
        (["--current-override", "runtime.xla_cache=/x"], "the harness sets runtime.xla_cache"),
        (["--sweep", "pong"], "invalid choice: 'pong'"),
        (["--no-such-flag"], "unrecognized arguments"),
    ],
)
def test_bad_arguments_one_line_exit_2(st, capsys, argv, word):
    assert st.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and word in err
    assert err.count("\n") == 1


def test_a_bad_baseline_ref_is_refused(st, capsys):
    assert st.main(["--force", "--baseline-ref", "no-such-ref-0123"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: git rev-parse") and err.count("\n") == 1


def test_busy_reasons_by_hand(st):
    commands = [
        (1, "python -m pytest -q tests/test_x.py"),
        (2, "bash"),
        (3, "python -c from cli.main import app; app() sweep --jobs 2 ablation=x"),
    ]
    assert st.busy_reasons(0.2, commands, own={1}, max_load=0.5) == [
        "process 3 (python -c from cli.main import app; app() sweep --jobs 2 ablation=x)"
    ]
    reasons = st.busy_reasons(0.8, [(2, "bash")], own=set(), max_load=0.5)
    assert reasons == ["1-minute load 0.80 > 0.5"]


class _FakeProcess:
    def __init__(self, pid, cmdline):
        self.info = {"pid": pid, "cmdline": cmdline}


def test_refuses_a_busy_machine(st, capsys, monkeypatch):
    import psutil

    monkeypatch.setattr(psutil, "getloadavg", lambda: (3.0, 2.0, 1.0))
    monkeypatch.setattr(psutil, "process_iter", lambda attrs: iter(()))
    assert st.main(["--rounds", "1"]) == 2
    err = capsys.readouterr().err
    assert err == "error: machine busy (1-minute load 3.00 > 0.5); --force to time anyway\n"


def test_refuses_beside_a_study(st, capsys, monkeypatch, tmp_path):
    import psutil

    study = ["python", "-c", "from cli.main import app; app()", "study", "run", "x"]
    monkeypatch.setattr(psutil, "getloadavg", lambda: (0.0, 0.0, 0.0))
    monkeypatch.setattr(psutil, "process_iter", lambda attrs: iter([_FakeProcess(999999, study)]))
    out = tmp_path / "never.json"
    assert st.main(["--rounds", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: machine busy (process 999999 (python -c from cli.main")
    assert err.count("\n") == 1 and not out.exists()


# ---------------------------------------------------------------------------------------------
# The real harness, end to end, tiny: one Catch run of 20 steps per arm. This tree alone (about
# 30 s of CPU), and with HEAD as the baseline in a git worktree (twice that: marked slow).


@pytest.mark.parametrize(
    "baseline", [False, pytest.param(True, marks=pytest.mark.slow, id="baseline-HEAD")]
)
def test_end_to_end_tiny(st, tmp_path, capsys, baseline):
    out = tmp_path / "throughput.json"
    argv = [
        "--rounds", "1", "--sweep", "catch", "--jobs", "1", "--force",
        "--override", "variant=none", "--override", "seed=0",
        "--override", "muzero.training_steps=20", "--out", str(out),
        "--current-override", "muzero.jit_compile=true",
    ]  # fmt: skip
    argv += ["--baseline-ref", "HEAD"] if baseline else []
    assert st.main(argv) == 0
    printed = capsys.readouterr().out
    arms = ["baseline", "current"] if baseline else ["current"]
    for arm in arms:
        assert f"round 1 catch    {arm:8s}: 1 runs (1 completed)" in printed
    record = json.loads(out.read_text())
    assert record["argv"] == argv
    assert len(record["current_commit"]) == 40  # HEAD then (others may commit meanwhile)
    assert record["baseline_commit"] == (record["current_commit"] if baseline else None)
    assert [(r["arm"], r["round"]) for r in record["runs"]] == [(a, 1) for a in arms]
    for run in record["runs"]:
        assert run["runs"] == 1 and run["statuses"] == {"completed": 1}
        assert "logger=wandb_offline" in run["overrides"]
        # this tree's arm alone gets --current-override
        assert ("muzero.jit_compile=true" in run["overrides"]) == (run["arm"] == "current")
        assert any(o.startswith("runtime.xla_cache=/") for o in run["overrides"])
        assert run["runs_per_hour"] == pytest.approx(3600.0 / run["wall_s"])
        phases = run["phases"]
        assert 0 < phases["planning_s"] < phases["startup_s"] < run["wall_s"]
        assert phases["teardown_s"] >= 0 and phases["between_s"] == 0.0
        (job,) = run["jobs"]
        assert job["steps"] == 20 and job["warnings"] == []
        assert job["started_s"] == phases["startup_s"] < job["ended_s"] < run["wall_s"]
        for key in ("setup_s", "first_step_s", "steps_s", "train_s", "tail_s"):
            assert job[key] is not None and job[key] >= 0 and math.isfinite(job[key])
        split = job["train_s"] + job["selfplay_s"] + job["eval_s"]
        assert split == pytest.approx(job["steps_s"])
    if not baseline:
        assert record["comparisons"] == {}
        return
    assert "catch: current / baseline" in printed
    (comparison,) = record["comparisons"].values()
    assert len(comparison["ratios"]) == 1
    assert comparison["ratio_of_medians"] == pytest.approx(comparison["ratios"][0])
    worktrees = subprocess.run(["git", "-C", str(st.HERE), "worktree", "list"],
                               capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "gradlab-study-throughput-" not in worktrees
