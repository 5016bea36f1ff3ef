"""``muzero.seed_axis=true`` through a real sweep: the sweep groups each configuration's seeds
(experiments.launch.groups, the planned sweeper), each seed keeps its own folder, summary and
W&B run, and a seed's rows are the same in a group as in a sweep of its own."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from cli.main import app
from experiments.base.errors import ConfigError
from experiments.launch.groups import GROUP_KEY, group_batch, member_overrides
from experiments.launch.plan import PlannedJob
from experiments.launch.settings import seed_group_size

TINY = [
    "ablation=hidden_scale",
    "regime=tuned",
    "muzero.seed_axis=true",
    "muzero.training_steps=12",
    "muzero.num_envs=4",
    "muzero.eval_episodes=3",
    "muzero.eval_every=5",
    "muzero.batch_size=16",
    "logger=wandb_offline",
]


def test_group_batch_groups_each_configurations_seeds_in_order():
    batch = [["variant=none", "seed=0"], ["variant=sg", "seed=0"], ["variant=none", "seed=1"],
             ["variant=none", "seed=2"], ["variant=sg", "seed=1"], ["variant=x"]]  # fmt: skip
    assert group_batch(batch, 2) == [
        ["variant=none", "seed=0", f"{GROUP_KEY}=[0,1]"],
        ["variant=none", "seed=2"],
        ["variant=sg", "seed=0", f"{GROUP_KEY}=[0,1]"],
        ["variant=x"],
    ]
    assert group_batch(batch, None) == batch
    assert group_batch(batch, 1) == batch
    leader = ["variant=none", "seed=0", f"{GROUP_KEY}=[0,1]"]
    assert member_overrides(leader, 1) == ["variant=none", "seed=1"]


def _planned(name, group, config="variant=none", seed=0, run=True):
    overrides = (config, f"seed={seed}")
    return PlannedJob(name, overrides, None, run, "new", "none", group)  # type: ignore[arg-type]


def _cells(configs, seeds, cap=8, done=0):
    return [
        _planned(f"{c}{s}", cap, f"variant={c}", s, run=s >= done)
        for c in configs
        for s in range(seeds)
    ]


def test_the_group_size_finishes_soonest_and_refuses_mixed_paths():
    # the benchmark's Catch sweep: 4 configurations x 5 seeds on 2 workers -> a group per cell
    assert seed_group_size(_cells("abcd", 5), 2) == 5
    # its Breakout sweep: 1 x 4 on 2 workers -> two groups of 2 (not 3 + 1, nor one of 4)
    assert seed_group_size(_cells("a", 4), 2) == 2
    # 2 x 4 on 4 workers: four groups of 2 finish before two groups of 4 (two workers idle)
    assert seed_group_size(_cells("ab", 4), 4) == 2
    # 3 x 3 on 4 workers: groups of 3 finish as soon as groups of 2 would; the larger is kept
    assert seed_group_size(_cells("abc", 3), 4) == 3
    assert seed_group_size(_cells("abcd", 5, cap=3), 2) == 3  # runtime.seed_group caps it
    assert seed_group_size(_cells("a", 10, done=8), 2) == 1  # two seeds left: one each
    assert seed_group_size([_planned("j", None)] * 3, 2) == 1
    with pytest.raises(ConfigError, match="some jobs of the sweep but not for j1"):
        seed_group_size([_planned("j0", 8), _planned("j1", None)], 2)


def _sweep(tmp_path, folder, *extra):
    result = CliRunner().invoke(
        app, ["sweep", "--jobs", "1", *TINY, f"runtime.results_dir={tmp_path / folder}", *extra]
    )
    assert result.exit_code == 0, result.output
    seeds = next(o for o in extra if o.startswith("seed=")).count(",") + 1
    said = f"each configuration's seeds trained together, at most {seeds} a group"
    assert (said in result.output) == (seeds > 1)
    return tmp_path / folder / "hidden_scale"


def _rows(job):
    lines = (job / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k != "time/elapsed_s"} for line in lines]


def test_a_sweep_on_the_seed_axis_runs_each_seed_as_its_own_job(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    group = _sweep(tmp_path, "group", "variant=scale_gradient", "seed=3,4,5")
    alone = _sweep(tmp_path, "alone", "variant=scale_gradient", "seed=4")
    jobs = sorted(p for p in group.iterdir() if p.is_dir())
    assert [p.name.rsplit("__", 1)[1] for p in jobs] == ["seed=3", "seed=4", "seed=5"]
    for job in jobs:
        summary = json.loads((job / "summary.json").read_text())
        assert summary["status"] == "completed" and summary["steps"] == 12
        config = yaml.safe_load((job / "config.yaml").read_text())
        assert config["seed"] == int(job.name[-1]) and config["muzero"]["seed_axis"] is True
        assert config["runtime"]["group_seeds"] is None
        assert len(list((job / "wandb").glob("offline-run-*"))) == 1
    (own,) = [p for p in alone.iterdir() if p.is_dir()]
    assert own.name == jobs[1].name
    assert _rows(own) == _rows(jobs[1])
    assert _rows(jobs[0]) != _rows(jobs[1])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["runtime.group_seeds=[0,1]"], "runtime.group_seeds is set by gradlab sweep"),
        (["muzero.seed_axis=true", "runtime.group_seeds=[1,0]"],
         "runtime.group_seeds is set by gradlab sweep when it groups seeds; give "
         "muzero.seed_axis=true instead"),
        (["muzero.seed_axis=true", "hydra.sweeper.seed_group=3"],
         "hydra.sweeper.seed_group is set by gradlab sweep when it groups seeds"),
        (["muzero.seed_axis=true", "budget.max_wall_s=60"],
         "budget.max_wall_s=60.0 with muzero.seed_axis=true: a group's seeds share one clock"),
        (["muzero.seed_axis=true", "muzero.network.normalisation=layernorm"],
         "muzero.network.normalisation=layernorm is not supported with muzero.seed_axis=true; "
         "valid: minmax, none, tanh"),
        (["muzero.seed_axis=true", "runtime.seed_group=0"],
         "runtime.seed_group=0 is out of range; expected an integer >= 1"),
    ],
)  # fmt: skip
def test_bad_seed_axis_settings_are_one_line_exit_2(tmp_path, extra, message):
    result = CliRunner().invoke(
        app,
        ["sweep", "ablation=hidden_scale", "variant=none", "regime=tuned", "seed=0", *extra,
         f"runtime.results_dir={tmp_path}", "--dry-run"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert message in result.output and result.output.count("\n") == 1
    assert not any(tmp_path.iterdir())
