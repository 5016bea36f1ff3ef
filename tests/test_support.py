"""Tests of the value transform, its inverse, two-hot encoding and the supports."""

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.errors import ConfigError
from experiments.muzero.support import Support, h_inverse, h_transform, two_hot


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
