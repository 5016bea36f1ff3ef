"""The seed axis (experiments.muzero.seed_axis): seed s's numbers do not depend on which seeds
share its group, bit for bit, for every variant, a flat and an image observation, with and
without XLA; and they agree with a run of its own (one ``Networks``, one ``Learner``) to float32
rounding."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from experiments.base.errors import ConfigError
from experiments.bench import train_step
from experiments.gradients import get_placement, make_variant
from experiments.muzero.config import MuZeroConfig, NetworkConfig
from experiments.muzero.learner import Learner
from experiments.muzero.networks import Networks
from experiments.muzero.seed_axis import GroupLearner, StackedNetworks
from experiments.muzero.seed_axis.networks import SeedMaxNorm, sum_over_rows

# one variant of each mechanism: the bare step, a gradient transform of the hidden state, a
# forward one, each kind of optimizer clipping, a kernel constraint, several optimizers, loss
# weights by depth (stop_gradient and lr_scale are scale_gradient and dynamics_lr_scale again)
VARIANTS = [
    "none",
    "scale_gradient",
    "maxnorm",
    "clipnorm",
    "global_clipnorm",
    "maxnorm_kernel",
    "dynamics_lr_scale",
    "depth_loss_scale",
]
B, K, A = 16, 3, 3


def _config(jit: bool = True, **network) -> MuZeroConfig:
    sizes = {"hidden_size": 8, "width": 16, "value_support_size": 5, "reward_support_size": 3}
    return MuZeroConfig(
        network=NetworkConfig(**{**sizes, **network}),
        batch_size=B,
        unroll_steps=K,
        jit_compile=jit,
        learning_rate=0.05,  # large, so that a few steps move the weights far
    )


def _networks(config, variant, seed, shape=(12,)):
    return Networks(
        config.network,
        observation_size=int(np.prod(shape)),
        num_actions=A,
        seed=seed,
        kernel_constraint=variant.kernel_constraint,
        observation_shape=shape,
    )


def _batches(seed: int, steps: int, size: int):
    rng = np.random.default_rng(1000 + seed)
    return [
        train_step.random_batch(
            rng, batch_size=B, unroll_steps=K, observation_size=size, num_actions=A
        )
        for _ in range(steps)
    ]


def _group_run(config, variant, seeds, steps, shape=(12,)):
    """Each seed's metrics of ``steps`` updates of one group, and its final weights."""
    nets = StackedNetworks([_networks(config, variant, s, shape) for s in seeds])
    learner = GroupLearner(
        nets, config=config, variant=variant, placement=get_placement("pseudocode")
    )
    data = {s: _batches(s, steps, int(np.prod(shape))) for s in seeds}
    rows = [learner.update_group([data[s][i] for s in seeds]) for i in range(steps)]
    metrics = {s: [row[j] for row in rows] for j, s in enumerate(seeds)}
    weights = {s: nets.seed_weights(j) for j, s in enumerate(seeds)}
    return metrics, weights


@pytest.mark.parametrize("name", VARIANTS)
def test_a_seed_computes_the_same_alone_and_in_a_group(name):
    variant = make_variant(name, **({"clipnorm": 0.05} if "clipnorm" in name else {}))
    config = _config()
    alone, alone_weights = _group_run(config, variant, [5], steps=6)
    group, group_weights = _group_run(config, variant, [8, 5, 2], steps=6)
    assert group[5] == alone[5]
    for a, b in zip(alone_weights[5], group_weights[5], strict=True):
        np.testing.assert_array_equal(a, b)
    # the other seeds of the group computed something else (the check can fail)
    assert group[8] != group[5]


@pytest.mark.parametrize(
    ("jit", "shape", "groups"),
    [
        (True, (12,), ([4, 3], [1, 2, 3, 4, 6])),
        (True, (5, 4, 2), ([3, 4], [1, 2, 3, 4, 6])),
        (False, (12,), ([1, 2, 3, 4, 6],)),
    ],
)
def test_group_sizes_and_positions_do_not_change_a_seed(jit, shape, groups):
    variant = make_variant("scale_gradient")
    config = _config(jit=jit)
    reference, _ = _group_run(config, variant, [3], steps=5, shape=shape)
    for seeds in groups:
        metrics, _ = _group_run(config, variant, seeds, steps=5, shape=shape)
        assert metrics[3] == reference[3], seeds


