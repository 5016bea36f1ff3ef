"""Gradient variants on MuZero's hidden state: the registries, their TensorFlow maths, the facts.

* :mod:`~experiments.gradients.variants`: ``VARIANTS`` (name, where it acts, parameters,
  builder; the built-ins and the plug-ins of ``ENTRY_POINT_GROUP``) and :func:`make_variant`; no
  TensorFlow until a variant is bound;
* :mod:`~experiments.gradients.seams`: what a bound :class:`Variant` holds, one callable type
  per seam it may act at (the hidden state, the optimizer, the learning rates, the dynamics'
  kernels, the unroll's loss weights);
* :mod:`~experiments.gradients.placements`: ``PLACEMENTS``, where the hidden-state transform goes
  in the unroll, and :func:`get_placement`; no TensorFlow;
* :mod:`~experiments.gradients.maths`: :func:`scale_gradient` and :func:`maxnorm_hidden`
  (TensorFlow), what the builders bind;
* :mod:`~experiments.gradients.explain`: the live measurements behind ``gradlab explain``
  (TensorFlow).

Importing this package does not import TensorFlow (``gradlab list``, planning and config
validation use the registries): :func:`scale_gradient` and :func:`maxnorm_hidden` are loaded from
:mod:`~experiments.gradients.maths` at their first use as attributes of the package
(``experiments.gradients.scale_gradient(x, scale)``, the library API), and so are the
measurements of :mod:`~experiments.gradients.explain` (PEP 562:
:func:`experiments.base.faces.lazy_face`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from experiments.base.faces import lazy_face
from experiments.gradients.placements import PLACEMENTS, Placement, PlacementFn, get_placement
from experiments.gradients.seams import (
    NETWORKS,
    HiddenFn,
    HiddenTransform,
    KernelConstraint,
    LearningRates,
    LossWeights,
    OptimizerOptions,
)
from experiments.gradients.variants import (
    ACTS_ON,
    ENTRY_POINT_GROUP,
    VARIANTS,
    Built,
    ParamSpec,
    Variant,
    VariantSpec,
    make_variant,
)

if TYPE_CHECKING:
    from experiments.gradients.explain import (
        PROBE_HIDDEN,
        FreezeRow,
        PlacementRow,
        VariantRow,
        confusions,
        explain_freeze,
        explain_placements,
        explain_variants,
        optimizer_update_norms,
        placement_gradients,
        placement_notes,
    )
    from experiments.gradients.maths import maxnorm_hidden, scale_gradient

__all__ = [
    "ACTS_ON",
    "Built",
    "ENTRY_POINT_GROUP",
    "FreezeRow",
    "HiddenFn",
    "HiddenTransform",
    "KernelConstraint",
    "LearningRates",
    "LossWeights",
    "NETWORKS",
    "OptimizerOptions",
    "PLACEMENTS",
    "PROBE_HIDDEN",
    "ParamSpec",
    "Placement",
    "PlacementFn",
    "PlacementRow",
    "VARIANTS",
    "Variant",
    "VariantRow",
    "VariantSpec",
    "confusions",
    "explain_freeze",
    "explain_placements",
    "explain_variants",
    "get_placement",
    "make_variant",
    "maxnorm_hidden",
    "optimizer_update_norms",
    "placement_gradients",
    "placement_notes",
    "scale_gradient",
]

_LAZY = {
    "explain": (
        "PROBE_HIDDEN",
        "FreezeRow",
        "PlacementRow",
        "VariantRow",
        "confusions",
        "explain_freeze",
        "explain_placements",
        "explain_variants",
        "optimizer_update_norms",
        "placement_gradients",
        "placement_notes",
    ),
    "maths": ("maxnorm_hidden", "scale_gradient"),
}
"""The names this package takes from its TensorFlow modules when first asked for."""

__getattr__, __dir__ = lazy_face(
    __name__, _LAZY, [name for names in _LAZY.values() for name in names]
)
