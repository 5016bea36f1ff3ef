"""Tests of the value transform, its inverse, two-hot encoding and the supports."""

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.base.errors import ConfigError
from experiments.muzero.config import NetworkConfig
from experiments.muzero.support import (
    FALLBACK_SUPPORT_SIZE,
    Support,
    SupportSizes,
    covering_size,
    h_inverse,
    h_scalar,
    h_transform,
    resolve_support_sizes,
    two_hot,
    value_bound,
)
from experiments.tasks import TaskConfig


def test_h_hand_values():
    # h(3) = (sqrt(4) - 1) + 0.003; h(-8) = -(sqrt(9) - 1) - 0.008; h(0) = 0.
    np.testing.assert_allclose(h_transform([3.0, -8.0, 0.0]).numpy(), [1.003, -2.008, 0.0])


@settings(deadline=None, max_examples=200)
@given(st.floats(min_value=-1e4, max_value=1e4, allow_nan=False, width=32))
def test_h_round_trip(x):
    y = h_inverse(h_transform([x])).numpy()[0]
    assert y == pytest.approx(x, rel=1e-4, abs=1e-3)


@settings(deadline=None, max_examples=100)
@given(st.floats(min_value=-300.0, max_value=300.0, allow_nan=False, width=32))
def test_categorical_encode_decode_round_trip(x):
    support = Support("categorical", 20)  # h(300) = 16.4 < 20: no clipping
    probs = support.encode([x]).numpy()
    assert probs.sum() == pytest.approx(1.0, abs=1e-5)
    assert (probs > 0).sum() <= 2
    logits = np.log(np.maximum(probs, 1e-30))
    assert support.to_scalar(logits).numpy()[0] == pytest.approx(x, rel=1e-3, abs=1e-3)


def test_two_hot_hand_values():
    got = two_hot([1.3, -0.25, 5.0, -3.0, 2.0], 2).numpy()
    expected = [
        [0, 0, 0, 0.7, 0.3],
        [0, 0.25, 0.75, 0, 0],
        [0, 0, 0, 0, 1],  # clipped to 2
        [1, 0, 0, 0, 0],  # clipped to -2
        [0, 0, 0, 0, 1],
    ]
    np.testing.assert_allclose(got, expected, atol=1e-6)


def test_categorical_loss_is_cross_entropy_against_two_hot():
    support = Support("categorical", 1)
    logits = np.array([[0.1, 0.2, 0.3]], np.float32)
    x = h_inverse([0.5]).numpy()  # h(x) = 0.5: half on bin 0, half on bin 1
    log_probs = logits[0] - np.log(np.exp(logits[0]).sum())
    expected = -(0.5 * log_probs[1] + 0.5 * log_probs[2])
    assert support.loss(logits, x).numpy()[0] == pytest.approx(expected, rel=1e-5)


def test_scalar_support():
    support = Support("scalar", 7)
    assert support.num_outputs == 1
    out = tf.constant([[2.0], [-1.0]])
    np.testing.assert_allclose(support.to_scalar(out).numpy(), [2.0, -1.0])
    np.testing.assert_allclose(support.loss(out, [0.5, 1.0]).numpy(), [2.25, 4.0])


def test_unknown_support_kind_names_choices():
    with pytest.raises(ConfigError, match="'gaussian'.*categorical, scalar"):
        Support("gaussian", 3)


def test_h_inverse_matches_textbook_form_in_float64():
    y = np.array([-30.0, -2.5, -0.3, 0.0, 0.7, 4.0, 50.0])
    eps = 0.001
    textbook = np.sign(y) * (
        ((np.sqrt(1 + 4 * eps * (np.abs(y) + 1 + eps)) - 1) / (2 * eps)) ** 2 - 1
    )
    np.testing.assert_allclose(h_inverse(y).numpy(), textbook, rtol=1e-5, atol=1e-6)


def test_h_scalar_matches_h_transform():
    xs = [-500.0, -3.0, 0.0, 1.0, 100.0, 333.0]
    np.testing.assert_allclose([h_scalar(x) for x in xs], h_transform(xs).numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    ("bound", "size"),
    [
        (0.0, 1),  # h(0) = 0, but S >= 1
        (1.0, 1),  # h(1) = sqrt(2) - 1 + 0.001 = 0.415
        (7.9, 2),  # h(7.9) = 2.983 - 1 + 0.0079 = 1.991
        (8.0, 3),  # h(8) = 3 - 1 + 0.008 = 2.008
        (100.0, 10),  # h(100) = sqrt(101) - 1 + 0.1 = 9.150
        (500.0, 22),  # h(500) = sqrt(501) - 1 + 0.5 = 21.883
        (-100.0, 10),  # symmetric
    ],
)
def test_covering_size_by_hand(bound, size):
    assert covering_size(bound) == size


