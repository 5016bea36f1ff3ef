"""Tests of the task registry (experiments/tasks/registry.py) over every registered task: its
facts against its environments, its preset, determinism under a seed, an unknown name refused,
and a 20-step `gradlab run` per task (MinAtar: 2 steps)."""

from __future__ import annotations

import dataclasses
import math
import pathlib

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from typer.testing import CliRunner

from cli.main import app
from experiments.base.errors import ConfigError
from experiments.config import register_schema, to_run_config
from experiments.muzero.config import MuZeroConfig
from experiments.tasks import TaskConfig, facts_for, make_env, task_facts, task_names
from experiments.tasks.registry import registered_name

CONF = pathlib.Path(__file__).resolve().parents[2] / "conf"
NAMES = task_names()


def _config(facts) -> TaskConfig:
    return TaskConfig(name=facts.kind, id=facts.task_id)


def _composed(overrides):
    register_schema(MuZeroConfig)
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return to_run_config(compose("config", overrides=overrides))


def test_the_registered_tasks():
    assert NAMES == (
        "asterix", "breakout", "cartpole", "catch", "freeway", "seaquest", "space_invaders"
    )  # fmt: skip


def test_unknown_name_is_one_line_with_the_choices():
    with pytest.raises(ConfigError) as err:
        task_facts("pong")
    assert str(err.value) == f"unknown task 'pong'; choose one of: {', '.join(NAMES)}"
    with pytest.raises(ConfigError, match="unknown task 'gym'"):
        task_facts("gym")  # any gymnasium id: not registered


def test_facts_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        task_facts("catch").threshold = 0.5


@pytest.mark.parametrize("name", NAMES)
def test_preset_selects_the_task(name):
    facts = task_facts(name)
    assert facts.name == name and facts.overrides == (f"task={name}",)
    assert (CONF / "task" / f"{name}.yaml").is_file()
    run = _composed(list(facts.overrides))
    assert (run.task.name, run.task.id) == (facts.kind, facts.task_id)
    assert registered_name(run.task) == name and facts_for(run.task) is facts


def test_minatar_game_preset_is_the_minatar_preset_with_its_id():
    assert _composed(["task=breakout"]) == _composed(["task=minatar", "task.id=breakout"])


@pytest.mark.parametrize("name", NAMES)
def test_environment_matches_its_facts(name):
    facts = task_facts(name)
    env = make_env(_config(facts), 4, seed=7)
    assert env.observation_shape == facts.observation_shape
    assert env.observation_size == math.prod(facts.observation_shape)
    assert env.num_actions == facts.num_actions
    obs = env.reset()
    assert obs.shape == (4, env.observation_size) and obs.dtype == np.float32
    low, high = facts.reward_range
    rng = np.random.default_rng(0)
    for _ in range(60):
        obs, rewards, dones = env.step(rng.integers(0, env.num_actions, 4))
        assert obs.shape == (4, env.observation_size) and obs.dtype == np.float32
        assert rewards.shape == (4,) and dones.shape == (4,) and dones.dtype == bool
        assert np.all((rewards >= low) & (rewards <= high)), rewards


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_episodes(name):
    facts = task_facts(name)

    def play(seed):
        env = make_env(_config(facts), 3, seed=seed)
        rng = np.random.default_rng(1)
        out = [env.reset()]
        for _ in range(40):
            out.extend(env.step(rng.integers(0, env.num_actions, 3)))
        return out

    first, again = play(5), play(5)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    other = play(6)
    assert any(not np.array_equal(a, b) for a, b in zip(first, other, strict=True))


@pytest.mark.parametrize("name", NAMES)
def test_random_return_is_recorded_and_inside_the_return_range(name):
    facts = task_facts(name)
    assert facts.random_episodes >= 200 and facts.random_se > 0
    if facts.return_range is not None:
        low, high = facts.return_range
        assert low <= facts.random_return <= high
        assert facts.random_se < 0.01 * (high - low)  # the measurement's precision target


def test_catch_random_return_is_minus_point_six():
    # The ball's column is uniform and independent of the paddle's, so a random paddle catches it
    # with probability 1/5 whatever its walk: E[return] = 0.2 * 1 + 0.8 * (-1) = -0.6.
    facts = task_facts("catch")
    assert abs(facts.random_return - -0.6) < 3 * facts.random_se


