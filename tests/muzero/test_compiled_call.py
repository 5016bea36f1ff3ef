"""FlatCall: a concrete function called with its flat tensors gives what TensorFlow's public call
gives, bit for bit (outputs and the weights a train step leaves), and refuses inputs of another
structure, dtype or shape in one line."""

import numpy as np
import pytest
import tensorflow as tf

from experiments.base.errors import ConfigError
from experiments.gradients import get_placement, make_variant
from experiments.muzero.config import MuZeroConfig, NetworkConfig
from experiments.muzero.learner import Learner
from experiments.muzero.networks import Networks
from experiments.muzero.replay import Batch
from experiments.muzero.runtime.compiled_call import FlatCall
from experiments.muzero.search_tf import CompiledSearch, draw_randomness
from experiments.muzero.selfplay import Inference

K, B = 3, 8


def _learner(jit: bool) -> Learner:
    network = NetworkConfig(hidden_size=6, width=8, value_support_size=3, reward_support_size=2)
    config = MuZeroConfig(network=network, unroll_steps=K, batch_size=B, jit_compile=jit)
    nets = Networks(config.network, observation_size=5, num_actions=3, seed=1)
    return Learner(
        nets,
        config=config,
        variant=make_variant("scale_gradient"),
        placement=get_placement("pseudocode"),
    )


def _batch(seed: int) -> Batch:
    rng = np.random.default_rng(seed)
    return Batch(
        observations=rng.normal(size=(B, 5)).astype(np.float32),
        actions=rng.integers(0, 3, size=(B, K)).astype(np.int32),
        target_value=rng.normal(size=(B, K + 1)).astype(np.float32),
        target_reward=rng.normal(size=(B, K + 1)).astype(np.float32),
        target_policy=rng.dirichlet(np.ones(3), size=(B, K + 1)).astype(np.float32),
        policy_mask=np.ones((B, K + 1), np.float32),
        steps_left=rng.integers(1, 2 * K, size=B).astype(np.int32),
    )


@pytest.mark.parametrize("jit", [False, True])
def test_train_steps_through_flatcall_equal_the_public_call(jit):
    """Two learners built alike take the same 5 steps, one through ``Learner.update`` (FlatCall),
    the other through the concrete function's public call: same metrics, same weights."""
    flat, public = _learner(jit), _learner(jit)
    concrete = public._update.get_concrete_function()
    for seed in range(5):
        batch = _batch(seed)
        got = flat.update(batch)
        arrays = public.batch_tensors(batch)
        values = concrete({k: tf.constant(v) for k, v in arrays.items()}).numpy().tolist()
        assert list(got.values()) == values  # bit for bit, NaN-free
        assert isinstance(flat._step, FlatCall)
    for a, b in zip(
        flat.networks.trainable_variables, public.networks.trainable_variables, strict=True
    ):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # The weights moved: the comparison above is not between two untouched copies.
    assert not np.array_equal(flat.networks.trainable_variables[0].numpy(), _initial_kernel())


def _initial_kernel() -> np.ndarray:
    return _learner(False).networks.trainable_variables[0].numpy()


def test_search_through_flatcall_equals_the_public_call():
    nets = Networks(
        NetworkConfig(hidden_size=6, width=8, value_support_size=3, reward_support_size=2),
        observation_size=5,
        num_actions=3,
        seed=2,
    )
    inference = Inference(nets, jit_compile=False)
    search = CompiledSearch(
        inference.initial_fn,
        inference.recurrent_fn,
        num_actions=3,
        num_simulations=6,
        discount=0.997,
        jit_compile=False,
    )
    rng = np.random.default_rng(3)
    boards = rng.normal(size=(4, 5)).astype(np.float32)
    noise, uniforms = draw_randomness(
        rng,
        batch_size=4,
        num_actions=3,
        temperature=1.0,
        dirichlet_alpha=0.25,
        dirichlet_fraction=0.25,
    )
    got = search(boards, noise=noise, noise_fraction=0.25, temperature=1.0, uniforms=uniforms)
    function = search.concrete_function(4, 5)
    assert isinstance(function, FlatCall)
    want = function.concrete(
        tf.constant(boards),
        tf.constant(noise),
        tf.constant(0.25, tf.float64),
        tf.constant(1.0, tf.float64),
        tf.constant(uniforms),
    )
    for a, b in zip(
        (got.actions, got.root_value, got.visit_counts, got.q_values), want, strict=True
    ):
        np.testing.assert_array_equal(a, b.numpy())
    assert got.visit_counts.sum() == 4 * 6  # one visit per simulation per tree


def _adder() -> FlatCall:
    @tf.function(autograph=False)
    def add(batch):
        return batch["x"] + tf.cast(batch["n"], tf.float32)

    return FlatCall(
        add.get_concrete_function(
            {"x": tf.TensorSpec([2], tf.float32), "n": tf.TensorSpec([2], tf.int32)}
        )
    )


def test_flatcall_by_hand_and_bad_inputs():
    add = _adder()
    x, n = np.array([0.5, 1.5], np.float32), np.array([1, 2], np.int32)
    np.testing.assert_array_equal(add({"x": x, "n": n}).numpy(), [1.5, 3.5])
    np.testing.assert_array_equal(add({"x": tf.constant(x), "n": n}).numpy(), [1.5, 3.5])
    with pytest.raises(ConfigError, match=r"'batch_x' is float64 \[2\]; expected float32 \[2\]"):
        add({"x": x.astype(np.float64), "n": n})
    with pytest.raises(ConfigError, match=r"'batch_n' is int32 \[3\]; expected int32 \[2\]"):
        add({"x": x, "n": np.array([1, 2, 3], np.int32)})
    with pytest.raises(ConfigError, match="do not match the traced signature") as err:
        add({"y": x, "n": n})
    assert "\n" not in str(err.value)


def test_flatcall_refuses_a_signature_it_cannot_check():
    @tf.function(autograph=False)
    def double(x):
        return 2.0 * x

    with pytest.raises(ConfigError, match="fully defined shape"):
        FlatCall(double.get_concrete_function(tf.TensorSpec([None], tf.float32)))
    with pytest.raises(ConfigError, match="positional tensor"):
        FlatCall(double.get_concrete_function(x=tf.TensorSpec([2], tf.float32)))
