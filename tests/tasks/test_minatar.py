"""Tests of the MinAtar task: the batched adapter by hand, seeding, time limits, config errors,
the YAML preset through Hydra, and a short end-to-end training run."""

import pathlib
import sys

import numpy as np
import pytest

from experiments.base.errors import ConfigError
from experiments.gradients import get_placement, make_variant
from experiments.muzero.config import MuZeroConfig, NetworkConfig
from experiments.muzero.support import SupportSizes, resolve_support_sizes
from experiments.muzero.train import train
from experiments.tasks import (
    MINATAR_GAMES,
    TASKS,
    MinAtarEnv,
    TaskConfig,
    make_env,
    minatar_adapter,
)

CONF = pathlib.Path(__file__).resolve().parents[2] / "conf"
# game -> (channels, minimal action set as indices into MinAtar's ['n','l','u','r','d','f'])
GAMES = {
    "asterix": (4, [0, 1, 2, 3, 4]),
    "breakout": (4, [0, 1, 3]),
    "freeway": (7, [0, 2, 4]),
    "seaquest": (10, [0, 1, 2, 3, 4, 5]),
    "space_invaders": (6, [0, 1, 3, 5]),
}
PADDLE, BALL, TRAIL, BRICK = range(4)  # breakout's channels


def _grid(env, obs):
    """The flat observations ``[B, O]`` (the VectorEnv convention) as ``[B, 10, 10, C]``."""
    return obs.reshape(-1, *env.observation_shape)


@pytest.mark.parametrize("game", sorted(GAMES))
def test_shapes_actions_and_binary_observations(game):
    channels, actions = GAMES[game]
    env = MinAtarEnv(game, 3, seed=0)
    assert env.observation_shape == (10, 10, channels)
    assert env.observation_size == 100 * channels
    assert env.num_actions == len(actions)
    np.testing.assert_array_equal(env._action_set, actions)
    obs = env.reset()
    assert obs.shape == (3, 100 * channels) and obs.dtype == np.float32
    obs, reward, done = env.step(np.zeros(3, int))
    assert obs.shape == (3, 100 * channels) and reward.dtype == np.float32 and done.dtype == bool
    assert set(np.unique(obs)) <= {0.0, 1.0}


def test_games_registry_and_minatar_defaults():
    assert set(MINATAR_GAMES) == set(GAMES)
    assert minatar_adapter.STICKY_ACTION_PROB == 0.1
    env = MinAtarEnv("breakout", 2, seed=0)
    assert all(e.sticky_action_prob == 0.1 for e in env._envs)
    assert env.max_episode_steps == 1000
    assert MinAtarEnv("freeway", 1, seed=0).max_episode_steps == 2501
    assert MinAtarEnv("asterix", 1, seed=0, max_episode_steps=7).max_episode_steps == 7
    assert np.isnan(TASKS["minatar"].threshold)


def test_breakout_actions_by_hand():
    env = MinAtarEnv("breakout", 3, seed=0)
    obs = _grid(env, env.reset())
    for e in env._envs:
        e.sticky_action_prob = 0.0  # no repeated actions for this hand check
    assert (obs[:, 9, 4, PADDLE] == 1).all()  # the paddle starts in column 4 of the bottom row
    np.testing.assert_array_equal(obs[:, 1:4, :, BRICK], 1.0)  # three rows of bricks
    obs, reward, done = env.step(np.array([0, 1, 2]))  # stay, left, right
    obs = _grid(env, obs)
    np.testing.assert_array_equal(np.argmax(obs[:, 9, :, PADDLE], axis=1), [4, 3, 5])
    assert not done.any() and not reward.any()


def test_breakout_no_op_episodes_end_after_six_steps_and_reset():
    # The ball starts in row 3, at column 0 moving down-right or at column 9 moving down-left.
    # With the paddle still in column 4, the first reaches row 9 at column 6 after 6 steps and is
    # lost; the second reaches column 3 while last at column 4, on the paddle, and bounces. Sticky
    # actions repeat the no-op, so they change nothing.
    env = MinAtarEnv("breakout", 16, seed=5)
    obs = _grid(env, env.reset())
    assert (obs[:, 3, :, BALL].sum(axis=1) == 1).all()
    from_left = obs[:, 3, 0, BALL] == 1
    assert from_left.any() and (~from_left).any()  # varied starts
    for step in range(1, 7):
        obs, reward, done = env.step(np.zeros(16, int))
        obs = _grid(env, obs)
        assert not reward.any()
        np.testing.assert_array_equal(done, from_left if step == 6 else np.zeros(16, bool))
    # The lost games restarted: a fresh board, paddle in column 4, ball in row 3 at the side.
    restarted = obs[from_left]
    assert (restarted[:, 9, 4, PADDLE] == 1).all()
    assert (restarted[:, 3, 0, BALL] + restarted[:, 3, 9, BALL] == 1).all()
    np.testing.assert_array_equal(restarted[:, 1:4, :, BRICK], 1.0)


def test_time_limit_ends_episodes():
    env = MinAtarEnv("freeway", 2, seed=0, max_episode_steps=5)  # freeway never ends before 2501
    env.reset()
    dones = [env.step(np.zeros(2, int))[2] for _ in range(10)]
    expected = [step in (5, 10) for step in range(1, 11)]
    np.testing.assert_array_equal([d.all() for d in dones], expected)
    np.testing.assert_array_equal([d.any() for d in dones], expected)


