"""Tests of acting: one batched network call per simulation, self-play into replay, evaluation."""

import numpy as np

from experiments.muzero.config import MuZeroConfig, NetworkConfig
from experiments.muzero.networks import Networks
from experiments.muzero.replay import ReplayBuffer
from experiments.muzero.selfplay import Inference, SelfPlay, act, evaluate
from experiments.tasks import CatchEnv

CONFIG = MuZeroConfig(network=NetworkConfig(hidden_size=8, width=16), num_simulations=5)


def _inference():
    nets = Networks(CONFIG.network, observation_size=50, num_actions=3, seed=0)
    return Inference(nets, jit_compile=False)


class _Counting:
    """Wraps an Inference and records the batch size of every recurrent call."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = []

    def initial(self, observations):
        return self.inner.initial(observations)

    def recurrent(self, hidden, action, step):
        self.calls.append(len(action))
        return self.inner.recurrent(hidden, action, step)


def test_one_batched_recurrent_call_per_simulation():
    env = CatchEnv(6, seed=0)
    counting = _Counting(_inference())
    actions, values, policies = act(
        counting,
        env.reset(),
        config=CONFIG,
        temperature=1.0,
        noise=True,
        rng=np.random.default_rng(0),
    )
    assert counting.calls == [6] * CONFIG.num_simulations
    assert actions.shape == (6,) and set(actions) <= {0, 1, 2}
    assert values.shape == (6,)
    np.testing.assert_allclose(policies.sum(axis=1), 1.0, rtol=1e-6)
    # policies are visit counts over num_simulations
    np.testing.assert_allclose(policies * CONFIG.num_simulations % 1, 0.0, atol=1e-5)


def test_selfplay_stores_whole_episodes():
    env = CatchEnv(4, seed=0)
    replay = ReplayBuffer(capacity=100, observation_size=50, num_actions=3)
    actor = SelfPlay(env, _inference(), replay, config=CONFIG, rng=np.random.default_rng(0))
    returns = []
    for _ in range(8):
        returns += actor.step(0)
    assert returns == [] and len(replay) == 0  # catch episodes last 9 steps
    returns += actor.step(0)
    assert len(returns) == 4 and set(returns) <= {-1.0, 1.0}
    assert len(replay) == 36 and actor.env_steps == 36
    batch = replay.make_target(
        np.arange(9),
        unroll_steps=2,
        td_steps=20,
        discount=1.0,
        rng=np.random.default_rng(0),
    )
    # first stored episode: undiscounted Monte Carlo value = the episode's return everywhere
    np.testing.assert_allclose(batch.target_value[:, 0], returns[0])
    np.testing.assert_array_equal(batch.steps_left, np.arange(9, 0, -1))
    # the first observation is a fresh board: ball in the top row, paddle in the middle
    board = batch.observations[0].reshape(10, 5)
    assert board[0].sum() == 1 and board[9, 2] == 1


def test_evaluate_is_deterministic_and_in_range():
    inference = _inference()
    a = evaluate(inference, CatchEnv(8, seed=3), config=CONFIG, rng=np.random.default_rng(0))
    b = evaluate(inference, CatchEnv(8, seed=3), config=CONFIG, rng=np.random.default_rng(0))
    assert a == b and -1.0 <= a <= 1.0
