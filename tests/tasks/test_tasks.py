"""Tests of the tasks: Catch dynamics by hand, the gymnasium adapter, the task config, reward
scaling (MinAtar has its own file, tests/tasks/test_minatar.py)."""

import math

import numpy as np
import pytest

from experiments.base.errors import ConfigError
from experiments.muzero.replay import ReplayBuffer
from experiments.tasks import TASKS, CatchEnv, GymEnv, ScaledRewards, TaskConfig, make_env


def _board(env, i=0):
    return env.observe()[i].reshape(env.rows, env.columns)


def test_catch_start_and_observation():
    env = CatchEnv(3, rows=10, columns=5, seed=0)
    obs = env.reset()
    assert obs.shape == (3, 50) and obs.dtype == np.float32
    assert env.observation_shape == (50,)  # flat: the MLP representation, as before
    for i in range(3):
        board = obs[i].reshape(10, 5)
        assert board.sum() == 2
        assert board[9, 2] == 1  # paddle in the middle of the bottom row
        assert board[0, env.ball_column[i]] == 1  # ball in the top row


def test_catch_hand_played_episode():
    env = CatchEnv(1, rows=4, columns=3, seed=0)
    env.reset()
    env.ball_column[:] = 0  # ball falls in column 0; paddle starts in column 1
    obs, reward, done = env.step(np.array([0]))  # left: paddle -> 0
    assert (reward, done) == (0.0, False)
    board = obs[0].reshape(4, 3)
    assert board[1, 0] == 1 and board[3, 0] == 1 and board.sum() == 2
    obs, reward, done = env.step(np.array([0]))  # left at the wall: stays at 0
    assert (reward, done) == (0.0, False)
    assert env.paddle[0] == 0
    _, reward, done = env.step(np.array([1]))  # stay; ball reaches the bottom row: caught
    assert reward[0] == 1.0 and done[0]
    assert env.ball_row[0] == 0  # reset for the next episode


def test_catch_miss_gives_minus_one_after_rows_minus_one_steps():
    env = CatchEnv(2, rows=10, columns=5, seed=1)
    env.reset()
    env.ball_column[:] = [0, 4]
    for step in range(9):
        _, reward, done = env.step(np.array([2, 2]))  # always right: paddle ends at column 4
        if step < 8:
            assert not done.any() and not reward.any()
    assert done.all()
    np.testing.assert_array_equal(reward, [-1.0, 1.0])


