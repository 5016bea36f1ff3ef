"""Temporary: the registries moved to :mod:`experiments.gradients` (``variants``, ``placements``).

Kept only while ``experiments/config.py`` and ``cli/jobs.py`` still import from here; it goes when
they import :mod:`experiments.gradients` instead. New code imports :mod:`experiments.gradients`.
Importable without TensorFlow, as before.
"""

from __future__ import annotations

from experiments.gradients import (
    ACTS_ON,
    NETWORKS,
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
    "NETWORKS",
    "PLACEMENTS",
    "VARIANTS",
    "HiddenFn",
    "ParamSpec",
    "Placement",
    "PlacementFn",
    "Variant",
    "VariantSpec",
]
