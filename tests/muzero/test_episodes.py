"""RunningEpisodes and ReplayBuffer.add_episodes: what per-environment lists and one
add_episode per episode gave, bit for bit, in arrays."""

import numpy as np
import pytest

from experiments.muzero.episodes import RunningEpisodes
from experiments.muzero.replay import ReplayBuffer


def _moves(seed, *, num_envs, moves, obs_shape=(2, 3), end_rate=0.15):
    rng = np.random.default_rng(seed)
    for _ in range(moves):
        yield (
            rng.random((num_envs, *obs_shape)).astype(np.float32),
            rng.integers(0, 4, num_envs),  # int64, as the search returns them
            rng.normal(size=num_envs),  # float64 rewards with long fractions
            rng.random(num_envs).astype(np.float32),
            rng.random((num_envs, 4)).astype(np.float32),
            rng.random(num_envs) < end_rate,
        )


def _reference(moves, num_envs):
    """The per-environment lists selfplay.py kept before, one episode at a time."""
    running = [[[] for _ in range(5)] for _ in range(num_envs)]
    for move in moves:
        *fields, dones = move
        ended = []
        for i in range(num_envs):
            for store, value in zip(running[i], fields, strict=True):
                store.append(value[i])
            if dones[i]:
                obs, actions, rewards, values, policies = running[i]
                ended.append((np.stack(obs), np.asarray(actions), np.asarray(rewards),
                              np.asarray(values), np.stack(policies),
                              float(np.sum(rewards))))  # fmt: skip
                running[i] = [[] for _ in range(5)]
        yield ended


def test_running_episodes_give_back_what_per_environment_lists_gave():
    num_envs, moves = 7, 120  # episodes up to ~40 steps: the buffers grow past 16 twice
    recorder = RunningEpisodes(num_envs)
    seen = longest = 0
    for move, expected in zip(
        _moves(1, num_envs=num_envs, moves=moves, end_rate=0.06),
        _reference(_moves(1, num_envs=num_envs, moves=moves, end_rate=0.06), num_envs),
        strict=True,
    ):
        got = recorder.record(*move)
        assert got.lengths.tolist() == [len(e[1]) for e in expected]
        assert got.returns == [e[5] for e in expected]
        starts = np.concatenate([[0], np.cumsum(got.lengths)])
        for k, episode in enumerate(expected):
            part = slice(starts[k], starts[k + 1])
            for array, want in zip(
                (got.observations, got.actions, got.rewards, got.values, got.policies),
                episode[:5],
                strict=True,
            ):
                assert array.dtype == want.dtype
                np.testing.assert_array_equal(array[part], want)
        seen += len(expected)
        longest = max([longest, *got.lengths.tolist()])
    assert seen > 10 and longest > 32  # episodes ended, and some outgrew two doublings


@pytest.mark.parametrize("capacity", [1000, 37, 12])
def test_add_episodes_stores_what_one_add_episode_per_episode_stores(capacity):
    rng = np.random.default_rng(capacity)
    one, many = (
        ReplayBuffer(capacity=capacity, observation_size=6, num_actions=4) for _ in range(2)
    )
    for _ in range(15):  # wraps the ring (and, at capacity 12, more than a ring in one call)
        lengths = rng.integers(1, 10, size=int(rng.integers(0, 4)))
        total = int(lengths.sum())
        arrays = (
            rng.random((total, 2, 3)).astype(np.float32),
            rng.integers(0, 4, total),
            rng.normal(size=total),
            rng.random(total).astype(np.float32),
            rng.random((total, 4)).astype(np.float32),
        )
        many.add_episodes(lengths, *arrays)
        start = 0
        for length in lengths:
            one.add_episode(*(a[start : start + length] for a in arrays))
            start += length
        for name in ("_obs", "_action", "_reward", "_value", "_policy", "_end", "_written"):
            np.testing.assert_array_equal(getattr(many, name), getattr(one, name))


def test_add_episodes_refuses_an_episode_longer_than_the_replay():
    replay = ReplayBuffer(capacity=5, observation_size=1, num_actions=2)
    with pytest.raises(ValueError, match="episode of 6 steps exceeds the capacity 5"):
        replay.add_episodes(np.array([2, 6]), np.zeros((8, 1)), np.zeros(8, int), np.zeros(8),
                            np.zeros(8), np.zeros((8, 2)))  # fmt: skip
    assert len(replay) == 0
