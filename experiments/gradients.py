"""The TensorFlow maths of the gradient variants (``scale_gradient``, ``MaxNorm`` on the hidden
state) and binding a registered variant or placement by name.

MuZero's pseudocode (Schrittwieser et al., 2020, Appendix "Pseudocode") calls
``scale_gradient(hidden_state, 0.5)`` after each recurrent step. TensorFlow has no such function;
the paper's author defined it as ``x * s + tf.stop_gradient(x) * (1 - s)``: the forward value is
unchanged, the gradient is multiplied by ``s``. It is often confused with the optimizer's
``clipnorm``, with ``keras.constraints.MaxNorm`` (which changes forward values) and with
``stop_gradient`` (which is scale 0).

The registries (names, parameters, summaries, builders) live in :mod:`experiments.variants`,
importable without TensorFlow; they are re-exported here with :func:`make_variant` and
:func:`get_placement`, which work eagerly and inside a compiled ``tf.function``.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from experiments.variants import (
    ACTS_ON,
    PLACEMENTS,
    VARIANTS,
    HiddenFn,
    ParamSpec,
    Placement,
    PlacementFn,
    Variant,
    VariantSpec,
)

__all__ = [
    "ACTS_ON",
    "PLACEMENTS",
    "VARIANTS",
    "HiddenFn",
    "ParamSpec",
    "Placement",
    "PlacementFn",
    "Variant",
    "VariantSpec",
    "get_placement",
    "make_variant",
    "maxnorm_hidden",
    "scale_gradient",
]


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


def make_variant(name: str, **params: Any) -> Variant:
    """Looks up a variant by name and binds its parameters.

    Args:
      name: a key of :data:`VARIANTS`.
      **params: the variant's parameters; missing ones take their defaults.

    Returns:
      The bound :class:`Variant`.

    Raises:
      ConfigError: unknown name, unknown parameter, or a parameter of the wrong type or range.
    """
    return VARIANTS.lookup(name).bind(**params)


def get_placement(name: str) -> Placement:
    """Looks up a placement by name; raises :class:`ConfigError` naming the valid choices."""
    return PLACEMENTS.lookup(name)
