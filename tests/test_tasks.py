"""Tests of the tasks: Catch dynamics by hand, the gymnasium adapter, the task config."""

import numpy as np
import pytest

from experiments.errors import ConfigError
from experiments.tasks import TASKS, CatchEnv, GymEnv, TaskConfig, make_env


def _board(env, i=0):
    return env.observe()[i].reshape(env.rows, env.columns)


def test_catch_start_and_observation():
    env = CatchEnv(3, rows=10, columns=5, seed=0)
    obs = env.reset()
    assert obs.shape == (3, 50) and obs.dtype == np.float32
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
        ({"name": "pong"}, "unknown task 'pong'; choose one of: cartpole, catch, gym"),
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


def test_task_config_from_dict():
    assert TaskConfig.from_dict({"name": "catch", "rows": 6}) == TaskConfig(rows=6)
    with pytest.raises(ConfigError, match="'colour'"):
        TaskConfig.from_dict({"colour": 3})
