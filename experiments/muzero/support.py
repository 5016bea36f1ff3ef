"""Value and reward supports: the invertible transform h(x), two-hot targets, scalar heads.

MuZero (Schrittwieser et al., 2020, Appendix F) predicts values and rewards as categorical
distributions over the integers ``-S..S`` after scaling them with the invertible transform
``h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x`` (Pohlen et al., 2018), eps = 0.001. A scalar
target ``x`` becomes the two-hot distribution on the two integers around ``h(x)``; a prediction
becomes a scalar by taking the expectation over the bins and inverting ``h`` in closed form.

The support size S must cover the task: a categorical head represents ``|x|`` up to
``h^-1(S)`` only (two-hot targets beyond it are clipped). :mod:`experiments.muzero.support_sizes`
(without TensorFlow, so a run's config is checked before it starts) sizes them; its names are
re-exported here.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from experiments.base.errors import unknown_choice
from experiments.muzero.support_sizes import (
    EPSILON,
    FALLBACK_SUPPORT_SIZE,
    SupportSizes,
    covering_size,
    h_scalar,
    resolve_support_sizes,
    value_bound,
)

__all__ = [
    "EPSILON",
    "FALLBACK_SUPPORT_SIZE",
    "Support",
    "SupportSizes",
    "covering_size",
    "h_inverse",
    "h_scalar",
    "h_transform",
    "resolve_support_sizes",
    "two_hot",
    "value_bound",
]

"""S of an automatic head whose task declares no bound: MuZero's Atari heads (Appendix F: 601
bins for value and reward), which cover |x| up to h^-1(300) = 5.9e4."""


def h_transform(x: tf.Tensor) -> tf.Tensor:
    """``h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x``, elementwise."""
    x = tf.convert_to_tensor(x, tf.float32)
    return tf.sign(x) * (tf.sqrt(tf.abs(x) + 1.0) - 1.0) + EPSILON * x


def h_inverse(y: tf.Tensor) -> tf.Tensor:
    """The closed-form inverse of :func:`h_transform`, elementwise.

    ``h^-1(y) = sign(y) (((sqrt(1 + 4 eps (|y| + 1 + eps)) - 1) / (2 eps))^2 - 1)``, evaluated as
    ``root = 2 (|y| + 1 + eps) / (1 + sqrt(...))`` (the same number, multiplied through by the
    conjugate) to avoid the cancellation in ``sqrt(...) - 1``: in float32 the textbook form gives
    ``h^-1(0) = -2.6e-5``, this one ``2.4e-7``.
    """
    y = tf.convert_to_tensor(y, tf.float32)
    inner = tf.abs(y) + 1.0 + EPSILON
    root = 2.0 * inner / (1.0 + tf.sqrt(1.0 + 4.0 * EPSILON * inner))
    return tf.sign(y) * (tf.square(root) - 1.0)


def two_hot(y: tf.Tensor, size: int) -> tf.Tensor:
    """Two-hot encoding of already-transformed values on the integer bins ``-size..size``.

    Args:
      y: ``[B]`` values (clipped to ``[-size, size]``).
      size: S.

    Returns:
      ``[B, 2S+1]`` distributions whose mean over the bins is ``clip(y)``.
    """
    y = tf.clip_by_value(tf.convert_to_tensor(y, tf.float32), -float(size), float(size))
    low = tf.floor(y)
    upper_weight = y - low
    low_index = tf.cast(low, tf.int32) + size
    depth = 2 * size + 1
    # At y == size the upper index is out of range: tf.one_hot gives zeros there, weight 0 anyway.
    return (
        tf.one_hot(low_index, depth) * (1.0 - upper_weight)[:, None]
        + tf.one_hot(low_index + 1, depth) * upper_weight[:, None]
    )


@dataclasses.dataclass(frozen=True)
class Support:
    """How a value or reward head encodes scalars.

    Attributes:
      kind: ``categorical`` (2S+1 logits over h(x), two-hot cross-entropy) or ``scalar`` (one
        output, squared error).
      size: S (ignored by ``scalar``).
    """

    kind: str
    size: int

    def __post_init__(self) -> None:
        if self.kind not in ("categorical", "scalar"):
            raise unknown_choice("support", self.kind, ("categorical", "scalar"))

    @property
    def num_outputs(self) -> int:
        """Width of the head: 2S+1 or 1."""
        return 2 * self.size + 1 if self.kind == "categorical" else 1

    def to_scalar(self, logits: tf.Tensor) -> tf.Tensor:
        """``[B, num_outputs]`` head outputs -> ``[B]`` scalars."""
        if self.kind == "scalar":
            return logits[:, 0]
        bins = tf.range(-self.size, self.size + 1, dtype=tf.float32)
        return h_inverse(tf.reduce_sum(tf.nn.softmax(logits, axis=-1) * bins, axis=-1))

    def encode(self, x: tf.Tensor) -> tf.Tensor:
        """``[B]`` scalars -> ``[B, num_outputs]`` targets (two-hot of h(x), or x itself)."""
        x = tf.convert_to_tensor(x, tf.float32)
        if self.kind == "scalar":
            return x[:, None]
        return two_hot(h_transform(x), self.size)

    def loss(self, logits: tf.Tensor, x: tf.Tensor) -> tf.Tensor:
        """Per-sample loss ``[B]`` of head outputs ``[B, num_outputs]`` against scalars ``[B]``."""
        target = tf.stop_gradient(self.encode(x))
        if self.kind == "scalar":
            return tf.square(logits[:, 0] - target[:, 0])
        return tf.nn.softmax_cross_entropy_with_logits(labels=target, logits=logits)
