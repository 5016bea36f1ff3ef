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
(``experiments.gradients.scale_gradient(x, scale)``, the library API).
"""

from __future__ import annotations

import importlib
from typing import Any

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

__all__ = [
    "ACTS_ON",
    "ENTRY_POINT_GROUP",
    "NETWORKS",
    "PLACEMENTS",
    "VARIANTS",
    "Built",
    "HiddenFn",
    "HiddenTransform",
    "KernelConstraint",
    "LearningRates",
    "LossWeights",
    "OptimizerOptions",
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

_MATHS = ("maxnorm_hidden", "scale_gradient")
"""The names this package takes from :mod:`~experiments.gradients.maths` when first asked for."""


def __getattr__(name: str) -> Any:
    """The TensorFlow maths, imported at first use (PEP 562) so the registries stay TF-free."""
    if name in _MATHS:
        return getattr(importlib.import_module("experiments.gradients.maths"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_MATHS})
