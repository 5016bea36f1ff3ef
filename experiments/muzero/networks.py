"""MuZero's three networks as small Keras models, and the hidden-state normalisation.

* representation ``h_0 = f_repr(o)``: observation ``[B, O]`` -> hidden state ``[B, H]``; an MLP
  on flat observations, and on image observations ``(height, width, channels)`` (taken flat and
  reshaped inside) a small convolutional torso first: MinAtar's own baseline (Young & Tian,
  2019), one 3x3 convolution with 16 filters, stride 1, no padding, ReLU, flattened;
* dynamics ``h_k, r_k = g(h_{k-1}, a_k)``: hidden state and one-hot action -> next hidden state and
  reward logits ``[B, R]``;
* prediction ``p_k, v_k = f(h_k)``: hidden state -> policy logits ``[B, A]`` and value logits
  ``[B, V]``.

Every hidden state is normalised (Appendix G of the paper: per sample to [0, 1] by min-max, here
with a guard against a zero range, :mod:`experiments.muzero.normalisation`); ``none``, ``tanh``
and ``layernorm`` are the alternatives (:data:`experiments.muzero.options.NORMALISATIONS`).
The output layers of the heads start at zero so that initial predictions are exactly neutral.
The dynamics and prediction networks are MLPs on the hidden state whatever the observation.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

from experiments.base.errors import ConfigError
from experiments.gradients import HiddenFn, Placement
from experiments.muzero.config import NetworkConfig
from experiments.muzero.options import NORMALISATIONS
from experiments.muzero.support import Support

__all__ = [
    "CONV_FILTERS",
    "Networks",
    "normalisation_layer",
    "recurrent_step",
]

CONV_FILTERS = 16
"""Filters of the image torso's one 3x3 convolution (MinAtar's baseline)."""


def normalisation_layer(kind: str) -> keras.layers.Layer:
    """The layer for one of :data:`~experiments.muzero.options.NORMALISATIONS`."""
    return NORMALISATIONS.lookup(kind).build()


class Networks:
    """The representation, dynamics and prediction networks of one agent.

    Attributes:
      representation: ``keras.Model`` ``[B, O] -> [B, H]`` (flat observations, also for images).
      dynamics: ``keras.Model`` ``([B, H], [B, A]) -> ([B, H], [B, R])``.
      prediction: ``keras.Model`` ``[B, H] -> ([B, A], [B, V])`` (policy logits, value logits).
      value_support, reward_support: how the value and reward heads encode scalars.
      num_actions: A.
      observation_shape: the shape of one observation, ``(O,)`` or ``(height, width, channels)``.
    """

    def __init__(
        self,
        config: NetworkConfig,
        *,
        observation_size: int,
        num_actions: int,
        seed: int,
        kernel_constraint: keras.constraints.Constraint | None = None,
        observation_shape: tuple[int, ...] | None = None,
    ) -> None:
        """Builds the networks.

        Args:
          config: sizes and options.
          observation_size: O, the flat observation size.
          num_actions: A.
          seed: seeds every initializer (drawn one after the other from it).
          kernel_constraint: applied to every Dense kernel of the dynamics network.
          observation_shape: ``(height, width, channels)`` for a convolutional representation;
            ``None`` or ``(O,)`` for the MLP. Its product must be ``observation_size``.

        Raises:
          ConfigError: a support size left ``None`` (resolve it first with
            ``experiments.muzero.support.resolve_support_sizes``), or an observation shape that
            is neither flat nor an image of ``observation_size`` values.
        """
        shape = tuple(observation_shape or (observation_size,))
        if len(shape) not in (1, 3) or int(np.prod(shape)) != observation_size:
            raise ConfigError(
                f"observation shape {shape} is not supported for {observation_size} values; "
                "expected (O,) or (height, width, channels)"
            )
        for name in ("value_support_size", "reward_support_size"):
            if getattr(config, name) is None:
                raise ConfigError(
                    f"network.{name}=None must be resolved before building the networks; "
                    "use experiments.muzero.support.resolve_support_sizes"
                )
        self.config = config
        self.num_actions = num_actions
        self.observation_size = observation_size
        self.observation_shape = shape
        self.value_support = Support(config.support, config.value_support_size)
        self.reward_support = Support(config.support, config.reward_support_size)
        seeds = iter(np.random.default_rng(seed).integers(0, 2**31 - 1, size=64).tolist())
        width, hidden = config.width, config.hidden_size

        def dense(units: int, *, activation: Any = None, zero: bool = False, **kw: Any):
            init = "zeros" if zero else keras.initializers.GlorotUniform(seed=next(seeds))
            return keras.layers.Dense(units, activation=activation, kernel_initializer=init, **kw)

        def trunk(x: Any, **kw: Any) -> Any:
            for _ in range(config.depth):
                x = dense(width, activation="relu", **kw)(x)
            return x

        obs = keras.Input((observation_size,), name="observation")
        x = obs
        if len(shape) == 3:
            x = keras.layers.Reshape(shape)(x)
            init = keras.initializers.GlorotUniform(seed=next(seeds))
            x = keras.layers.Conv2D(
                CONV_FILTERS, 3, strides=1, activation="relu", kernel_initializer=init
            )(x)
            x = keras.layers.Flatten()(x)
        h0 = normalisation_layer(config.normalisation)(dense(hidden)(trunk(x)))
        self.representation = keras.Model(obs, h0, name="representation")

        h_in = keras.Input((hidden,), name="hidden")
        action = keras.Input((num_actions,), name="action")
        c = {"kernel_constraint": kernel_constraint}
        x = trunk(keras.layers.Concatenate()([h_in, action]), **c)
        h_next = normalisation_layer(config.normalisation)(dense(hidden, **c)(x))
        reward = dense(self.reward_support.num_outputs, zero=True, **c)(x)
        self.dynamics = keras.Model([h_in, action], [h_next, reward], name="dynamics")

        h_pred = keras.Input((hidden,), name="hidden")
        x = trunk(h_pred)
        policy = dense(num_actions, zero=True)(x)
        value = dense(self.value_support.num_outputs, zero=True)(x)
        self.prediction = keras.Model(h_pred, [policy, value], name="prediction")

    @property
    def variables(self) -> list[tf.Variable]:
        """All variables, in the order of :attr:`trainable_variables` (they are all trainable)."""
        return self.representation.variables + self.dynamics.variables + self.prediction.variables

    @property
    def trainable_variables(self) -> list[tf.Variable]:
        """All trainable variables: representation, then dynamics, then prediction."""
        return (
            self.representation.trainable_variables
            + self.dynamics.trainable_variables
            + self.prediction.trainable_variables
        )

    def initial_inference(self, observation: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """``[B, O]`` or ``[B, *observation_shape]`` -> hidden ``[B, H]``, scalar value ``[B]``,
        policy logits ``[B, A]``."""
        observation = tf.convert_to_tensor(observation, tf.float32)
        hidden = self.representation(tf.reshape(observation, [-1, self.observation_size]))
        policy, value = self.prediction(hidden)
        return hidden, self.value_support.to_scalar(value), policy

    def recurrent_inference(
        self, hidden: tf.Tensor, action: tf.Tensor
    ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
        """``[B, H]``, ``[B]`` int -> next hidden, scalar reward, scalar value, policy logits."""
        next_hidden, reward, value, policy = recurrent_step(self, hidden, action)
        return (
            next_hidden,
            self.reward_support.to_scalar(reward),
            self.value_support.to_scalar(value),
            policy,
        )


def recurrent_step(
    networks: Networks,
    hidden: tf.Tensor,
    action: tf.Tensor,
    *,
    transform: HiddenFn | None = None,
    placement: Placement | None = None,
    step: int | tf.Tensor = 1,
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
    """One step of the learned model with the variant's transform where its placement puts it:
    the one model step of the learner's unroll, the search and self-play.

    ::

        h_in = placement.dynamics_input(hidden, transform, step)
        h_next, r = dynamics(h_in, one_hot(action))
        h_next = placement.dynamics_output(h_next, transform, step)   # what the heads see
        p, v = prediction(h_next)

    ``transform=None`` is the bare model: no placement call at all (a gradient-only transform
    left out of the search rather than applied, since ``x * 0.3 + x * 0.7`` is not always ``x``
    in float32).

    Args:
      networks: the agent's networks.
      hidden: ``[B, H]``, the state the previous step returned (or the representation's).
      action: ``[B]`` int.
      transform: the variant's hidden-state transform (``Variant.hidden``), or None.
      placement: where ``transform`` goes; required with a transform.
      step: the 1-based index of this dynamics call: a Python int (the training unroll) or an
        int tensor ``[B]`` (the search, each row at its own depth).

    Returns:
      ``h_next [B, H]``, reward logits ``[B, R]``, value logits ``[B, V]``, policy logits
      ``[B, A]``.
    """
    h_in = tf.convert_to_tensor(hidden, tf.float32)
    if transform is not None:
        if placement is None:
            raise ValueError("recurrent_step: a transform needs a placement")
        step = step if isinstance(step, int) else tf.cast(step, tf.int32)
        h_in = placement.dynamics_input(h_in, transform, step)
    one_hot = tf.one_hot(tf.cast(action, tf.int32), networks.num_actions)
    next_hidden, reward = networks.dynamics([h_in, one_hot])
    if transform is not None:
        next_hidden = placement.dynamics_output(next_hidden, transform, step)
    policy, value = networks.prediction(next_hidden)
    return next_hidden, reward, value, policy
