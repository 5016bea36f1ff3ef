"""A seed-axis group's row loop (experiments.jobs.group_runner.run_group), with a stand-in group
of the stand-in job's runs in lockstep: each member is a job of its own (folder, summary, rows);
one that diverges ends alone; the budget, a stop and an exception end every running member with
the status a job of its own would get."""

from __future__ import annotations

import dataclasses
import json

import _standin_job as standin

from experiments.config import (
    BudgetConfig,
    DivergenceConfig,
    LoggerConfig,
    RunConfig,
    variant_schema,
)
from experiments.jobs import store
from experiments.jobs.group_runner import run_group
from experiments.jobs.job import JobRequest
from experiments.tasks import TaskConfig


class _Group:
    """The stand-in's runs of ``seeds`` in lockstep; ``nan_at`` hits the first seed only."""

    def __init__(self, config, task, variant, placement, *, seeds):
        self.dropped = []
        first = dataclasses.replace(config, nan_at=config.nan_at)
        rest = dataclasses.replace(config, nan_at=0)
        self._runs = [
            standin.train(first if i == 0 else rest, task, variant, placement, seed=seed)
            for i, seed in enumerate(seeds)
        ]

    def drop(self, index):
        self.dropped.append(index)

    def __iter__(self):
        for rows in zip(*self._runs, strict=True):
            yield [None if i in self.dropped else row for i, row in enumerate(rows)]


def _requests(tmp_path, seeds, budget=None, **muzero):
    out = []
    for seed in seeds:
        cfg = RunConfig(
            seed=seed,
            task=TaskConfig(),
            muzero=standin.MuZeroConfig(**muzero),
            variant=variant_schema("none")(),
            budget=budget or BudgetConfig(),
            divergence=DivergenceConfig(factor=100.0, reference_steps=2),
            logger=LoggerConfig(mode="none"),
        )
        name = f"variant=none__seed={seed}"
        out.append(
            JobRequest(tmp_path / name, ("variant=none", f"seed={seed}"), {"task": "catch"}, cfg)
        )
    return out


def _steps(request):
    return len((request.job_dir / "metrics.jsonl").read_text().splitlines())


def test_a_diverged_member_ends_alone_and_the_others_run_on(tmp_path):
    requests = _requests(tmp_path, [3, 4], training_steps=6, nan_at=2)
    groups = []

    def make(*args, **kwargs):
        groups.append(_Group(*args, **kwargs))
        return groups[-1]

    first, second = run_group(requests, train_group=make)
    assert (first.status, first.steps, first.diverged_step) == ("diverged", 2, 2)
    assert (second.status, second.steps) == ("completed", 6)
    assert groups[0].dropped == [0]
    assert [_steps(r) for r in requests] == [2, 6]
    for request, summary in zip(requests, (first, second), strict=True):
        assert store.read_summary(request.job_dir) == summary
        assert (request.job_dir / "curves.csv.gz").exists()


def test_the_step_budget_ends_every_member_as_a_job_of_its_own(tmp_path):
    cut = run_group(
        _requests(tmp_path / "cut", [1, 2], BudgetConfig(max_steps=3), training_steps=5),
        train_group=_Group,
    )
    assert [(s.status, s.steps) for s in cut] == [("timeout", 3), ("timeout", 3)]
    whole = run_group(
        _requests(tmp_path / "whole", [1, 2], BudgetConfig(max_steps=3), training_steps=3),
        train_group=_Group,
    )
    assert [(s.status, s.steps) for s in whole] == [("completed", 3), ("completed", 3)]


def test_a_stop_interrupts_and_an_exception_fails_every_running_member(tmp_path):
    calls = iter(range(100))
    stopped = run_group(
        _requests(tmp_path / "stop", [1, 2], training_steps=9),
        train_group=_Group,
        stop=lambda: next(calls) >= 4,
    )
    assert [(s.status, s.steps) for s in stopped] == [("interrupted", 4), ("interrupted", 4)]
    requests = _requests(tmp_path / "fail", [1, 2], training_steps=9, fail_at=3)
    failed = run_group(requests, train_group=_Group)
    assert [(s.status, s.steps) for s in failed] == [("failed", 2), ("failed", 2)]
    for request in requests:
        assert "stand-in failure at step 3" in (request.job_dir / "error.txt").read_text()
        assert json.loads((request.job_dir / "summary.json").read_text())["status"] == "failed"


class _Recorder:
    """A progress display that keeps what it was shown."""

    def __init__(self):
        self.steps, self.closed = [], 0

    def update(self, row):
        self.steps.append(row["step"])

    def close(self):
        self.closed += 1


def test_a_group_of_one_shows_its_rows_as_a_single_run_does(tmp_path):
    shown = _Recorder()
    (alone,) = run_group(
        _requests(tmp_path / "alone", [5], training_steps=4), train_group=_Group, progress=shown
    )
    assert (alone.status, alone.steps) == ("completed", 4)
    assert shown.steps == [1, 2, 3, 4] and shown.closed == 1
    # a member that diverges: shown up to its diverging row, then closed once
    shown = _Recorder()
    (diverged,) = run_group(
        _requests(tmp_path / "nan", [5], training_steps=6, nan_at=3),
        train_group=_Group, progress=shown,
    )  # fmt: skip
    assert (diverged.status, diverged.steps) == ("diverged", 3)
    assert shown.steps == [1, 2, 3] and shown.closed == 1
    # an exception in the group's start: closed all the same, the member failed
    shown = _Recorder()

    def broken(*args, **kwargs):
        raise RuntimeError("no group")

    (failed,) = run_group(
        _requests(tmp_path / "broken", [5], training_steps=2), train_group=broken, progress=shown
    )
    assert failed.status == "failed" and shown.steps == [] and shown.closed == 1
