"""S seeds' networks as one set of stacked weights: the seed axis of issue 41.

:class:`StackedNetworks` holds, for S runs of one configuration that differ only in their seed,
every weight of :class:`~experiments.muzero.networks.Networks` with a leading seed axis
(``[S, *shape]``), initialised from each seed's own ``Networks`` (so seed s starts from exactly
the weights a run of its own would). Its three networks take and return *flat* rows, seed-major:
the ``N = S * B`` rows of a batch are seed 0's B rows, then seed 1's, and so on. Only the layers
with weights see the seed axis: a Dense layer reshapes its rows to ``[S, B, in]`` and multiplies
by its ``[S, in, out]`` kernel in one batched matmul; the convolution of the image torso does the
same on 3x3 patches. Everything per row (normalisation, the variant's transform, the support's
encodings and losses, the search's trees) runs unchanged on the flat rows, so the learner's
unroll (:meth:`experiments.muzero.learner.Learner.unroll`), ``recurrent_step`` and the search's
:class:`~experiments.muzero.selfplay.Inference` take a ``StackedNetworks`` as they take one
``Networks``: one traced and compiled function, with one op per layer, for S seeds.

A seed's rows never meet another seed's in any op (batched matmuls, per-row functions), so seed
s computes the same numbers whichever seeds share its group (``tests/test_seed_axis.py``: bit for
bit, alone and among others). Against a run of its own (one ``Networks``), the numbers agree to
float32 rounding, not bit for bit: a batched matmul and a patch matmul sum in another order than
Keras' Dense and Conv2D may.

Not on the seed axis: ``network.normalisation=layernorm`` (its scale and offset are weights:
refused with :class:`~experiments.base.errors.ConfigError`), and kernel constraints other than
Keras' ``MaxNorm`` (the variants' only one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from experiments.base.errors import ConfigError
from experiments.muzero.networks import Networks, normalisation_layer
from experiments.muzero.options import SEED_AXIS_NORMALISATIONS

__all__ = ["SEED_AXIS_NORMALISATIONS", "StackedNetworks", "StackedPart"]


def _stacked_variable(variables: Sequence[keras.Variable]) -> keras.Variable:
    """One ``[S, *shape]`` variable from the same variable of S networks (its constraint, if a
    ``MaxNorm``, moved one axis on so that each seed's kernel is constrained as before)."""
    first = variables[0]
    constraint = first.constraint
    if constraint is not None:
        if not isinstance(constraint, keras.constraints.MaxNorm):
            raise ConfigError(
                f"kernel constraint {type(constraint).__name__} is not supported on the seed "
                "axis; valid: MaxNorm"
            )
        if constraint.axis not in (0, [0], (0,)) or len(first.shape) != 2:
            raise ConfigError(
                f"MaxNorm(axis={constraint.axis}) on a {len(first.shape)}-d weight is not "
                "supported on the seed axis; valid: axis=0 on a Dense kernel"
            )
        constraint = SeedMaxNorm(constraint.max_value)
    value = np.stack([np.asarray(v.numpy()) for v in variables])
    name = first.path.replace("/", "_")
    stacked = keras.Variable(value, trainable=True, name=f"stacked_{name}")
    stacked.constraint = constraint  # keras.Variable's constructor takes no constraint
    return stacked


def sum_over_rows(x: tf.Tensor) -> tf.Tensor:
    """``[S, N, M]`` -> ``[S, 1, M]``, the sum over the middle axis, as a batched matmul by ones.

    A reduction's order of summation may depend on the whole tensor's shape (TensorFlow's and
    XLA's kernels take a ``[1, N, M]`` reduction for a ``[N, M]`` one and pick their loops by
    size), so seed s's sum could change with the group's size; a batched matmul computes each
    seed's slice alike whatever S (``tests/test_seed_axis.py``)."""
    ones = tf.ones([tf.shape(x)[0], 2, tf.shape(x)[1]], x.dtype)
    return tf.matmul(ones, x)[:, :1, :]


@tf.custom_gradient
def _add_bias(y: tf.Tensor, bias: tf.Tensor):
    """``y [S, B, out] + bias [S, out]`` per seed; the bias's gradient summed over the rows by
    :func:`sum_over_rows` (the broadcast's own gradient is a shape-dependent reduction)."""

    def gradient(upstream: tf.Tensor):
        return upstream, tf.reshape(sum_over_rows(upstream), tf.shape(bias))

    return y + bias[:, None, :], gradient


class SeedMaxNorm(keras.constraints.Constraint):
    """Keras' ``MaxNorm(max_value, axis=0)`` on each seed's kernel of a stacked ``[S, in, out]``
    kernel: Keras' formula, ``w * clip(norm, 0, max_value) / (epsilon + norm)`` with each
    column's norm over ``in``, its sum taken by :func:`sum_over_rows`."""

    def __init__(self, max_value: float) -> None:
        self.max_value = max_value

    def __call__(self, w):
        w = tf.convert_to_tensor(w)
        norms = tf.sqrt(sum_over_rows(tf.square(w)))
        desired = tf.clip_by_value(norms, 0.0, self.max_value)
        return w * (desired / (keras.backend.epsilon() + norms))

    def get_config(self) -> dict:
        return {"max_value": self.max_value}


class StackedPart:
    """One of the three networks on the seed axis: a callable on flat rows, with its variables.

    Attributes:
      trainable_variables: the stacked ``[S, *shape]`` variables, in the order of the Keras
        model's (kernel, bias of each layer in turn).
    """

    def __init__(
        self, parts: Sequence[keras.Model], seeds: int, forward: Callable[..., Any]
    ) -> None:
        per_network = [part.trainable_variables for part in parts]
        self.trainable_variables = [_stacked_variable(vs) for vs in zip(*per_network, strict=True)]
        self.seeds = seeds
        self._forward = forward

    @property
    def variables(self) -> list[keras.Variable]:
        return self.trainable_variables

    def __call__(self, inputs):
        return self._forward(self, inputs)

    def dense(self, x: tf.Tensor, index: int, activation=None) -> tf.Tensor:
        """Dense layer ``index`` (kernel ``2 * index``, bias ``2 * index + 1``) on flat rows
        ``[S * B, in]``: ``x @ kernel + bias`` per seed, then ``activation``."""
        kernel = self.trainable_variables[2 * index]
        bias = self.trainable_variables[2 * index + 1]
        rows = tf.reshape(x, [self.seeds, -1, x.shape[-1]])
        y = _add_bias(tf.matmul(rows, kernel), tf.convert_to_tensor(bias))
        if activation is not None:
            y = activation(y)
        return tf.reshape(y, [-1, kernel.shape[-1]])

    def convolution(self, images: tf.Tensor, index: int) -> tf.Tensor:
        """The image torso's 3x3 convolution (stride 1, no padding, ReLU) as layer ``index``, on
        ``[S * B, height, width, channels]``, flattened as Keras' ``Flatten`` does: each seed's
        3x3 patches times its ``[9 * channels, filters]`` kernel in one batched matmul."""
        kernel = self.trainable_variables[2 * index]  # [S, 3, 3, C, F]
        bias = self.trainable_variables[2 * index + 1]  # [S, F]
        patches = tf.image.extract_patches(
            images, sizes=[1, 3, 3, 1], strides=[1, 1, 1, 1], rates=[1, 1, 1, 1], padding="VALID"
        )
        height, width, size = patches.shape[1], patches.shape[2], patches.shape[3]
        filters = kernel.shape[-1]
        rows = tf.reshape(patches, [self.seeds, -1, size])
        y = tf.matmul(rows, tf.reshape(kernel, [self.seeds, size, filters]))
        y = _add_bias(y, tf.convert_to_tensor(bias))
        y = tf.nn.relu(y)
        return tf.reshape(y, [-1, height * width * filters])


class StackedNetworks:
    """S seeds' representation, dynamics and prediction networks with stacked weights.

    Built from each seed's own :class:`~experiments.muzero.networks.Networks`, in the group's
    order. The attributes are those of
    :class:`~experiments.muzero.networks.Networks`, plus ``seeds`` (S); ``representation``,
    ``dynamics`` and ``prediction`` take and return flat seed-major rows (``[S * B, ...]``).
    """

    def __init__(self, networks: Sequence[Networks]) -> None:
        if not networks:
            raise ValueError("StackedNetworks needs at least one seed's networks")
        first = networks[0]
        for other in networks[1:]:
            same = (
                other.config == first.config
                and other.observation_shape == first.observation_shape
                and other.num_actions == first.num_actions
            )
            if not same:
                raise ConfigError(
                    "the seeds of one group must share their networks' configuration and shapes"
                )
        if first.config.normalisation not in SEED_AXIS_NORMALISATIONS:
            raise ConfigError(
                f"network.normalisation={first.config.normalisation} is not supported on the seed "
                f"axis; valid: {', '.join(SEED_AXIS_NORMALISATIONS)}"
            )
        self.seeds = len(networks)
        self.config = first.config
        self.num_actions = first.num_actions
        self.observation_size = first.observation_size
        self.observation_shape = first.observation_shape
        self.value_support = first.value_support
        self.reward_support = first.reward_support
        self._normalise = normalisation_layer(first.config.normalisation)
        self.representation = StackedPart(
            [n.representation for n in networks], self.seeds, self._representation
        )
        self.dynamics = StackedPart([n.dynamics for n in networks], self.seeds, self._dynamics)
        self.prediction = StackedPart(
            [n.prediction for n in networks], self.seeds, self._prediction
        )

    # Networks' own accessors: they read only the three networks and the supports, which a
    # StackedNetworks has under the same names (flat seed-major rows in and out).
    variables = Networks.variables
    trainable_variables = Networks.trainable_variables
    initial_inference = Networks.initial_inference
    recurrent_inference = Networks.recurrent_inference

    def seed_weights(self, seed_index: int) -> list[np.ndarray]:
        """Seed ``seed_index``'s weights, in the order of ``Networks.variables``."""
        return [np.asarray(v.numpy())[seed_index] for v in self.variables]

    def _trunk(self, part: StackedPart, x: tf.Tensor, start: int) -> tuple[tf.Tensor, int]:
        """``config.depth`` ReLU Dense layers of ``part`` from its layer ``start``; returns the
        output and the next layer's index."""
        for i in range(self.config.depth):
            x = part.dense(x, start + i, tf.nn.relu)
        return x, start + self.config.depth

    def _representation(self, part: StackedPart, observations: tf.Tensor) -> tf.Tensor:
        x = tf.convert_to_tensor(observations, tf.float32)
        layer = 0
        if len(self.observation_shape) == 3:
            x = part.convolution(tf.reshape(x, [-1, *self.observation_shape]), 0)
            layer = 1
        x, layer = self._trunk(part, x, layer)
        return self._normalise(part.dense(x, layer))

    def _dynamics(self, part: StackedPart, inputs) -> tuple[tf.Tensor, tf.Tensor]:
        hidden, action = inputs
        x = tf.concat([tf.convert_to_tensor(hidden, tf.float32), action], axis=-1)
        x, layer = self._trunk(part, x, 0)
        return self._normalise(part.dense(x, layer)), part.dense(x, layer + 1)

    def _prediction(self, part: StackedPart, hidden: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        x, layer = self._trunk(part, tf.convert_to_tensor(hidden, tf.float32), 0)
        return part.dense(x, layer), part.dense(x, layer + 1)
