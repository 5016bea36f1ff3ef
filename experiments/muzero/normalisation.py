"""The paper's hidden-state normalisation as a Keras layer (Schrittwieser et al., 2020, Appendix G).

MuZero scales every hidden state per sample to [0, 1] by min-max; here with a guard against a zero
range. The registry of normalisations (:data:`experiments.muzero.options.NORMALISATIONS`, importable
without TensorFlow) builds it from its ``minmax`` entry; this module imports nothing of the
registry or of the networks.
"""

from __future__ import annotations

import keras
import tensorflow as tf

__all__ = ["MIN_RANGE", "MinMaxNormalisation"]

MIN_RANGE = 1e-5
"""A sample's range below this is widened by it (a constant hidden state maps to zeros)."""


class MinMaxNormalisation(keras.layers.Layer):
    """Per-sample min-max scaling of ``[B, H]`` to [0, 1]; a range below 1e-5 is widened by 1e-5."""

    def call(self, h: tf.Tensor) -> tf.Tensor:
        low = tf.reduce_min(h, axis=-1, keepdims=True)
        high = tf.reduce_max(h, axis=-1, keepdims=True)
        scale = high - low
        scale = tf.where(scale < MIN_RANGE, scale + MIN_RANGE, scale)
        return (h - low) / scale
