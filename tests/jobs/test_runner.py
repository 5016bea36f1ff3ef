"""Tests of one job's run: statuses, metrics rows, budgets, divergence, the summary."""

from __future__ import annotations

import json
import os

import _standin_job as standin
import pytest

from experiments.base import process
from experiments.config import (
    BudgetConfig,
    DivergenceConfig,
    LoggerConfig,
    RunConfig,
    variant_schema,
)
from experiments.jobs import runner, store
from experiments.jobs.curves import write_curves
from experiments.tasks import TaskConfig


class _Recorder:
    """A tracker that records what the runner sends it."""

    def __init__(self):
        self.steps, self.summary = [], None

    def log(self, row, *, step):
        self.steps.append(step)

    def finish(self, summary):
        self.summary = summary


def _cfg(*, seed=0, variant="none", budget=None, divergence=None, **muzero):
    params = {"scale": 0.5} if variant == "scale_gradient" else {}
    return RunConfig(
        seed=seed,
        task=TaskConfig(),
        muzero=standin.MuZeroConfig(**muzero),
        variant=variant_schema(variant)(**params),
        budget=budget or BudgetConfig(),
        divergence=divergence or DivergenceConfig(factor=100.0, reference_steps=2),
        logger=LoggerConfig(mode="none"),
    )


def _run(tmp_path, cfg, **kwargs):
    tracker = _Recorder()
    summary = runner.run_job(
        cfg,
        tmp_path / "job",
        job="job",
        overrides={"variant": cfg.variant.name, "seed": str(cfg.seed), "runtime.threads": "1"},
        choices={"task": "catch", "regime": "tuned"},
        resolved={"seed": cfg.seed},
        train_fn=standin.train,
        ablation="test",
        tracker=tracker,
        **kwargs,
    )
    return summary, tracker


