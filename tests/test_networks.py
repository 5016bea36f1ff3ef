"""Tests of the networks: shapes, normalisations, the dynamics kernel constraint, config errors."""

import keras
import numpy as np
import pytest

from experiments.errors import ConfigError
from experiments.muzero.config import NetworkConfig
from experiments.muzero.networks import MinMaxNormalisation, Networks


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