@pytest.mark.parametrize("name", ["scale_gradient", "clipnorm"])
def test_a_group_agrees_with_runs_of_their_own_to_rounding(name):
    variant = make_variant(name, **({"clipnorm": 0.05} if name == "clipnorm" else {}))
    config = _config()
    group, group_weights = _group_run(config, variant, [4, 9], steps=6)
    for seed in (4, 9):
        learner = Learner(
            _networks(config, variant, seed),
            config=config,
            variant=variant,
            placement=get_placement("pseudocode"),
        )
        own = [learner.update(batch) for batch in _batches(seed, 6, 12)]
        for mine, theirs in zip(group[seed], own, strict=True):
            assert mine.keys() == theirs.keys()
            for key in mine:
                assert mine[key] == pytest.approx(theirs[key], rel=1e-4, abs=1e-6), key
        for a, b in zip(group_weights[seed], learner.networks.variables, strict=True):
            np.testing.assert_allclose(a, b.numpy(), rtol=1e-4, atol=1e-6)


def test_stacked_networks_start_from_each_seeds_own_weights_and_outputs():
    config = _config()
    variant = make_variant("none")
    for shape in ((12,), (5, 4, 2)):
        nets = [_networks(config, variant, s, shape) for s in (1, 2)]
        stacked = StackedNetworks(nets)
        for j, n in enumerate(nets):
            for a, b in zip(stacked.seed_weights(j), n.variables, strict=True):
                np.testing.assert_array_equal(a, b.numpy())
        obs = np.random.default_rng(0).random((2 * B, int(np.prod(shape)))).astype(np.float32)
        hidden, value, policy = stacked.initial_inference(obs)
        for j, n in enumerate(nets):
            h, v, p = n.initial_inference(obs[j * B : (j + 1) * B])
            np.testing.assert_allclose(hidden[j * B : (j + 1) * B], h, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(policy[j * B : (j + 1) * B], p, rtol=1e-5, atol=1e-6)
            if len(shape) == 1:  # Dense layers alone: exactly Keras' numbers
                np.testing.assert_array_equal(hidden[j * B : (j + 1) * B], h)


def test_a_seed_that_diverges_leaves_the_others_alone():
    config = _config()
    variant = make_variant("none")
    reference, _ = _group_run(config, variant, [3], steps=4)
    nets = StackedNetworks([_networks(config, variant, s) for s in (7, 3)])
    learner = GroupLearner(
        nets, config=config, variant=variant, placement=get_placement("pseudocode")
    )
    first = nets.representation.trainable_variables[0]
    value = first.numpy()
    value[0, 0, 0] = np.nan  # seed 7's weights broken
    first.assign(value)
    data = {s: _batches(s, 4, 12) for s in (7, 3)}
    rows = [learner.update_group([data[7][i], data[3][i]]) for i in range(4)]
    assert all(row[0]["nonfinite"] == 1.0 for row in rows)
    assert [row[1] for row in rows] == reference[3]


def test_sum_over_rows_and_seed_maxnorm_are_what_they_say():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(sum_over_rows(tf.constant(x)), x.sum(axis=1, keepdims=True))
    w = np.random.default_rng(0).normal(size=(2, 5, 3)).astype(np.float32) * 3
    mine = SeedMaxNorm(1.5)(tf.constant(w)).numpy()
    for s in range(2):
        keras_own = keras.constraints.MaxNorm(1.5, axis=0)(tf.constant(w[s])).numpy()
        np.testing.assert_allclose(mine[s], keras_own, rtol=1e-6)
    assert np.linalg.norm(mine, axis=1).max() <= 1.5 + 1e-5


def test_bad_groups_are_refused():
    config = _config(normalisation="layernorm")
    variant = make_variant("none")
    with pytest.raises(ConfigError, match="network.normalisation=layernorm is not supported"):
        StackedNetworks([_networks(config, variant, 1)])
    config = _config()
    with pytest.raises(ConfigError, match="share their networks' configuration and shapes"):
        StackedNetworks([_networks(config, variant, 1), _networks(config, variant, 2, (3, 4, 1))])
    learner = GroupLearner(
        StackedNetworks([_networks(config, variant, 1)]),
        config=config,
        variant=variant,
        placement=get_placement("pseudocode"),
    )
    with pytest.raises(TypeError, match="update_group"):
        learner.update(_batches(1, 1, 12)[0])
    with pytest.raises(ValueError, match="needs 1 batches"):
        learner.update_group(_batches(1, 2, 12))
