"""Tests of acting: the compiled and the NumPy search give the same moves, self-play into replay,
evaluation, and planning with the variant's forward transform where training put it."""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf
from _search_models import randomize

from experiments.base.errors import ConfigError
from experiments.gradients import PLACEMENTS, get_placement, make_variant
from experiments.muzero.config import MuZeroConfig, NetworkConfig
from experiments.muzero.networks import Networks
from experiments.muzero.reference_search import run_search
from experiments.muzero.replay import ReplayBuffer
from experiments.muzero.selfplay import Inference, SelfPlay, act, evaluate
from experiments.tasks import CatchEnv

CONFIG = MuZeroConfig(network=NetworkConfig(hidden_size=8, width=16), num_simulations=5)


def _networks(seed: int | None = None, **network) -> Networks:
    config = dataclasses.replace(CONFIG.network, **network)
    nets = Networks(config, observation_size=50, num_actions=3, seed=0)
    if seed is not None:
        randomize(nets, seed)  # non-zero heads: priors, values and rewards differ
    return nets


def _inference(**kwargs):
    return Inference(_networks(), jit_compile=False, **kwargs)


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


def test_numpy_search_makes_one_batched_recurrent_call_per_simulation():
    env = CatchEnv(6, seed=0)
    counting = _Counting(_inference())
    actions, values, policies = act(
        counting,
        env.reset(),
        config=CONFIG,
        temperature=1.0,
        noise=True,
        rng=np.random.default_rng(0),
        search="numpy",
    )
    assert counting.calls == [6] * CONFIG.num_simulations
    assert actions.shape == (6,) and set(actions) <= {0, 1, 2}
    assert values.shape == (6,)
    np.testing.assert_allclose(policies.sum(axis=1), 1.0, rtol=1e-6)
    # policies are visit counts over num_simulations
    np.testing.assert_allclose(policies * CONFIG.num_simulations % 1, 0.0, atol=1e-5)


def test_compiled_search_runs_no_python_per_simulation():
    inference = _inference()
    calls = []
    recurrent_fn = inference.recurrent_fn

    def counting(hidden, action, step):
        calls.append(1)  # Python runs only while the graph is traced
        return recurrent_fn(hidden, action, step)

    inference.recurrent_fn = counting
    env = CatchEnv(6, seed=0)
    rng = np.random.default_rng(0)
    for temperature in (1.0, 0.0):
        act(inference, env.reset(), config=CONFIG, temperature=temperature, noise=True, rng=rng)
    assert len(calls) == 1
    assert inference.compiled_search(CONFIG).traces == 1


@pytest.mark.parametrize("q_form", ["pseudocode", "normalized"])
def test_compiled_act_equals_numpy_act(q_form):
    config = dataclasses.replace(CONFIG, num_simulations=12, q_form=q_form)
    inference = Inference(_networks(seed=1), jit_compile=True)
    env = CatchEnv(16, seed=2)
    observations = env.reset()
    seen = set()
    for seed, (temperature, noise) in enumerate([(1.0, True), (0.5, True), (0.0, False)]):
        moves = [
            act(
                inference, observations, config=config, temperature=temperature, noise=noise,
                rng=np.random.default_rng(seed), search=search,
            )
            for search in ("compiled", "numpy")
        ]  # fmt: skip
        (actions, values, policies), (np_actions, np_values, np_policies) = moves
        np.testing.assert_array_equal(actions, np_actions)
        np.testing.assert_array_equal(policies, np_policies)
        np.testing.assert_allclose(values, np_values, rtol=1e-6)
        assert actions.dtype == np_actions.dtype and values.dtype == np_values.dtype
        observations, _, _ = env.step(actions)
        seen |= {tuple(p) for p in policies}
    assert len(seen) >= 3  # the trees differ


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


def test_selfplay_and_evaluate_are_the_same_with_either_search():
    inference = Inference(_networks(seed=4), jit_compile=True)
    filled = {}
    for search in ("compiled", "numpy"):
        replay = ReplayBuffer(capacity=100, observation_size=50, num_actions=3)
        actor = SelfPlay(
            CatchEnv(4, seed=0), inference, replay, config=CONFIG,
            rng=np.random.default_rng(0), search=search,
        )  # fmt: skip
        returns = [r for step in range(10) for r in actor.step(step)]
        batch = replay.make_target(
            np.arange(len(replay)), unroll_steps=2, td_steps=3, discount=0.9,
            rng=np.random.default_rng(0),
        )  # fmt: skip
        score = evaluate(
            inference, CatchEnv(4, seed=3), config=CONFIG, rng=np.random.default_rng(1),
            search=search,
        )  # fmt: skip
        filled[search] = (returns, batch, score)
    (returns, batch, score), (np_returns, np_batch, np_score) = filled.values()
    assert returns == np_returns and len(returns) == 4 and score == np_score
    for field in dataclasses.fields(batch):
        got, want = getattr(batch, field.name), getattr(np_batch, field.name)
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=field.name)


def test_evaluate_is_deterministic_and_in_range():
    inference = _inference()
    a = evaluate(inference, CatchEnv(8, seed=3), config=CONFIG, rng=np.random.default_rng(0))
    b = evaluate(inference, CatchEnv(8, seed=3), config=CONFIG, rng=np.random.default_rng(0))
    assert a == b and -1.0 <= a <= 1.0