def _net(value, reward, support="categorical"):
    return NetworkConfig(value_support_size=value, reward_support_size=reward, support=support)


def test_todays_explicit_defaults_are_accepted():
    catch = resolve_support_sizes(TaskConfig(), _net(5, 2), discount=0.997)
    assert catch == SupportSizes(value=5, reward=2)
    cartpole = TaskConfig(name="cartpole")
    # value bound min(500, 1 / (1 - 0.997) = 333.3): h(333.3) = 18.285 - 1 + 0.333 = 17.62 <= 20
    assert value_bound(cartpole, discount=0.997)[0] == pytest.approx(1000 / 3)
    assert resolve_support_sizes(cartpole, _net(20, 2), discount=0.997) == (20, 2)


def test_automatic_sizes_by_hand():
    # catch: returns in [-1, 1], |reward| <= 1: h(1) = 0.415 -> 1 and 1.
    assert resolve_support_sizes(TaskConfig(), _net(None, None), discount=0.997) == (1, 1)
    # catch x 100: h(100) = 9.05 + 0.1 = 9.15 -> 10 for both heads.
    catch100 = TaskConfig(reward_scale=100.0)
    assert resolve_support_sizes(catch100, _net(None, None), discount=0.997) == (10, 10)
    # cartpole: min(500, 333.3) -> 18; reward 1 -> 1. With discount 1 only the return bounds it:
    cartpole = TaskConfig(name="cartpole")
    assert resolve_support_sizes(cartpole, _net(None, None), discount=0.997) == (18, 1)
    assert resolve_support_sizes(cartpole, _net(None, None), discount=1.0) == (22, 1)
    # MinAtar breakout: no return range, |reward| <= 1: value bound 1 / (1 - 0.99) = 100 -> 10.
    breakout = TaskConfig(name="minatar", id="breakout")
    assert resolve_support_sizes(breakout, _net(None, None), discount=0.99) == (10, 1)


def test_no_declared_bound_falls_back_or_keeps_the_explicit_size():
    acrobot = TaskConfig(name="gym", id="Acrobot-v1")
    assert value_bound(acrobot, discount=0.997) is None
    fallback = resolve_support_sizes(acrobot, _net(None, None), discount=0.997)
    assert fallback == (FALLBACK_SUPPORT_SIZE, FALLBACK_SUPPORT_SIZE) == (300, 300)
    assert resolve_support_sizes(acrobot, _net(1, 1), discount=0.997) == (1, 1)
    asterix = TaskConfig(name="minatar", id="asterix")
    assert resolve_support_sizes(asterix, _net(None, 3), discount=0.99) == (300, 3)


def test_too_small_explicit_sizes_are_refused_in_one_line():
    catch100 = TaskConfig(reward_scale=100.0)
    with pytest.raises(ConfigError) as info:
        resolve_support_sizes(catch100, _net(5, 10), discount=0.997)
    assert str(info.value) == (
        "muzero.network.value_support_size=5 does not cover the task's bound 100 "
        "(max |episode return| 100; h(100) = 9.15 > 5); the smallest size that covers it is 10, "
        "or set value_support_size=null to size it automatically"
    )
    with pytest.raises(ConfigError) as info:
        resolve_support_sizes(catch100, _net(10, 2), discount=0.997)
    assert str(info.value) == (
        "muzero.network.reward_support_size=2 does not cover the task's bound 100 "
        "(max |reward| 100; h(100) = 9.15 > 2); the smallest size that covers it is 10, "
        "or set reward_support_size=null to size it automatically"
    )
    breakout = TaskConfig(name="minatar", id="breakout", reward_scale=2.0)
    with pytest.raises(ConfigError, match=r"bound 200 \(max \|reward\| 2 / \(1 - discount 0.99\)"):
        resolve_support_sizes(breakout, _net(5, 2), discount=0.99)


def test_scalar_heads_never_refuse_their_unused_sizes():
    catch100 = TaskConfig(reward_scale=100.0)
    assert resolve_support_sizes(catch100, _net(5, 2, "scalar"), discount=0.997) == (5, 2)
