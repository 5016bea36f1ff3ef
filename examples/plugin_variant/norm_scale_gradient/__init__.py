"""``norm_scale_gradient``: MuZero's ``scale_gradient`` whose scale depends on each sample's
hidden-state norm, installed into gradlab as a plug-in (entry-point group ``gradlab.variants``).

Forward values are unchanged; the gradient through a sample's hidden state ``h`` is multiplied by
``min(1, max_norm / ||h||)`` (the norm over the features, held constant in the backward pass):
states inside the ball of radius ``max_norm`` pass their gradient untouched, larger ones have it
shrunk in proportion. It is the backward-only counterpart of Keras' ``MaxNorm`` on the hidden
state (``variant=maxnorm``, which changes forward values), and ``scale_gradient`` with a per-sample
scale instead of a constant one.

Importing this module does not import TensorFlow (``gradlab list`` reads :data:`SPEC`); the
builder does, when a job binds the variant.
"""

from __future__ import annotations

import functools
from typing import Any

from experiments.gradients import Built, ParamSpec, VariantSpec

__all__ = ["SPEC", "norm_scale_gradient"]


def norm_scale_gradient(h: Any, *, max_norm: float) -> Any:
    """Identity forward; the gradient of row ``i`` of ``h`` ``[B, H]`` times
    ``min(1, max_norm / ||h_i||)`` ``[B, 1]`` (TensorFlow, eager or compiled)."""
    import tensorflow as tf

    from experiments.gradients import scale_gradient

    norm = tf.norm(h, axis=-1, keepdims=True)  # [B, 1]
    scale = tf.stop_gradient(max_norm / tf.maximum(norm, max_norm))  # [B, 1], in (0, 1]
    return scale_gradient(h, scale)


def _build(max_norm: float) -> Built:
    return Built(functools.partial(norm_scale_gradient, max_norm=max_norm))


SPEC = VariantSpec(
    name="norm_scale_gradient",
    acts_on="gradient",
    scope="per sample",
    summary="scale_gradient with a per-sample scale min(1, max_norm/||h||): forward unchanged, "
    "the gradient through a large hidden state shrunk",
    params=(ParamSpec("max_norm", 2.0, 0.0, False, "hidden-state norm above which it shrinks"),),
    build=_build,
)
"""The variant, its parameter declared once (``variant.max_norm=...``)."""
