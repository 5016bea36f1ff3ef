"""Models for the search tests: NumPy models for ``run_search`` and their TensorFlow twins.

Every model is ``(hidden [B, H], action [B], step [B]) -> (next_hidden, reward, value, logits)``;
a twin computes the same function with TensorFlow ops (equal up to float rounding: ``tanh`` and
``exp`` differ from NumPy's in the last bit, and XLA fuses multiply-adds).
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from experiments.muzero.config import NetworkConfig
from experiments.muzero.networks import Networks

# ---------------------------------------------------------------------------------------------
# NumPy models.


def two_armed(hidden: np.ndarray, action: np.ndarray, step: np.ndarray):
    """Action 1 pays reward 1, action 0 pays 0, everywhere; value 0; uniform priors over 2."""
    batch = hidden.shape[0]
    return hidden, (action == 1).astype(np.float32), np.zeros(batch), np.zeros((batch, 2))


def chain(hidden: np.ndarray, action: np.ndarray, step: np.ndarray):
    """One action; reward 1 per step, value 4 at every leaf."""
    batch = hidden.shape[0]
    return hidden, np.ones(batch), np.full(batch, 4.0), np.zeros((batch, 1))


def _random_weights(num_actions: int, width: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "mix": rng.normal(size=(width, width)) / math.sqrt(width),
        "embed": rng.normal(size=(num_actions, width)),
        "reward": rng.normal(size=(num_actions, width)),
        "value": rng.normal(size=width),
        "logit": rng.normal(size=(width, num_actions)) * 2.0,
    }


PRIORS = ("random", "coarse", "uniform")
"""How a random model's policy logits are made: as drawn, floored to integers (many priors tie),
or all 0 (uniform priors: every choice among unvisited children is a tie)."""


def _shape_logits(logits, priors: str, floor, zeros_like):
    if priors == "coarse":
        return floor(logits)
    if priors == "uniform":
        return zeros_like(logits)
    return logits


def random_model(
    num_actions: int, width: int, seed: int, *, step_reward: float = 0.0, priors: str = "random"
):
    """A deterministic model whose row b depends on row b only, bit for bit (no BLAS).

    ``step_reward`` adds ``step_reward * step`` to every reward (a model that sees the step);
    ``priors`` is one of :data:`PRIORS`.
    """
    w = _random_weights(num_actions, width, seed)

    def matvec(h: np.ndarray, m: np.ndarray) -> np.ndarray:  # h [B, H] @ m [H, K], row-wise
        out = h[:, :1] * m[0]
        for k in range(1, m.shape[0]):
            out = out + h[:, k : k + 1] * m[k]
        return out

    def fn(hidden: np.ndarray, action: np.ndarray, step: np.ndarray):
        nxt = np.tanh(matvec(hidden, w["mix"]) + w["embed"][action])
        reward = np.tanh((hidden * w["reward"][action]).sum(axis=1)) + step_reward * step
        value = 2.0 * np.tanh(matvec(nxt, w["value"][:, None])[:, 0])
        logits = _shape_logits(matvec(nxt, w["logit"]), priors, np.floor, np.zeros_like)
        return nxt, reward, value, logits

    return fn


# ---------------------------------------------------------------------------------------------
# TensorFlow twins (hidden states float32 in the tree, arithmetic in float64).


def two_armed_tf(hidden, action, step):
    batch = tf.shape(hidden)[0]
    reward = tf.cast(tf.equal(action, 1), tf.float32)
    return hidden, reward, tf.zeros([batch]), tf.zeros([batch, 2])


def chain_tf(hidden, action, step):
    batch = tf.shape(hidden)[0]
    return hidden, tf.ones([batch]), tf.fill([batch], 4.0), tf.zeros([batch, 1])


class RandomModelTF:
    """The twin of :func:`random_model`, its weights variables: :meth:`load` a seed, no retrace.

    Float64 arithmetic; the next hidden state has the dtype of the hidden state given.
    """

    def __init__(
        self, num_actions: int, width: int, *, step_reward: float = 0.0, priors: str = "random"
    ) -> None:
        self.num_actions, self.width, self.step_reward = num_actions, width, step_reward
        self.priors = priors
        shapes = {k: v.shape for k, v in _random_weights(num_actions, width, 0).items()}
        self.w = {k: tf.Variable(tf.zeros(shape, tf.float64)) for k, shape in shapes.items()}

    def load(self, seed: int) -> RandomModelTF:
        for key, value in _random_weights(self.num_actions, self.width, seed).items():
            self.w[key].assign(value)
        return self

    def __call__(self, hidden, action, step):
        w = self.w

        def matvec(h, m):
            out = h[:, :1] * m[0]
            for k in range(1, m.shape[0]):
                out = out + h[:, k : k + 1] * m[k]
            return out

        h = tf.cast(hidden, tf.float64)
        nxt = tf.tanh(matvec(h, w["mix"]) + tf.gather(w["embed"], action))
        reward = tf.tanh(tf.reduce_sum(h * tf.gather(w["reward"], action), axis=1))
        reward = reward + self.step_reward * tf.cast(step, tf.float64)
        value = 2.0 * tf.tanh(matvec(nxt, w["value"][:, None])[:, 0])
        logits = _shape_logits(matvec(nxt, w["logit"]), self.priors, tf.floor, tf.zeros_like)
        return tf.cast(nxt, hidden.dtype), reward, value, logits


def roots_initial_fn(hidden_size: int):
    """``initial_fn`` for searches from given roots: observation = ``[hidden, logits]``."""

    def initial(observations):
        batch = tf.shape(observations)[0]
        return observations[:, :hidden_size], tf.zeros([batch]), observations[:, hidden_size:]

    return initial


def as_numpy(fn):
    """A TF model as a NumPy ``recurrent_fn``: float32 hidden in, arrays out."""

    def numpy_fn(hidden, action, step):
        outputs = fn(tf.constant(hidden, tf.float32), tf.constant(action), tf.constant(step))
        return tuple(np.asarray(t) for t in outputs)

    return numpy_fn


# ---------------------------------------------------------------------------------------------
# Random Keras networks (the project's own architecture, every weight drawn at random).


def random_networks(
    *, observation_size: int, num_actions: int, hidden_size: int = 8, width: int = 16
) -> Networks:
    """Small :class:`Networks`; call :func:`randomize` to draw all their weights."""
    config = NetworkConfig(hidden_size=hidden_size, width=width)
    return Networks(config, observation_size=observation_size, num_actions=num_actions, seed=0)


def randomize(networks: Networks, seed: int, scale: float = 1.0) -> None:
    """Draws every weight (the zero-initialised heads too) from N(0, scale^2 / fan-in)."""
    rng = np.random.default_rng(seed)
    for variable in networks.trainable_variables:
        shape = tuple(variable.shape)
        fan_in = shape[0] if len(shape) > 1 else 1
        variable.assign(rng.normal(size=shape) * scale / math.sqrt(fan_in))
