"""The TensorFlow maths of the gradient variants: ``scale_gradient`` and ``MaxNorm`` on the hidden
state.

MuZero's pseudocode (Schrittwieser et al., 2020, Appendix "Pseudocode") calls
``scale_gradient(hidden_state, 0.5)`` after each recurrent step. TensorFlow has no such function;
the paper's author defined it as ``x * s + tf.stop_gradient(x) * (1 - s)``: the forward value is
unchanged, the gradient is multiplied by ``s``. It is often confused with the optimizer's
``clipnorm``, with ``keras.constraints.MaxNorm`` (which changes forward values) and with
``stop_gradient`` (which is scale 0).

The registry's builders (:mod:`experiments.gradients.registry`) bind these when a job binds a
variant; this module imports nothing of the registry. Both functions work eagerly and inside a
compiled ``tf.function``.
"""

from __future__ import annotations

import keras
import tensorflow as tf

__all__ = ["maxnorm_hidden", "scale_gradient"]


def scale_gradient(x: tf.Tensor, scale: float | tf.Tensor) -> tf.Tensor:
    """Identity on the forward pass; multiplies the gradient by ``scale`` on the backward pass.

    This is the definition by the MuZero paper's author, ``x * s + stop_gradient(x) * (1 - s)``,
    equal to Sonnet's ``snt.scale_gradient``. ``scale=0`` is ``stop_gradient``; ``scale=1`` is the
    identity.

    Args:
      x: any float tensor, e.g. the hidden state ``[B, H]``.
      scale: the gradient factor (a Python float or scalar tensor).

    Returns:
      A tensor equal to ``x`` whose gradient is ``scale`` times the incoming gradient.
    """
    x = tf.convert_to_tensor(x)
    scale = tf.cast(scale, x.dtype)
    return x * scale + tf.stop_gradient(x) * (1.0 - scale)


def maxnorm_hidden(h: tf.Tensor, max_value: float) -> tf.Tensor:
    """Keras' own ``MaxNorm`` constraint applied to the hidden state, per sample.

    ``keras.constraints.MaxNorm(max_value, axis=-1)`` rescales each row of ``h`` (one sample, the
    norm taken over the feature axis) whose L2 norm exceeds ``max_value`` down to ``max_value``.
    Unlike :func:`scale_gradient` this changes forward values (whenever a norm is above the bound).

    Args:
      h: hidden state ``[B, H]``.
      max_value: the largest L2 norm a row may keep.

    Returns:
      ``[B, H]``, each row's norm at most ``max_value``.
    """
    return keras.constraints.MaxNorm(max_value=max_value, axis=-1)(h)
