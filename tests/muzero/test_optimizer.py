"""The learner's optimizers (experiments/muzero/optimizers.py): the decaying learning rate, the
pseudocode's TF1 momentum step by hand and against TF1's own optimizer, and the L2 term."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from experiments.base.errors import ConfigError
from experiments.gradients import get_placement, make_variant
from experiments.muzero.config import MuZeroConfig, NetworkConfig
from experiments.muzero.learner import Learner
from experiments.muzero.networks import Networks
from experiments.muzero.optimizers import Momentum, learning_rate_schedule, make_optimizer


def _schedule(**kwargs):
    return learning_rate_schedule(MuZeroConfig(**kwargs))


def test_learning_rate_decays_as_the_pseudocode_writes_it():
    # lr_init * lr_decay_rate ** (step / lr_decay_steps) with 0.1, 0.1, 1000:
    # step 0: 0.1; step 500: 0.1 * 0.1 ** 0.5 = 0.1 * 0.316227766 = 0.0316227766; step 1000: 0.01.
    schedule = _schedule(learning_rate=0.1, lr_decay_rate=0.1, lr_decay_steps=1000)
    assert float(schedule(0)) == pytest.approx(0.1, rel=1e-6)
    assert float(schedule(500)) == pytest.approx(0.0316227766, rel=1e-6)
    assert float(schedule(1000)) == pytest.approx(0.01, rel=1e-6)


def test_the_optimizer_steps_at_the_decayed_rate_of_its_update_count():
    # Keras' optimizer.iterations counts the updates applied: the first update uses lr_init.
    config = MuZeroConfig(optimizer="momentum", learning_rate=0.1, lr_decay_steps=1000)
    optimizer = make_optimizer(config, make_variant("none"))
    assert float(optimizer.learning_rate) == pytest.approx(0.1, rel=1e-6)
    optimizer.iterations.assign(500)
    assert float(optimizer.learning_rate) == pytest.approx(0.0316227766, rel=1e-6)


def test_per_run_decay_reaches_a_tenth_at_35_percent_of_the_run():
    # regime=pseudocode: lr_decay_rate = 0.1 ** (1 / 0.35) over lr_decay_steps = T = 2500, so at
    # step 0.35 T = 875 the rate is 0.1 ** (875 / 875) = 0.1 of lr_init, as the pseudocode's
    # 350e3 of 1e6 steps; at the end 0.1 ** (1 / 0.35) = 0.0013895 of it.
    schedule = _schedule(learning_rate=0.2, lr_decay_rate=0.1 ** (1 / 0.35), lr_decay_steps=2500)
    assert float(schedule(875)) == pytest.approx(0.02, rel=1e-5)
    assert float(schedule(2500)) == pytest.approx(0.2 * 0.0013894955, rel=1e-5)


def test_each_name_builds_its_optimizer_with_the_variant_kwargs():
    variant = make_variant("clipnorm", clipnorm=0.1)
    built = {name: make_optimizer(MuZeroConfig(optimizer=name), variant) for name in ("adam",)}
    built["sgd"] = make_optimizer(MuZeroConfig(optimizer="sgd", momentum=0.5), variant)
    built["momentum"] = make_optimizer(MuZeroConfig(optimizer="momentum", momentum=0.5), variant)
    assert type(built["adam"]) is keras.optimizers.Adam
    assert type(built["sgd"]) is keras.optimizers.SGD
    assert type(built["momentum"]) is Momentum
    for optimizer in built.values():
        assert optimizer.clipnorm == pytest.approx(0.1)
    assert built["momentum"].momentum == built["sgd"].momentum == 0.5


def _two_steps(optimizer):
    w = tf.Variable([1.0, -2.0])
    optimizer.apply_gradients([(tf.constant([0.5, 0.25]), w)])
    first = w.numpy().copy()
    optimizer.apply_gradients([(tf.constant([1.0, -1.0]), w)])
    return first, w.numpy()


def test_momentum_steps_by_hand_in_tf1s_form():
    # lr 0.1 then 0.05 (halved every update), momentum 0.9, w = [1, -2].
    # Step 1, g = [0.5, 0.25]: a = g; w = [1 - 0.05, -2 - 0.025] = [0.95, -2.025].
    # Step 2, g = [1, -1]: a = 0.9 [0.5, 0.25] + [1, -1] = [1.45, -0.775];
    #   w = [0.95 - 0.05 * 1.45, -2.025 + 0.05 * 0.775] = [0.8775, -1.98625].
    halving = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5)
    first, second = _two_steps(Momentum(halving, momentum=0.9))
    np.testing.assert_allclose(first, [0.95, -2.025], rtol=1e-6)
    np.testing.assert_allclose(second, [0.8775, -1.98625], rtol=1e-6)
    # Keras' SGD keeps the past rate in its velocity: v = -0.1 g1 = [-0.05, -0.025], then
    # v = 0.9 v - 0.05 g2 = [-0.095, 0.0275]; w = [0.855, -1.9975]: the same first step only.
    halving = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5)
    first, second = _two_steps(keras.optimizers.SGD(halving, momentum=0.9))
    np.testing.assert_allclose(first, [0.95, -2.025], rtol=1e-6)
    np.testing.assert_allclose(second, [0.855, -1.9975], rtol=1e-6)


def test_momentum_matches_tf1s_momentum_optimizer():
    # The independent reference: TF1's tf.compat.v1.train.MomentumOptimizer (what the
    # pseudocode calls), on the same decaying rate and gradients, over 6 steps.
    rng = np.random.default_rng(0)
    start = rng.normal(size=(3, 2)).astype(np.float32)
    grads = rng.normal(size=(6, 3, 2)).astype(np.float32)
    schedule = keras.optimizers.schedules.ExponentialDecay(0.05, decay_steps=4, decay_rate=0.1)
    ours, theirs = tf.Variable(start), tf.Variable(start)
    optimizer = Momentum(schedule, momentum=0.9)
    step = tf.Variable(0)
    reference = tf.compat.v1.train.MomentumOptimizer(lambda: schedule(step), momentum=0.9)
    for g in grads:
        optimizer.apply_gradients([(tf.constant(g), ours)])
        reference.apply_gradients([(tf.constant(g), theirs)])
        step.assign_add(1)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7)
    assert not np.allclose(ours.numpy(), start)


def test_l2_term_is_half_the_squared_norm_times_weight_decay_and_its_gradient_is_c_w():
    # tf.nn.l2_loss(w) = sum(w ** 2) / 2: the term is c/2 ||W||^2, its gradient c W.
    network = NetworkConfig(hidden_size=4, width=4, value_support_size=2, reward_support_size=1)
    config = MuZeroConfig(network=network, batch_size=4, unroll_steps=2, weight_decay=0.01)
    nets = Networks(config.network, observation_size=3, num_actions=2, seed=3)
    learner = Learner(
        nets, config=config, variant=make_variant("none"), placement=get_placement("pseudocode")
    )
    weights = [v.numpy() for v in nets.trainable_variables]
    with tf.GradientTape() as tape:
        l2 = learner.losses([], {"weights": tf.ones((4, 3))})["l2"]
    grads = tape.gradient(l2, nets.trainable_variables)
    expected = 0.01 * 0.5 * sum(float(np.sum(w.astype(np.float64) ** 2)) for w in weights)
    assert float(l2) == pytest.approx(expected, rel=1e-5)
    for g, w in zip(grads, weights, strict=True):
        np.testing.assert_allclose(g.numpy(), 0.01 * w, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"optimizer": "rmsprop"},
            "unknown optimizer 'rmsprop'; choose one of: adam, momentum, sgd",
        ),
        ({"momentum": 1.5}, r"muzero.momentum=1.5 is invalid; expected a number in \[0, 1\]"),
        ({"lr_decay_rate": 0.0}, r"muzero.lr_decay_rate=0.0 is invalid; expected a number in \(0"),
        ({"lr_decay_steps": 0}, "muzero.lr_decay_steps=0 is invalid; expected an integer >= 1"),
        ({"weight_decay": -1e-4}, r"muzero.weight_decay=-0.0001 is invalid; expected a number"),
        ({"learning_rate": 0.0}, r"muzero.learning_rate=0.0 is invalid; expected a number in \(0"),
    ],
)
def test_bad_optimizer_settings_are_one_line_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message) as info:
        MuZeroConfig(**kwargs)
    assert "\n" not in str(info.value)
