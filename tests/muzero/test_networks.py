"""Tests of the networks: shapes, normalisations, the dynamics kernel constraint, config errors."""

import keras
import numpy as np
import pytest

from experiments.base.errors import ConfigError
from experiments.muzero.config import NetworkConfig
from experiments.muzero.networks import Networks
from experiments.muzero.normalisation import MinMaxNormalisation


def _nets(**kwargs):
    constraint = kwargs.pop("kernel_constraint", None)
    config = NetworkConfig(hidden_size=8, width=16, **kwargs)
    return Networks(config, observation_size=6, num_actions=3, seed=0, kernel_constraint=constraint)


@pytest.mark.parametrize("normalisation", ["minmax", "none", "tanh", "layernorm"])
@pytest.mark.parametrize("support", ["categorical", "scalar"])
def test_shapes(normalisation, support):
    nets = _nets(normalisation=normalisation, support=support, value_support_size=4)
    obs = np.random.default_rng(0).normal(size=(5, 6)).astype(np.float32)
    hidden, value, policy = (t.numpy() for t in nets.initial_inference(obs))
    assert hidden.shape == (5, 8) and value.shape == (5,) and policy.shape == (5, 3)
    nxt, reward, value, policy = (
        t.numpy() for t in nets.recurrent_inference(hidden, np.array([0, 1, 2, 0, 1]))
    )
    assert nxt.shape == (5, 8) and reward.shape == (5,) and value.shape == (5,)
    assert policy.shape == (5, 3)
    _, value_logits = nets.prediction(hidden)
    assert value_logits.shape == (5, 9 if support == "categorical" else 1)
    # output layers start at zero: neutral value, reward and uniform policy
    np.testing.assert_allclose(value, 0.0, atol=1e-4)  # float32 h^-1(0)
    np.testing.assert_allclose(reward, 0.0, atol=1e-4)
    np.testing.assert_allclose(policy, 0.0)
    if normalisation == "minmax":
        np.testing.assert_allclose(nxt.min(axis=1), 0.0, atol=1e-6)
        np.testing.assert_allclose(nxt.max(axis=1), 1.0, atol=1e-5)
    if normalisation == "tanh":
        assert np.abs(nxt).max() < 1.0
    if normalisation == "layernorm":
        np.testing.assert_allclose(nxt.mean(axis=1), 0.0, atol=1e-5)


def test_minmax_by_hand_and_zero_range_guard():
    h = np.array([[1.0, 3.0, 2.0], [5.0, 5.0, 5.0]], np.float32)
    out = MinMaxNormalisation()(h).numpy()
    np.testing.assert_allclose(out[0], [0.0, 1.0, 0.5])
    np.testing.assert_allclose(out[1], [0.0, 0.0, 0.0])  # range 0 -> (h - min) / 1e-5 = 0
    assert np.isfinite(out).all()


def test_kernel_constraint_only_on_dynamics():
    nets = _nets(kernel_constraint=keras.constraints.MaxNorm(2.0))
    dense = [layer for layer in nets.dynamics.layers if isinstance(layer, keras.layers.Dense)]
    assert dense and all(layer.kernel.constraint is not None for layer in dense)
    for model in (nets.representation, nets.prediction):
        for layer in model.layers:
            if isinstance(layer, keras.layers.Dense):
                assert layer.kernel.constraint is None