def _play(env, steps, seed=0):
    rng = np.random.default_rng(seed)
    frames = [_grid(env, env.reset())]
    rewards = []
    for _ in range(steps):
        obs, reward, _ = env.step(rng.integers(0, env.num_actions, size=env.num_envs))
        frames.append(_grid(env, obs))
        rewards.append(reward)
    return np.stack(frames), np.stack(rewards)


def test_seeding_same_seed_same_games_and_envs_differ():
    frames, rewards = _play(MinAtarEnv("asterix", 6, seed=11), 40)
    again, rewards_again = _play(MinAtarEnv("asterix", 6, seed=11), 40)
    np.testing.assert_array_equal(frames, again)
    np.testing.assert_array_equal(rewards, rewards_again)
    other, _ = _play(MinAtarEnv("asterix", 6, seed=12), 40)
    assert not np.array_equal(frames, other)
    # each environment has its own seed: the six games differ
    flat = frames.transpose(1, 0, 2, 3, 4).reshape(6, -1)
    assert len({row.tobytes() for row in flat}) == 6


def test_only_the_first_reset_seeds_so_evaluations_start_from_varied_states():
    env = MinAtarEnv("seaquest", 4, seed=3)
    first, _ = _play(env, 30)
    second, _ = _play(env, 30)
    assert not np.array_equal(first, second)  # the second evaluation is not a replay
    again, _ = _play(MinAtarEnv("seaquest", 4, seed=3), 30)
    np.testing.assert_array_equal(first, again)  # and a fresh env with the seed repeats the first


def test_reward_scale_through_make_env():
    plain = make_env(TaskConfig(name="minatar", id="space_invaders"), 4, seed=2)
    scaled = make_env(TaskConfig(name="minatar", id="space_invaders", reward_scale=0.5), 4, seed=2)
    assert scaled.observation_shape == (10, 10, 6)
    frames, rewards = _play(plain, 60)
    frames_s, rewards_s = _play(scaled, 60)
    np.testing.assert_array_equal(frames, frames_s)
    assert rewards.sum() > 0
    np.testing.assert_array_equal(rewards_s, 0.5 * rewards)


def test_task_config_bounds():
    breakout = TaskConfig(name="minatar", id="breakout", reward_scale=3.0)
    assert breakout.return_range is None and breakout.max_abs_reward == 3.0
    assert TaskConfig(name="minatar", id="freeway").max_abs_reward == 1.0
    for game in ("asterix", "seaquest", "space_invaders"):
        assert TaskConfig(name="minatar", id=game).max_abs_reward is None
    # 2 x the random policy's mean return (0.3802), declared 2026-11-27, times the reward scale
    assert breakout.threshold == pytest.approx(2 * 0.3802 * 3.0)


@pytest.mark.parametrize(
    ("game", "message"),
    [
        ("pong", "unknown MinAtar game 'pong'; choose one of: asterix, breakout, freeway, "
         "seaquest, space_invaders"),
        ("", "task 'minatar' needs a game: task.id=<game>, one of: asterix, breakout, freeway, "
         "seaquest, space_invaders"),
    ],
)  # fmt: skip
def test_unknown_game_is_refused(game, message):
    with pytest.raises(ConfigError) as info:
        TaskConfig(name="minatar", id=game)
    assert str(info.value) == message


def test_missing_package_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "minatar", None)  # `import minatar` now fails
    expected = (
        "task=minatar needs the 'minatar' package, which is not installed; "
        "pip install 'minatar==1.0.15' or choose another task: cartpole, catch, gym"
    )
    with pytest.raises(ConfigError) as info:
        TaskConfig(name="minatar", id="breakout")
    assert str(info.value) == expected
    with pytest.raises(ConfigError) as info:
        minatar_adapter._environment_class()
    assert str(info.value) == expected


def _composed(overrides):
    from hydra import compose, initialize_config_dir

    from experiments.config import register_schema, to_run_config

    register_schema(MuZeroConfig)
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return to_run_config(compose("config", overrides=overrides))


def test_preset_covers_every_game():
    for game in MINATAR_GAMES:
        run = _composed(["task=minatar", f"task.id={game}"])
        assert run.muzero.replay_capacity >= max(g.episode_steps for g in MINATAR_GAMES.values())
        sizes = resolve_support_sizes(run.task, run.muzero.network, discount=run.muzero.discount)
        assert sizes == SupportSizes(20, 5)


def test_hydra_composes_the_preset():
    run = _composed(["task=minatar", "task.id=freeway"])
    assert run.task == TaskConfig(name="minatar", id="freeway")
    assert run.muzero.discount == 0.99 and run.muzero.network.width == 128


def test_short_training_run_end_to_end():
    config = MuZeroConfig(
        network=NetworkConfig(
            hidden_size=8, width=16, value_support_size=None, reward_support_size=None
        ),
        training_steps=3,
        num_envs=4,
        selfplay_interval=1,
        num_simulations=3,
        unroll_steps=2,
        batch_size=8,
        eval_every=3,
        eval_episodes=2,
        discount=0.99,
        jit_compile=False,
    )
    task = TaskConfig(name="minatar", id="breakout", max_episode_steps=30, reward_scale=2.0)
    rows = list(train(config, task, make_variant("none"), get_placement("pseudocode"), seed=0))
    assert [row["step"] for row in rows] == [1.0, 2.0, 3.0]
    assert all(np.isfinite(v) for row in rows for v in row.values())
    assert "eval/return" in rows[-1] and rows[-1]["env/steps"] >= 8
