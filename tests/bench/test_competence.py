"""benchmarks/competence.py: the baseline's MinAtar returns against random play and published
agents, read from committed run folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import benchmark_script

from experiments.tasks.published import PUBLISHED
from experiments.tasks.registry import task_facts

ROOT = Path(__file__).resolve().parents[2]
CANDIDATE = ROOT / "results" / "findings" / "minatar_preset" / "candidate" / "learning"


@pytest.fixture(scope="module")
def competence():
    with benchmark_script("competence") as module:
        yield module


def test_committed_breakout_runs_by_hand(competence):
    runs = competence.baseline_runs([CANDIDATE])
    assert len(runs) == 1
    (breakout,) = runs
    assert breakout.game == "breakout"
    assert breakout.setting == "K=5, minmax, lr 0.001"
    # 10000 updates, 32 games moving every 2 updates: 10000 / 2 * 32
    assert breakout.frames == 160_000
    # the two summaries' final returns (seeds 0 and 1), and their mean by hand
    assert breakout.final_returns == (7.6875, 7.15625)
    assert breakout.mean == pytest.approx((7.6875 + 7.15625) / 2)


def test_table_prints_frames_random_and_published(competence):
    text = competence.table(competence.baseline_runs([CANDIDATE]))
    row = text.splitlines()[2]
    assert row.startswith("| breakout | 160,000 | K=5, minmax, lr 0.001 | 2 | 7.69, 7.16 | 7.42 |")
    assert f"| {task_facts('breakout').random_return:.2f} |" in row
    assert "~10 at 5M" in row and "~9.1 at 1M" in row  # DQN, with its frames
    assert "~17.2 at 5M" in row  # AC(0.8)


def test_published_values_carry_frames():
    for game, values in PUBLISHED.items():
        task_facts(game)  # a registered MinAtar game
        assert {p.algorithm for p in values} == {"DQN", "AC(0.8)"}
        assert all(p.frames in (1_000_000, 5_000_000) and p.value > 0 for p in values)


def _job(root, name, *, status, final_return, variant="none", steps=10, unroll=5):
    job = root / name
    job.mkdir(parents=True)
    stability = {"final_return": final_return} if final_return is not None else {}
    (job / "summary.json").write_text(json.dumps({"status": status, "stability": stability}))
    (job / "config.yaml").write_text(
        "task: {name: minatar, id: breakout}\n"
        f"variant: {{name: {variant}}}\n"
        f"muzero: {{training_steps: {steps}, selfplay_interval: 3, num_envs: 4, "
        f"unroll_steps: {unroll}, learning_rate: 0.001, network: {{normalisation: minmax}}}}\n"
    )


def test_diverged_runs_count_as_random_and_settings_are_rows(competence, tmp_path):
    _job(tmp_path, "a", status="completed", final_return=5.0)
    _job(tmp_path, "b", status="diverged", final_return=None)
    _job(tmp_path, "c", status="completed", final_return=9.0, variant="scale_gradient")
    _job(tmp_path, "d", status="failed", final_return=None)
    _job(tmp_path, "e", status="completed", final_return=1.0, unroll=10)
    runs = competence.baseline_runs([tmp_path])
    assert [r.setting for r in runs] == ["K=10, minmax, lr 0.001", "K=5, minmax, lr 0.001"]
    # moves at updates 1, 4, 7, 10 of 10 (every 3): 4 moves x 4 games = 16 frames
    assert all(r.frames == 16 for r in runs)
    random = task_facts("breakout").random_return
    # a (5.0) and b (diverged: the random policy's return); c is not none, d did not finish
    assert runs[1].final_returns == (5.0, random)
    assert runs[0].final_returns == (1.0,)


def test_no_runs_is_one_line(competence, tmp_path):
    with pytest.raises(SystemExit, match="no finished variant=none MinAtar runs"):
        competence.main([str(tmp_path)])