def test_completed_run_writes_rows_summary_and_config(tmp_path):
    cfg = _cfg(seed=2, variant="scale_gradient", training_steps=4)
    summary, tracker = _run(tmp_path, cfg)
    job = tmp_path / "job"
    assert summary.status == "completed" and summary.steps == 4
    rows = store.read_metrics(job / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    # loss = base * (1 + seed/10) * (1 + scale) / step, by hand: 1 * 1.2 * 1.5 / 3 = 0.6
    assert rows[2]["loss/total"] == pytest.approx(0.6)
    assert tracker.steps == [1, 2, 3, 4] and tracker.summary["status"] == "completed"
    on_disk = json.loads((job / "summary.json").read_text())
    assert on_disk["status"] == "completed" and on_disk["threshold"] == 0.9
    assert on_disk["overrides"] == {"variant": "scale_gradient", "seed": "2"}  # no bookkeeping
    assert on_disk["group"] == {"variant": "scale_gradient"}
    assert on_disk["variant_params"] == {"scale": 0.5}
    assert "tensorflow" in on_disk["versions"] and "wandb" in on_disk["versions"]
    assert on_disk["versions"]["cpu"]  # the CPU type its numbers depend on, e.g. "... (AVX2)"
    assert (job / "config.yaml").read_text() == "seed: 2\n"
    assert not (job / "error.txt").exists()


def test_exception_is_a_failed_result_with_traceback(tmp_path):
    summary, tracker = _run(tmp_path, _cfg(training_steps=5, fail_at=3))
    assert summary.status == "failed" and summary.steps == 2
    assert summary.error == "RuntimeError: stand-in failure at step 3"
    trace = (tmp_path / "job" / "error.txt").read_text()
    assert "Traceback" in trace and "stand-in failure at step 3" in trace
    assert len(store.read_metrics(tmp_path / "job" / "metrics.jsonl")) == 2
    assert tracker.summary["status"] == "failed"


def test_nan_loss_diverges_at_its_step(tmp_path):
    summary, _ = _run(tmp_path, _cfg(training_steps=8, nan_at=4))
    assert summary.status == "diverged" and summary.diverged_step == 4
    assert summary.steps == 4  # the bad row is kept, nothing after it


def test_loss_blow_up_past_factor_diverges(tmp_path):
    # reference = mean of steps 1, 2 = (1 + 0.5) / 2 = 0.75; step 5 loss = 1e6 / 5 >> 100 * 0.75
    summary, _ = _run(tmp_path, _cfg(training_steps=9, blow_up_at=5))
    assert summary.status == "diverged" and summary.diverged_step == 5


def test_runner_stop_and_summary_agree_on_divergence(tmp_path):
    # The disagreement of the old code: a loss spike after ten steps at 1.0 stopped the run as
    # diverged while its summary said diverged 0. One rule now decides both.
    summary, _ = _run(tmp_path, _cfg(training_steps=20, blow_up_at=12, base_loss=1.0))
    assert summary.status == "diverged" and summary.diverged_step == 12
    assert summary.stability["diverged"] == 1
    assert summary.stability["diverged_step"] == 12


def test_step_budget_cuts_short_with_timeout(tmp_path):
    summary, _ = _run(tmp_path, _cfg(training_steps=10, budget=BudgetConfig(max_steps=3)))
    assert summary.status == "timeout" and summary.steps == 3
    assert len(store.read_metrics(tmp_path / "job" / "metrics.jsonl")) == 3


def test_step_budget_equal_to_run_length_is_completed(tmp_path):
    summary, _ = _run(tmp_path, _cfg(training_steps=3, budget=BudgetConfig(max_steps=3)))
    assert summary.status == "completed" and summary.steps == 3


def test_wall_budget_times_out_with_partial_metrics(tmp_path):
    ticks = iter(range(100))  # a fake clock: one second per call
    cfg = _cfg(training_steps=50, budget=BudgetConfig(max_wall_s=6.5))
    summary, _ = _run(tmp_path, cfg, clock=lambda: float(next(ticks)))
    # t0 = 0; each step reads the clock twice (budget check, elapsed): checks at 1, 3, 5, 7
    assert summary.status == "timeout" and summary.steps == 3
    assert len(store.read_metrics(tmp_path / "job" / "metrics.jsonl")) == 3


def test_rerun_starts_metrics_over_and_clears_old_error(tmp_path):
    _run(tmp_path, _cfg(training_steps=5, fail_at=4))
    assert (tmp_path / "job" / "error.txt").exists()
    summary, _ = _run(tmp_path, _cfg(training_steps=2))
    assert summary.status == "completed"
    assert [r["step"] for r in store.read_metrics(tmp_path / "job" / "metrics.jsonl")] == [1, 2]
    assert not (tmp_path / "job" / "error.txt").exists()


def test_limit_threads_sets_tensorflow_env(monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)  # as in a fresh job process
    env: dict[str, str] = {}
    monkeypatch.setattr(os, "environ", env)  # the job's own environment, restored after
    process.limit_threads(None)
    assert env == {}
    process.limit_threads(3)
    assert env == {
        "TF_NUM_INTRAOP_THREADS": "3",
        "TF_NUM_INTEROP_THREADS": "3",
        "OMP_NUM_THREADS": "3",
    }


def test_seed_everything_without_tensorflow_seeds_python_and_numpy_only():
    import random
    import subprocess
    import sys
    from pathlib import Path

    import numpy as np

    code = (
        "import random, sys; import numpy as np; from experiments.base import process; "
        "process.seed_everything(7, tensorflow=False); "
        "print(repr(random.random()), repr(float(np.random.rand())), "
        "'tensorflow' in sys.modules, 'keras' in sys.modules)"
    )
    root = Path(__file__).resolve().parents[2]  # this checkout's experiments, not an install's
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    expected = [random.Random(7).random(), float(np.random.RandomState(7).rand()), False, False]
    assert out.stdout.split() == [repr(v) for v in expected]


@pytest.mark.parametrize("tensorflow", [True, False])
def test_train_gets_the_variant_bound_or_its_config_unbound(tmp_path, tensorflow):
    from experiments.gradients import PLACEMENTS, Variant

    seen = []

    def train(config, task, variant, placement, *, seed):
        seen.append((variant, placement))
        return standin.train(config, task, variant, placement, seed=seed)

    cfg = _cfg(seed=2, variant="scale_gradient", training_steps=2)
    summary = runner.run_job(
        cfg, tmp_path / "job", job="job", overrides={}, choices={}, resolved={},
        train_fn=train, ablation=None, tracker=_Recorder(), tensorflow=tensorflow,
    )  # fmt: skip
    ((variant, placement),) = seen
    assert placement is PLACEMENTS["pseudocode"] and summary.status == "completed"
    if tensorflow:
        assert isinstance(variant, Variant) and variant.hidden.fn.keywords == {"scale": 0.5}
    else:
        assert variant is cfg.variant and variant.params == {"scale": 0.5}
    rows = store.read_metrics(tmp_path / "job" / "metrics.jsonl")
    # the same rows either way: 1 * (1 + 2/10) * (1 + 0.5) / step, by hand
    assert [r["loss/total"] for r in rows] == pytest.approx([1.8, 0.9])


def test_progress_bar_on_a_terminal_does_not_break_the_job(tmp_path, monkeypatch):
    from cli._progress import RichProgress

    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    summary, _ = _run(tmp_path, _cfg(training_steps=3), progress=RichProgress("job", 3))
    assert summary.status == "completed" and summary.steps == 3


@pytest.mark.parametrize("overlap", [None, False, True])
def test_overlap_reaches_train_only_when_the_runner_says(tmp_path, overlap):
    seen = []

    def train(*args, **kwargs):
        seen.append(kwargs)
        return standin.train(*args, **{k: v for k, v in kwargs.items() if k != "overlap"})

    tracker = _Recorder()
    runner.run_job(
        _cfg(), tmp_path / "job", job="job", overrides={}, choices={}, resolved={},
        train_fn=train, ablation=None, tracker=tracker, overlap=overlap,
    )  # fmt: skip
    assert len(seen) == 1
    assert seen[0].get("overlap", "absent") == ("absent" if overlap is None else overlap)


def test_a_finished_job_writes_its_compact_curves(tmp_path):
    import pandas as pd

    cfg = _cfg(seed=2, variant="scale_gradient", training_steps=4)
    _run(tmp_path, cfg)
    curves = pd.read_csv(tmp_path / "job" / "curves.csv.gz", float_precision="round_trip")
    rows = store.read_metrics(tmp_path / "job" / "metrics.jsonl")
    # 4 steps: every step kept (the stride is 1 under 200 steps), the loss copied exactly
    assert list(curves["step"]) == [1, 2, 3, 4]
    assert list(curves["loss/total"]) == [r["loss/total"] for r in rows]
    # written from the rows the job's end had read, it is what the folder's files give
    written = (tmp_path / "job" / "curves.csv.gz").read_bytes()
    assert write_curves(tmp_path / "job").read_bytes() == written
