"""Tests of the replay buffer and make_target against hand-computed targets."""

import numpy as np
import pytest

from experiments.muzero.replay import ReplayBuffer

# A scripted episode of T = 4 steps, 2 actions.
OBS = np.arange(8, dtype=np.float32).reshape(4, 2)
ACTIONS = np.array([1, 0, 1, 1])
REWARDS = np.array([0.0, 1.0, 0.0, 2.0])
VALUES = np.array([10.0, 20.0, 30.0, 40.0])
POLICIES = np.array([[0.5, 0.5], [0.25, 0.75], [1.0, 0.0], [0.0, 1.0]])


def _buffer(capacity=16):
    buffer = ReplayBuffer(capacity=capacity, observation_size=2, num_actions=2)
    buffer.add_episode(OBS, ACTIONS, REWARDS, VALUES, POLICIES)
    return buffer


def _targets(buffer, positions):
    return buffer.make_target(
        np.array(positions),
        unroll_steps=2,
        td_steps=2,
        discount=0.5,
        rng=np.random.default_rng(0),
    )


def test_targets_mid_episode_by_hand():
    batch = _targets(_buffer(), [1])
    # k=0 (i=1): u1 + g u2 + g^2 v3 = 1 + 0 + 0.25 * 40 = 11
    # k=1 (i=2): u2 + g u3 + (i+n = 4 = T: no bootstrap) = 0 + 0.5 * 2 = 1
    # k=2 (i=3): u3 + (u4 past the end: 0) = 2
    np.testing.assert_allclose(batch.target_value[0], [11.0, 1.0, 2.0])
    np.testing.assert_allclose(batch.target_reward[0, 1:], [1.0, 0.0])  # u1, u2
    np.testing.assert_allclose(batch.target_policy[0], POLICIES[1:4])
    np.testing.assert_allclose(batch.policy_mask[0], [1, 1, 1])
    np.testing.assert_array_equal(batch.actions[0], [0, 1])  # a1, a2
    np.testing.assert_array_equal(batch.observations[0], OBS[1])
    assert batch.steps_left[0] == 3


def test_targets_at_the_end_are_absorbing():
    batch = _targets(_buffer(), [3, 0])
    # position 3: k=0 -> u3 = 2; k=1 (i=4=T): value 0, reward u3 = 2, no policy;
    # k=2 (i=5): value 0, reward 0, no policy.
    np.testing.assert_allclose(batch.target_value[0], [2.0, 0.0, 0.0])
    np.testing.assert_allclose(batch.target_reward[0, 1:], [2.0, 0.0])
    np.testing.assert_allclose(batch.policy_mask[0], [1, 0, 0])
    np.testing.assert_allclose(batch.target_policy[0, 1:], 0.0)
    assert batch.actions[0, 0] == ACTIONS[3]
    assert 0 <= batch.actions[0, 1] < 2  # random past the end
    assert batch.steps_left[0] == 1
    # position 0: k=0 -> u0 + g u1 + g^2 v2 = 0 + 0.5 + 7.5 = 8
    # k=1 -> u1 + g u2 + g^2 v3 = 1 + 0 + 10 = 11; k=2 -> 1 as above
    np.testing.assert_allclose(batch.target_value[1], [8.0, 11.0, 1.0])
    np.testing.assert_allclose(batch.target_reward[1, 1:], [0.0, 1.0])
    assert batch.steps_left[1] == 4


def test_episodes_do_not_leak_into_each_other_and_ring_wraps():
    buffer = ReplayBuffer(capacity=6, observation_size=2, num_actions=2)
    buffer.add_episode(OBS, ACTIONS, REWARDS, VALUES, POLICIES)  # positions 0..3
    buffer.add_episode(OBS, ACTIONS, REWARDS + 100, VALUES, POLICIES)  # 4..7, wraps to 0, 1
    assert len(buffer) == 6
    batch = _targets(buffer, [7, 3])
    # position 7 is the last step of episode 2: its reward is 102 and nothing after it.
    np.testing.assert_allclose(batch.target_value[0], [102.0, 0.0, 0.0])
    # position 3 (last of episode 1) must not see episode 2's rewards at 4, 5.
    np.testing.assert_allclose(batch.target_value[1], [2.0, 0.0, 0.0])
    np.testing.assert_allclose(batch.target_reward[1, 1:], [2.0, 0.0])


def test_sample_covers_only_stored_positions():
    buffer = ReplayBuffer(capacity=6, observation_size=2, num_actions=2)
    buffer.add_episode(OBS, ACTIONS, REWARDS, VALUES, POLICIES)
    buffer.add_episode(OBS + 100, ACTIONS, REWARDS, VALUES, POLICIES)
    batch = buffer.sample(
        500, unroll_steps=2, td_steps=2, discount=0.5, rng=np.random.default_rng(1)
    )
    # absolute positions 2..7 are kept: observations of steps 2, 3 of episode 1 and all of 2.
    seen = {tuple(row) for row in batch.observations}
    assert seen == {tuple(OBS[2]), tuple(OBS[3])} | {tuple(row) for row in OBS + 100}


def test_sample_from_empty_buffer_raises():
    buffer = ReplayBuffer(capacity=4, observation_size=2, num_actions=2)
    with pytest.raises(ValueError, match="empty"):
        buffer.sample(1, unroll_steps=1, td_steps=1, discount=1.0, rng=np.random.default_rng())