def test_catch_random_policy_return_about_minus_point_six():
    env = CatchEnv(2000, seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(9):
        _, reward, done = env.step(rng.integers(0, 3, size=2000))
    assert done.all()
    assert -0.7 < reward.mean() < -0.5


def test_gym_cartpole_adapter():
    env = make_env(TaskConfig(name="cartpole"), 3, seed=0)
    assert isinstance(env, GymEnv)
    assert (env.observation_size, env.num_actions) == (4, 2)
    assert env.observation_shape == (4,)
    obs = env.reset()
    assert obs.shape == (3, 4) and obs.dtype == np.float32
    total = np.zeros(3)
    finished = np.zeros(3, bool)
    for _ in range(200):
        obs, reward, done = env.step(np.zeros(3, int))  # always push left: falls quickly
        total += np.where(finished, 0, reward)
        finished |= done
    assert finished.all() and (total < 50).all()


def test_task_registry_thresholds():
    assert TASKS["catch"].threshold == 0.9
    assert TASKS["cartpole"].threshold == 475
    assert TaskConfig(name="cartpole").gym_id == "CartPole-v1"
    assert TaskConfig(name="gym", id="Acrobot-v1").gym_id == "Acrobot-v1"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"name": "pong"}, "unknown task 'pong'; choose one of: cartpole, catch, gym, minatar"),
        ({"name": "gym"}, "needs a gymnasium id"),
        ({"name": "gym", "id": "NoSuchEnv-v9"}, "unknown gymnasium id 'NoSuchEnv-v9'.*CartPole"),
        ({"name": "gym", "id": "Pendulum-v1"}, "expected Discrete"),
        ({"rows": 1}, r"task.rows=1 .*>= 2"),
        ({"columns": 0}, r"task.columns=0"),
    ],
)
def test_task_config_rejects_bad_input(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        TaskConfig(**kwargs)


@pytest.mark.parametrize("bad", [-1.0, 0, 0.0, float("inf"), float("nan"), "2", True, None])
def test_reward_scale_must_be_finite_and_positive(bad):
    with pytest.raises(ConfigError) as info:
        TaskConfig(reward_scale=bad)
    assert str(info.value) == (
        f"task.reward_scale={bad!r} is out of range; expected a finite number > 0"
    )


def test_unscaled_bounds_of_each_task():
    catch, cartpole = TaskConfig(), TaskConfig(name="cartpole")
    assert (catch.threshold, catch.return_range, catch.max_abs_reward) == (0.9, (-1.0, 1.0), 1.0)
    assert (cartpole.threshold, cartpole.return_range) == (475.0, (0.0, 500.0))
    assert cartpole.max_abs_reward == 1.0
    # CartPole's maximum return is its time limit.
    assert TaskConfig(name="cartpole", max_episode_steps=200).return_range == (0.0, 200.0)
    acrobot = TaskConfig(name="gym", id="Acrobot-v1")
    assert math.isnan(acrobot.threshold)
    assert acrobot.return_range is None and acrobot.max_abs_reward is None


def test_reward_scale_scales_threshold_range_and_largest_reward():
    catch = TaskConfig(reward_scale=2.5)
    assert catch.threshold == pytest.approx(0.9 * 2.5)  # 2.25
    assert catch.return_range == (-2.5, 2.5) and catch.max_abs_reward == 2.5
    cartpole = TaskConfig(name="cartpole", reward_scale=0.01)
    assert cartpole.threshold == pytest.approx(4.75)
    assert cartpole.return_range == (0.0, pytest.approx(5.0))
    assert cartpole.max_abs_reward == 0.01
    assert TaskConfig(name="gym", id="Acrobot-v1", reward_scale=3.0).return_range is None
    assert TaskConfig(reward_scale=4).max_abs_reward == 4.0  # an int scale is fine


def test_make_env_scales_rewards_only_when_asked():
    assert isinstance(make_env(TaskConfig(), 2, seed=0), CatchEnv)
    plain = make_env(TaskConfig(rows=4), 8, seed=3)
    scaled = make_env(TaskConfig(rows=4, reward_scale=3.0), 8, seed=3)
    assert isinstance(scaled, ScaledRewards)
    assert (scaled.observation_shape, scaled.num_actions) == ((20,), 3)
    np.testing.assert_array_equal(plain.reset(), scaled.reset())
    actions = np.random.default_rng(0).integers(0, 3, size=(3, 8))
    for row in actions:
        obs, reward, done = plain.step(row)
        obs_s, reward_s, done_s = scaled.step(row)
        np.testing.assert_array_equal(obs, obs_s)
        np.testing.assert_array_equal(done, done_s)
        assert reward_s.dtype == np.float32
        np.testing.assert_array_equal(reward_s, 3.0 * reward)  # +-3 on the last of 3 steps
    assert done.all() and set(np.abs(reward_s)) == {3.0}


def _episodes(task, *, seed, num_envs=4, moves=12):
    """Random play on ``task``; finished episodes with root values 0.5 per step."""
    env = make_env(task, num_envs, seed=seed)
    rng = np.random.default_rng(seed)
    buffer = ReplayBuffer(capacity=512, observation_size=env.observation_size, num_actions=3)
    obs = env.reset()
    current = [[] for _ in range(num_envs)]
    for _ in range(moves):
        actions = rng.integers(0, 3, size=num_envs)
        next_obs, rewards, dones = env.step(actions)
        for i in range(num_envs):
            current[i].append((obs[i], actions[i], rewards[i]))
            if dones[i]:
                o, a, r = (np.array(x) for x in zip(*current[i], strict=True))
                buffer.add_episode(o, a, r, np.full(len(a), 0.5), np.full((len(a), 3), 1 / 3))
                current[i] = []
        obs = next_obs
    return buffer


def test_reward_scale_scales_replay_targets():
    # Catch with 4 rows: episodes of 3 steps, the only reward +-s at the third.
    s = 10.0
    plain = _episodes(TaskConfig(rows=4), seed=1)
    scaled = _episodes(TaskConfig(rows=4, reward_scale=s), seed=1)
    # Root values (0.5 in both) are not rewards: with td_steps 5 >= T no target bootstraps.
    kwargs = {"unroll_steps": 2, "td_steps": 5, "discount": 0.5}
    positions = np.arange(len(plain))
    a = plain.make_target(positions, rng=np.random.default_rng(0), **kwargs)
    b = scaled.make_target(positions, rng=np.random.default_rng(0), **kwargs)
    np.testing.assert_allclose(b.target_value, s * a.target_value, rtol=1e-6)
    np.testing.assert_allclose(b.target_reward, s * a.target_reward, rtol=1e-6)
    np.testing.assert_array_equal(b.target_policy, a.target_policy)
    np.testing.assert_array_equal(b.observations, a.observations)
    # By hand, position 0 (first step of the first episode, T = 3, n = 5 >= T: no bootstrap):
    # value_k=0 = g^2 u_2 = 0.25 * (+-s); value_k=1 = g u_2; value_k=2 = u_2 = reward_k=3's.
    u2 = scaled._reward[2]
    assert abs(u2) == s
    np.testing.assert_allclose(b.target_value[0], [0.25 * u2, 0.5 * u2, u2])
    np.testing.assert_allclose(b.target_reward[0, 1:], [0.0, 0.0])


def test_gym_only_the_first_reset_seeds_so_evaluations_start_from_varied_states():
    # CartPole used to re-seed the same start states at every evaluation.
    env = GymEnv("CartPole-v1", 4, seed=7)
    first, second = env.reset(), env.reset()
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(GymEnv("CartPole-v1", 4, seed=7).reset(), first)
    assert len({row.tobytes() for row in first}) == 4  # and the environments differ