def test_same_seed_same_weights():
    a, b = _nets(), _nets()
    for x, y in zip(a.trainable_variables, b.trainable_variables, strict=True):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"normalisation": "batchnorm"}, "unknown normalisation 'batchnorm'.*layernorm, minmax"),
        ({"hidden_size": 0}, r"network.hidden_size=0 .*>= 1"),
        ({"width": -3}, r"network.width=-3"),
        ({"support": "gauss"}, "unknown support 'gauss'"),
        ({"value_support_size": 0}, "value_support_size=0"),
    ],
)
def test_network_config_rejects_bad_input(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        NetworkConfig(**kwargs)


def _conv_nets(shape=(10, 10, 4), **kwargs):
    config = NetworkConfig(hidden_size=8, width=16, **kwargs)
    size = int(np.prod(shape))
    return Networks(config, observation_size=size, num_actions=3, seed=0, observation_shape=shape)


def test_image_observations_get_minatars_conv_torso():
    nets = _conv_nets()
    layers = nets.representation.layers
    convs = [layer for layer in layers if isinstance(layer, keras.layers.Conv2D)]
    assert len(convs) == 1
    conv = convs[0]
    assert (conv.filters, conv.kernel_size, conv.strides) == (16, (3, 3), (1, 1))
    assert conv.padding == "valid"
    # [B, 400] -> [B, 10, 10, 4] -> conv [B, 8, 8, 16] -> flatten 1024 -> Dense 16 -> Dense 8
    assert nets.representation.input_shape == (None, 400)
    assert conv.output.shape == (None, 8, 8, 16)
    assert conv.count_params() == 3 * 3 * 4 * 16 + 16  # 592
    dense = [layer for layer in nets.representation.layers if isinstance(layer, keras.layers.Dense)]
    assert [layer.count_params() for layer in dense] == [1024 * 16 + 16, 16 * 8 + 8]
    # dynamics and prediction stay MLPs on the hidden state
    for model in (nets.dynamics, nets.prediction):
        assert not any(isinstance(layer, keras.layers.Conv2D) for layer in model.layers)


def test_image_observations_spatial_or_flat_give_the_same_inference():
    nets = _conv_nets(shape=(10, 10, 7))
    obs = (np.random.default_rng(0).random((5, 10, 10, 7)) < 0.2).astype(np.float32)
    spatial = [t.numpy() for t in nets.initial_inference(obs)]
    flat = [t.numpy() for t in nets.initial_inference(obs.reshape(5, -1))]
    assert spatial[0].shape == (5, 8) and spatial[2].shape == (5, 3)
    for a, b in zip(spatial, flat, strict=True):
        np.testing.assert_array_equal(a, b)


def test_flat_observations_keep_the_mlp_exactly():
    a = _nets()
    config = NetworkConfig(hidden_size=8, width=16)
    b = Networks(config, observation_size=6, num_actions=3, seed=0, observation_shape=(6,))
    assert not any(isinstance(layer, keras.layers.Conv2D) for layer in b.representation.layers)
    for x, y in zip(a.trainable_variables, b.trainable_variables, strict=True):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


@pytest.mark.parametrize(
    ("shape", "size", "match"),
    [
        ((3, 2), 6, r"observation shape \(3, 2\) is not supported for 6 values"),
        ((10, 10, 4), 100, r"observation shape \(10, 10, 4\) is not supported for 100 values"),
    ],
)
def test_unsupported_observation_shape_is_refused(shape, size, match):
    with pytest.raises(ConfigError, match=match):
        Networks(
            NetworkConfig(), observation_size=size, num_actions=3, seed=0, observation_shape=shape
        )


def test_unresolved_support_size_is_refused():
    assert NetworkConfig(value_support_size=None).value_support_size is None  # null is valid
    with pytest.raises(ConfigError, match="network.reward_support_size=None must be resolved"):
        Networks(NetworkConfig(reward_support_size=None), observation_size=6, num_actions=3, seed=0)


def _double(h):
    return 2.0 * h


@pytest.mark.parametrize("placement", ["pseudocode", "paper", "hook"])
def test_recurrent_step_puts_the_transform_where_the_placement_says(placement):
    # Spelled out by hand per placement, with T(h) = 2h, at steps 1 and 2 (int and tensor):
    # pseudocode: h_in = h at step 1, T(h) after; paper: T(h) always; hook: T(dynamics output).
    from experiments.gradients import get_placement
    from experiments.muzero.networks import recurrent_step

    nets = _nets(normalisation="none")
    rng = np.random.default_rng(1)
    hidden = rng.normal(size=(4, 8)).astype(np.float32)
    action = np.array([0, 2, 1, 0])
    one_hot = np.eye(3, dtype=np.float32)[action]
    for step in (1, 2):
        scaled_input = placement == "paper" or (placement == "pseudocode" and step == 2)
        h_in = 2.0 * hidden if scaled_input else hidden
        h_next, reward = (t.numpy() for t in nets.dynamics([h_in, one_hot]))
        if placement == "hook":
            h_next = 2.0 * h_next
        policy, value = (t.numpy() for t in nets.prediction(h_next))
        for given in (step, np.full(4, step, np.int32)):
            got = recurrent_step(
                nets,
                hidden,
                action,
                transform=_double,
                placement=get_placement(placement),
                step=given,
            )
            for a, b in zip(got, (h_next, reward, value, policy), strict=True):
                np.testing.assert_allclose(a.numpy(), b, rtol=1e-6, atol=1e-6)


def test_recurrent_step_without_a_transform_is_the_bare_model():
    from experiments.muzero.networks import recurrent_step

    nets = _nets()
    hidden = np.random.default_rng(2).uniform(size=(3, 8)).astype(np.float32)
    action = np.array([1, 0, 2])
    h_next, reward, value, policy = recurrent_step(nets, hidden, action)
    bare_next, bare_reward = nets.dynamics([hidden, np.eye(3, dtype=np.float32)[action]])
    bare_policy, bare_value = nets.prediction(bare_next)
    bare = (bare_next, bare_reward, bare_value, bare_policy)
    for a, b in zip((h_next, reward, value, policy), bare, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(ValueError, match="needs a placement"):
        recurrent_step(nets, hidden, action, transform=_double)