def test_unknown_search_raises_config_error():
    obs = CatchEnv(2, seed=0).reset()
    with pytest.raises(ConfigError, match="unknown search 'jax'; choose one of: compiled, numpy"):
        act(
            _inference(), obs, config=CONFIG, temperature=1.0, noise=False,
            rng=np.random.default_rng(0), search="jax",
        )  # fmt: skip
    with pytest.raises(ConfigError, match="unknown search 'jax'"):
        SelfPlay(
            CatchEnv(2, seed=0), _inference(), ReplayBuffer(capacity=10, observation_size=50,
            num_actions=3), config=CONFIG, rng=np.random.default_rng(0), search="jax",
        )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Planning sees the model that was trained.

_MAX = 0.5  # below the norm of every hidden state here: MaxNorm rescales all of them


def _maxnorm(h: np.ndarray) -> np.ndarray:
    """Keras' MaxNorm(0.5, axis=-1) by hand: rows with norm n > 0.5 scaled by 0.5 / (eps + n)."""
    norm = np.sqrt((np.asarray(h, np.float64) ** 2).sum(axis=1, keepdims=True))
    return h * (np.clip(norm, 0, _MAX) / (keras.config.epsilon() + norm))


def _hand_recurrent(nets: Networks, placement: str):
    """The learner's unroll step for MaxNorm at ``placement``, written out with NumPy rules."""

    def fn(hidden, action, step):
        step = np.asarray(step)[:, None]
        if placement == "paper":
            hidden = _maxnorm(hidden)
        elif placement == "pseudocode":
            hidden = np.where(step == 1, hidden, _maxnorm(hidden))
        one_hot = tf.one_hot(action, 3)
        inputs = [tf.constant(hidden, tf.float32), one_hot]
        next_hidden, reward = (t.numpy() for t in nets.dynamics(inputs))
        if placement == "hook":
            next_hidden = _maxnorm(next_hidden)
        policy, value = nets.prediction(next_hidden)
        return (
            next_hidden,
            nets.reward_support.to_scalar(reward).numpy(),
            nets.value_support.to_scalar(value).numpy(),
            policy.numpy(),
        )

    return fn


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_recurrent_inference_applies_a_forward_variant_per_placement_and_step(placement):
    nets = _networks(seed=5, normalisation="none")
    inference = Inference(
        nets, variant=make_variant("maxnorm", max_value=_MAX),
        placement=get_placement(placement), jit_compile=False,
    )  # fmt: skip
    hidden, _, _ = inference.initial(CatchEnv(4, seed=0).reset())
    assert (np.linalg.norm(hidden, axis=1) > 2 * _MAX).all()
    action, step = np.array([0, 1, 2, 1]), np.array([1, 2, 1, 3])  # rows at different depths
    got = inference.recurrent(hidden, action, step)
    want = _hand_recurrent(nets, placement)(hidden, action, step)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    bare = Inference(nets, jit_compile=False).recurrent(hidden, action, step)
    changed = np.abs(got[0] - bare[0]).max(axis=1) > 1e-3  # which rows the transform reached
    expected = {"pseudocode": step > 1, "paper": step > 0, "hook": step > 0}[placement]
    np.testing.assert_array_equal(changed, expected)


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_search_plans_with_the_transformed_states(placement):
    nets = _networks(seed=6, normalisation="none")
    config = dataclasses.replace(CONFIG, num_simulations=10)
    variant, where = make_variant("maxnorm", max_value=_MAX), get_placement(placement)
    inference = Inference(nets, variant=variant, placement=where, jit_compile=True)
    observations = CatchEnv(8, seed=1).reset()
    moves = {
        search: act(
            inference, observations, config=config, temperature=1.0, noise=True,
            rng=np.random.default_rng(0), search=search,
        )
        for search in ("compiled", "numpy")
    }  # fmt: skip
    hidden, value, logits = inference.initial(observations)
    expected = run_search(
        hidden, value, logits, _hand_recurrent(nets, placement), num_simulations=10,
        discount=config.discount, rng=np.random.default_rng(0), q_form=config.q_form,
    )  # fmt: skip
    bare = run_search(
        hidden, value, logits, Inference(nets, jit_compile=False).recurrent, num_simulations=10,
        discount=config.discount, rng=np.random.default_rng(0), q_form=config.q_form,
    )  # fmt: skip
    for _, values, policies in moves.values():
        np.testing.assert_array_equal(policies * 10, expected.visit_counts)
        np.testing.assert_allclose(values, expected.root_value, rtol=1e-4)
    assert not np.allclose(expected.root_value, bare.root_value, rtol=1e-3)  # MaxNorm mattered


def test_variants_that_keep_forward_values_plan_with_the_bare_model():
    # Scale 0.3: x * 0.3 + x * 0.7 differs from x in the last bit for about 1 float32 in 10, so
    # "identity forward" must mean the transform is left out, not applied.
    nets = _networks(seed=7, normalisation="none")
    hidden, _, _ = Inference(nets, jit_compile=False).initial(CatchEnv(3, seed=0).reset())
    action, step = np.array([0, 1, 2]), np.array([1, 2, 3])
    bare = Inference(nets, jit_compile=False).recurrent(hidden, action, step)
    variants = [
        make_variant("scale_gradient", scale=0.3),
        make_variant("stop_gradient"),
        make_variant("clipnorm"),
        make_variant("maxnorm_kernel"),
    ]
    for variant in variants:
        for placement in PLACEMENTS.values():
            inference = Inference(nets, variant=variant, placement=placement, jit_compile=False)
            for got, want in zip(inference.recurrent(hidden, action, step), bare, strict=True):
                np.testing.assert_array_equal(got, want)  # bit for bit