def test_thresholds_and_ranges_are_the_configs():
    catch, cartpole = task_facts("catch"), task_facts("cartpole")
    assert (catch.threshold, catch.return_range) == (0.9, (-1.0, 1.0))
    assert (cartpole.threshold, cartpole.return_range) == (475.0, (0.0, 500.0))
    assert TaskConfig().threshold == 0.9 and TaskConfig(reward_scale=2.0).threshold == 1.8
    breakout = TaskConfig(name="minatar", id="breakout")
    # MinAtar: 2 x the random policy's mean return (declared 2026-11-27), scaled like rewards
    assert breakout.threshold == pytest.approx(2 * 0.3802) and breakout.return_range is None
    scaled = TaskConfig(name="minatar", id="breakout", reward_scale=10.0)
    assert scaled.threshold == pytest.approx(7.604)
    assert breakout.max_abs_reward == 1.0
    assert TaskConfig(name="minatar", id="asterix").max_abs_reward is None


def test_make_env_refuses_an_unknown_kind_instead_of_trying_gymnasium():
    bad = object.__new__(TaskConfig)  # past __post_init__'s own check, as a stale object could be
    object.__setattr__(bad, "name", "pong")
    object.__setattr__(bad, "reward_scale", 1.0)
    with pytest.raises(ConfigError, match="unknown task 'pong'; choose one of: cartpole, catch"):
        make_env(bad, 1, seed=0)


def _invoke(args):
    return CliRunner().invoke(app, args)


def test_gradlab_run_refuses_an_unknown_task(tmp_path):
    result = _invoke(["run", "task=pong", f"runtime.results_dir={tmp_path}", "logger=none"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "pong" in lines[0] and "catch" in lines[0], lines
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["task=minatar", "task.id=pong"], "unknown MinAtar game 'pong'; choose one of: asterix"),
        (["task=minatar"], "task 'minatar' needs a game: task.id=<game>, one of: asterix"),
        (["task=gym", "task.id=Pong-v99"], "unknown gymnasium id 'Pong-v99'"),
    ],
)
def test_gradlab_run_refuses_a_bad_task_id(tmp_path, overrides, message):
    result = _invoke(["run", *overrides, f"runtime.results_dir={tmp_path}", "logger=none"])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1 and message in result.output
    assert not any(tmp_path.iterdir())


# Tiny MuZero for a 20-step run (MinAtar: 2 steps, its environments are the slow part).
_TINY = [
    "logger=none",
    "runtime.progress=false",
    "runtime.xla_cache=null",
    "muzero.network.hidden_size=8",
    "muzero.network.width=16",
    "muzero.num_envs=4",
    "muzero.selfplay_interval=1",
    "muzero.num_simulations=2",
    "muzero.unroll_steps=2",
    "muzero.td_steps=3",
    "muzero.batch_size=8",
    "muzero.eval_episodes=2",
    "muzero.replay_capacity=3000",
    "muzero.jit_compile=false",
]


# One MinAtar game in CI (~20 s: the games share the adapter and the conv network, and each game's
# environment is checked above); the other games' runs are marked slow.
_RUNS = [
    pytest.param(n, marks=pytest.mark.slow)
    if task_facts(n).kind == "minatar" and n != "breakout"
    else n
    for n in NAMES
]


@pytest.mark.parametrize("name", _RUNS)
def test_a_short_gradlab_run_of_every_task(tmp_path, name):
    import json

    steps = 2 if task_facts(name).kind == "minatar" else 20
    args = [
        "run",
        f"task={name}",
        f"muzero.training_steps={steps}",
        f"muzero.eval_every={steps}",
        "task.max_episode_steps=30",
        f"runtime.results_dir={tmp_path}",
        *_TINY,
    ]
    result = _invoke(args)
    assert result.exit_code == 0, result.output
    (summary,) = tmp_path.glob("runs/*/summary.json")
    data = json.loads(summary.read_text())
    assert data["status"] == "completed" and data["steps"] == steps
