"""Tests of the W&B mirror: offline run files, namespacing, and failures that never stop a job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _wandb_records import record_objects, wait_for_exit

from experiments.jobs import tracking


def _tracker(job_dir, mode="offline", every=1):
    return tracking.make_tracker(
        job_dir,
        mode=mode,
        every=every,
        group="hidden_scale",
        job_type="scale_gradient",
        name="variant=scale_gradient__seed=0",
        tags=("catch",),
        config={"seed": 0, "variant": {"name": "scale_gradient"}},
    )


def test_namespaced_keys():
    row = {"step": 3, "loss/total": 1.5, "nonfinite": 0.0, "eval/return": 1, "note": "x"}
    assert tracking.namespaced(row) == {
        "loss/total": 1.5,
        "train/nonfinite": 0.0,
        "eval/return": 1.0,
    }


def test_none_mode_writes_nothing(tmp_path):
    tracker = _tracker(tmp_path, mode="none")
    tracker.log({"loss/total": 1.0}, step=1)
    tracker.finish({"status": "completed"})
    assert list(tmp_path.iterdir()) == []


def test_offline_run_lands_in_the_job_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    tracker = _tracker(tmp_path)
    assert tracker.active
    for step in (1, 2):
        tracker.log({"step": step, "loss/total": 1.0 / step}, step=step)
    tracker.finish({"status": "completed", "steps": 2, "stability": {"final_loss": 0.5}})
    assert not tracker.active
    runs = list(tmp_path.glob("wandb/offline-run-*/run-*.wandb"))
    assert len(runs) == 1 and runs[0].stat().st_size > 0


def _history_steps(run_file, timeout_s=30.0):
    """The steps of the history records of a finished run's file (its ``exit`` record awaited,
    :func:`_wandb_records.wait_for_exit`)."""
    return [step for which, step in wait_for_exit(run_file, timeout_s) if which == "history"]


@pytest.mark.parametrize(
    ("every", "last", "expected"),
    [
        (1, 5, [1, 2, 3, 4, 5]),
        (10, 25, [10, 20, 25]),  # multiples of 10, and the last row
        (10, 30, [10, 20, 30]),  # the last row is a multiple: logged once
        (10, 7, [7]),  # a run shorter than `every` still has its last row
    ],
)
def test_every_nth_row_and_the_last_reach_the_run_file(
    tmp_path, monkeypatch, every, last, expected
):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    tracker = _tracker(tmp_path, every=every)
    for step in range(1, last + 1):
        tracker.log({"step": step, "loss/total": 1.0 / step}, step=step)
    tracker.finish({"status": "completed", "steps": last})
    (run_file,) = tmp_path.glob("wandb/offline-run-*/run-*.wandb")
    assert _history_steps(run_file) == expected


def test_online_without_key_warns_once_and_logs_offline(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    tracker = _tracker(tmp_path / "job", mode="online")
    tracker.log({"loss/total": 1.0}, step=1)
    tracker.finish({"status": "completed"})
    err = capsys.readouterr().err
    assert err.count("warning: W&B") == 1 and "no W&B API key" in err
    assert list((tmp_path / "job").glob("wandb/offline-run-*/run-*.wandb"))


class _Broken:
    def __init__(self):
        self.summary = self

    def log(self, *a, **k):
        raise ConnectionError("network down\nsecond line")

    def update(self, *a, **k):
        raise ConnectionError("still down")

    def finish(self, **k):
        raise ConnectionError("down at finish")


def test_wandb_failures_warn_once_and_never_raise(tmp_path, monkeypatch, capsys):
    import wandb

    monkeypatch.setattr(wandb, "init", lambda **kwargs: _Broken())
    tracker = _tracker(tmp_path)
    tracker.log({"loss/total": 1.0}, step=1)  # fails: warns, closes
    tracker.log({"loss/total": 1.0}, step=2)  # no-op now
    tracker.finish({"status": "completed"})
    err = capsys.readouterr().err
    assert err.count("warning: W&B") == 1 and "ConnectionError: network down" in err


@pytest.mark.parametrize("mode", ["offline", "online"])
def test_init_failure_continues_without_wandb(tmp_path, monkeypatch, capsys, mode):
    import wandb

    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    monkeypatch.setattr(tracking, "_unreachable", lambda: None)  # as if the server answered

    def boom(**kwargs):
        raise RuntimeError("init exploded")

    monkeypatch.setattr(wandb, "init", boom)
    tracker = _tracker(tmp_path, mode=mode)
    assert not tracker.active
    tracker.log({"loss/total": 1.0}, step=1)
    tracker.finish({"status": "completed"})
    err = capsys.readouterr().err
    assert err.count("warning: W&B") == 1 and "init exploded" in err


def _summary_items(run_file, timeout_s=30.0) -> dict:
    """The summary items (key -> decoded JSON value) of a finished run's file (waiting for its
    exit record, as _history_steps)."""
    wait_for_exit(run_file, timeout_s)
    out = {}
    for record in record_objects(run_file):
        if record.WhichOneof("record_type") == "summary":
            for item in record.summary.update:
                out[item.key or "/".join(item.nested_key)] = json.loads(item.value_json)
    return out


def test_a_finished_run_s_w_and_b_summary_carries_its_outcome(tmp_path, monkeypatch):
    # a Space Invaders run of Study 4 that reached its threshold (8.1248) at step 8500, then
    # ended below it: lost, not diverged; its summary as the job wrote it
    monkeypatch.delenv("WANDB_MODE", raising=False)
    findings = Path(__file__).resolve().parents[2] / "results" / "findings"
    job = findings / "study_faithful_space_invaders"
    source = job / "regime=tuned__task=space_invaders__variant=none__seed=4311" / "summary.json"
    if not source.is_file():
        pytest.skip("no committed runs here")
    summary = json.loads(source.read_text())
    tracker = _tracker(tmp_path)
    tracker.log({"step": 1, "loss/total": 1.0}, step=1)
    tracker.finish(summary)
    (run_file,) = tmp_path.glob("wandb/offline-run-*/run-*.wandb")
    items = _summary_items(run_file)
    assert items["outcome/class"] == "lost" and items["outcome/diverged"] == "no"
    assert items["outcome/threshold"] == pytest.approx(8.1248)
    assert items["outcome/reached_step"] == summary["stability"]["steps_to_threshold"] == 8500
    assert "2 x the random policy" in items["outcome/threshold_source"]
