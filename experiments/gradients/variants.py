"""The registry of gradient variants: names, parameters, summaries, builders.

Importable without TensorFlow (``gradlab list``, planning and config validation read it): a
variant's builder imports TensorFlow and the maths of :mod:`experiments.gradients.maths` (which
imports nothing of this module) only when a job binds it. **Adding a variant is one**
:class:`VariantSpec` **entry in** ``VARIANTS`` (its builder beside it) **plus one test**: its
Hydra config node (``variant=<name>``, with one setting per parameter) is derived from the entry,
and the parametrised tests pick it up. An installed distribution adds one the same way, through
the entry-point group :data:`ENTRY_POINT_GROUP`
(:class:`~experiments.base.plugins.PluggableRegistry`).

MuZero's pseudocode (Schrittwieser et al., 2020, Appendix "Pseudocode") calls
``scale_gradient(hidden_state, 0.5)`` after each recurrent step; the look-alikes people confuse it
with (the optimizer's ``clipnorm``, Keras' ``MaxNorm``, ``stop_gradient``) are registered beside
it. Where the hidden-state transform goes is a placement (:mod:`experiments.gradients.placements`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
from collections.abc import Callable, Mapping
from typing import Any

from experiments.base.errors import ConfigError
from experiments.base.plugins import PluggableRegistry
from experiments.gradients.seams import (
    NETWORKS,
    HiddenFn,
    HiddenTransform,
    KernelConstraint,
    LearningRates,
    LossWeights,
    OptimizerOptions,
)

__all__ = [
    "ACTS_ON",
    "ENTRY_POINT_GROUP",
    "NETWORKS",
    "VARIANTS",
    "Built",
    "HiddenFn",
    "ParamSpec",
    "Variant",
    "VariantSpec",
    "make_variant",
]

ACTS_ON = (
    "nothing",
    "forward",
    "gradient",
    "optimizer",
    "learning_rate",
    "weights",
    "loss_weights",
)
"""Where a variant acts, as its registry entry declares it (``gradlab list``, ``gradlab explain``):
the hidden state's forward values, the gradient through the hidden state, the optimizer's update,
the learning rate of some or all networks, the weights (a constraint applied after each update),
or the unroll's per-step loss weights. A bound :class:`Variant` carries no such tag: one callable
per seam (:mod:`experiments.gradients.seams`)."""


@dataclasses.dataclass(frozen=True)
class ParamSpec:
    """One numeric parameter of a variant.

    Attributes:
      name: the setting's name (``variant.<name>=...``).
      default: its value when not given.
      minimum: the smallest accepted value.
      minimum_inclusive: whether ``minimum`` itself is accepted.
      doc: one line.
    """

    name: str
    default: float
    minimum: float
    minimum_inclusive: bool
    doc: str

    @property
    def range_text(self) -> str:
        """``'>= 0'`` or ``'> 0'``."""
        return f"{'>=' if self.minimum_inclusive else '>'} {self.minimum:g}"

    def check(self, variant: str, value: Any) -> float:
        """Returns ``value`` as a float, or raises :class:`ConfigError` naming it and the range."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(
                f"variant.{self.name}={value!r} has the wrong type; expected a number "
                f"{self.range_text} (variant {variant!r})"
            )
        value = float(value)
        ok = value >= self.minimum if self.minimum_inclusive else value > self.minimum
        if not ok or not math.isfinite(value):
            raise ConfigError(
                f"variant.{self.name}={value:g} is out of range; expected a finite number "
                f"{self.range_text} (variant {variant!r})"
            )
        return value


@dataclasses.dataclass(frozen=True)
class Variant:
    """A variant with its parameters bound: one callable per seam it may act at
    (:mod:`experiments.gradients.seams`), each neutral where it does not act, so that the
    learner, the search and the networks call them without asking where it acts.

    Attributes:
      name: registry name.
      params: the bound parameters, defaults filled in.
      hidden: the hidden-state transform ``[B, H] -> [B, H]`` (the identity unless the variant
        acts on the hidden state's forward values or gradient); put in place by a placement
        (:class:`~experiments.gradients.placements.Placement`) in the training unroll, and in
        the search's recurrent inference when it changes forward values (``hidden.forward``).
      optimizer: builds the Keras optimizer with the variant's options (``clipnorm``,
        ``global_clipnorm``; none unless it acts on the optimizer).
      kernel_constraint: a Keras constraint for the dynamics network's kernels, or ``None``.
      learning_rates: the learning-rate factor of each network (:data:`NETWORKS`; x1 unless it
        acts on the learning rate).
      loss_weights: the factor of each unroll step's loss (``s**k``; all 1 unless it acts on
        the loss weights).
    """

    name: str
    params: Mapping[str, float]
    hidden: HiddenTransform = HiddenTransform()
    optimizer: OptimizerOptions = OptimizerOptions()
    kernel_constraint: KernelConstraint | None = None
    learning_rates: LearningRates = LearningRates()
    loss_weights: LossWeights = LossWeights()


@dataclasses.dataclass(frozen=True)
class Built:
    """What a variant's builder returns (:attr:`VariantSpec.build`).

    Attributes:
      hidden: the hidden-state transform (identity unless it acts on the hidden state).
      optimizer_kwargs: keyword arguments for the Keras optimizer.
      kernel_constraint: a Keras constraint for the dynamics network's kernels, or None.
      lr_scales: learning-rate factors by network (:data:`NETWORKS`).
      depth_loss_scale: ``s`` of step k's loss weight ``s**k``, or None.
    """

    hidden: HiddenFn
    optimizer_kwargs: dict[str, float] = dataclasses.field(default_factory=dict)
    kernel_constraint: Any = None
    lr_scales: dict[str, float] = dataclasses.field(default_factory=dict)
    depth_loss_scale: float | None = None


@dataclasses.dataclass(frozen=True)
class VariantSpec:
    """A registry entry: what the variant is, where it acts, its parameters and its builder.

    Attributes:
      name: the registry name (``variant=<name>``).
      acts_on: one of :data:`ACTS_ON`.
      scope: declared granularity (elementwise, per sample, per variable, global, ...).
      summary: one line for ``gradlab list`` / ``gradlab explain``.
      params: the parameters, each a setting of the variant's config node.
      build: ``(**params) -> Built``; imports TensorFlow.
    """

    name: str
    acts_on: str
    scope: str
    summary: str
    params: tuple[ParamSpec, ...]
    build: Callable[..., Built]

    def __post_init__(self) -> None:
        if self.acts_on not in ACTS_ON:
            raise ValueError(f"variant {self.name!r}: acts_on {self.acts_on!r} not in {ACTS_ON}")

    def check_params(self, params: Mapping[str, Any]) -> dict[str, float]:
        """``params`` validated against :attr:`params`, defaults filled in."""
        known = {p.name: p for p in self.params}
        for key in params:
            if key not in known:
                valid = ", ".join(known) if known else "none (it takes no parameters)"
                raise ConfigError(
                    f"variant {self.name!r} has no parameter {key!r}; its parameters: {valid}"
                )
        return {p.name: p.check(self.name, params.get(p.name, p.default)) for p in self.params}

    def bind(self, **params: Any) -> Variant:
        """Validates ``params`` and returns the bound :class:`Variant` (imports TensorFlow): what
        the builder returned, one seam each; the hidden-state transform changes forward values
        when the entry declares it acts on them (``acts_on="forward"``)."""
        bound = self.check_params(params)
        built = self.build(**bound)
        return Variant(
            name=self.name,
            params=types.MappingProxyType(bound),
            hidden=HiddenTransform(built.hidden, forward=self.acts_on == "forward"),
            optimizer=OptimizerOptions(built.optimizer_kwargs),
            kernel_constraint=built.kernel_constraint,
            learning_rates=LearningRates(built.lr_scales),
            loss_weights=LossWeights(built.depth_loss_scale),
        )


def _identity(h: Any) -> Any:
    return h


def _build_none() -> Built:
    return Built(_identity)


def _build_scale_gradient(scale: float) -> Built:
    from experiments.gradients.maths import scale_gradient

    return Built(functools.partial(scale_gradient, scale=scale))


def _build_stop_gradient() -> Built:
    import tensorflow as tf

    return Built(tf.stop_gradient)


def _build_clipnorm(clipnorm: float) -> Built:
    return Built(_identity, {"clipnorm": clipnorm})


def _build_global_clipnorm(clipnorm: float) -> Built:
    return Built(_identity, {"global_clipnorm": clipnorm})


def _build_maxnorm(max_value: float) -> Built:
    from experiments.gradients.maths import maxnorm_hidden

    return Built(functools.partial(maxnorm_hidden, max_value=max_value))


def _build_maxnorm_kernel(max_value: float) -> Built:
    import keras

    return Built(
        _identity, kernel_constraint=keras.constraints.MaxNorm(max_value=max_value, axis=0)
    )


def _build_lr_scale(scale: float) -> Built:
    return Built(_identity, lr_scales=dict.fromkeys(NETWORKS, scale))


def _build_dynamics_lr_scale(scale: float) -> Built:
    return Built(_identity, lr_scales={"dynamics": scale})


def _build_depth_loss_scale(scale: float) -> Built:
    return Built(_identity, depth_loss_scale=scale)


_LR = ParamSpec("scale", 0.5, 0.0, False, "learning-rate factor")
_DEPTH = ParamSpec("scale", 0.5, 0.0, False, "step k's loss is weighted scale**k")
_SCALE = ParamSpec("scale", 0.5, 0.0, True, "gradient factor (0 = stop_gradient, 1 = none)")
_CLIP = ParamSpec("clipnorm", 1.0, 0.0, False, "largest gradient norm the optimizer applies")
_MAX = ParamSpec("max_value", 2.0, 0.0, False, "largest L2 norm kept (Keras' default is 2)")

ENTRY_POINT_GROUP = "gradlab.variants"
"""The entry-point group through which an installed distribution adds a variant: an entry point
named as the variant whose object is its :class:`VariantSpec` (docs/usage.md, "Your own variant as
a plug-in"; ``examples/plugin_variant/``)."""

_RESERVED = ("name", "placement")
"""Fields every variant config has (:class:`experiments.config.VariantConfig`): no parameter's."""


def _accept(obj: Any) -> VariantSpec:
    """A plug-in's entry point object, checked as a variant: a :class:`VariantSpec` whose
    parameters are distinct identifiers, none of :data:`_RESERVED`, each default in its range."""
    if not isinstance(obj, VariantSpec):
        raise ConfigError(
            f"it gives a {type(obj).__name__}, not a VariantSpec "
            "(experiments.gradients.VariantSpec)"
        )
    names = [p.name for p in obj.params]
    for param in obj.params:
        if not isinstance(param, ParamSpec):
            raise ConfigError(f"its parameter {param!r} is not a ParamSpec")
        if not param.name.isidentifier() or param.name in _RESERVED or names.count(param.name) > 1:
            raise ConfigError(
                f"its parameter name {param.name!r} is not a distinct identifier other than "
                f"{' and '.join(_RESERVED)}"
            )
        param.check(obj.name, param.default)
    if not callable(obj.build):
        raise ConfigError("its build is not callable")
    return obj


VARIANTS: PluggableRegistry[VariantSpec] = PluggableRegistry(
    "variant",
    [
        VariantSpec(
            name="none",
            acts_on="nothing",
            scope="-",
            summary="baseline: the hidden state and its gradient pass untouched",
            params=(),
            build=_build_none,
        ),
        VariantSpec(
            name="scale_gradient",
            acts_on="gradient",
            scope="elementwise",
            summary="MuZero's scale_gradient: forward unchanged, gradient through the hidden "
            "state x scale",
            params=(_SCALE,),
            build=_build_scale_gradient,
        ),
        VariantSpec(
            name="stop_gradient",
            acts_on="gradient",
            scope="elementwise",
            summary="tf.stop_gradient on the hidden state: scale_gradient with scale 0",
            params=(),
            build=_build_stop_gradient,
        ),
        VariantSpec(
            name="clipnorm",
            acts_on="optimizer",
            scope="per variable",
            summary="Keras optimizer clipnorm: each variable's gradient clipped to a norm, "
            "separately",
            params=(_CLIP,),
            build=_build_clipnorm,
        ),
        VariantSpec(
            name="global_clipnorm",
            acts_on="optimizer",
            scope="global",
            summary="Keras optimizer global_clipnorm: all gradients rescaled together by their "
            "joint norm",
            params=(_CLIP,),
            build=_build_global_clipnorm,
        ),
        VariantSpec(
            name="maxnorm",
            acts_on="forward",
            scope="per sample",
            summary="keras.constraints.MaxNorm on the hidden state: rows with norm > max_value "
            "are shrunk",
            params=(_MAX,),
            build=_build_maxnorm,
        ),
        VariantSpec(
            name="maxnorm_kernel",
            acts_on="weights",
            scope="per kernel column",
            summary="keras.constraints.MaxNorm as the dynamics network's kernel_constraint "
            "(weights only)",
            params=(_MAX,),
            build=_build_maxnorm_kernel,
        ),
        VariantSpec(
            name="lr_scale",
            acts_on="learning_rate",
            scope="global",
            summary="control: the baseline with every network's learning rate x scale "
            "(scale_gradient shrinks steps under SGD; this shrinks all of them)",
            params=(_LR,),
            build=_build_lr_scale,
        ),
        VariantSpec(
            name="dynamics_lr_scale",
            acts_on="learning_rate",
            scope="per network",
            summary="control: the baseline with the dynamics network's learning rate x scale, "
            "the others' untouched",
            params=(_LR,),
            build=_build_dynamics_lr_scale,
        ),
        VariantSpec(
            name="depth_loss_scale",
            acts_on="loss_weights",
            scope="per unroll step",
            summary="control: step k's loss weighted scale**k, the attenuation by depth that "
            "scale_gradient gives the representation, with the dynamics' backward path untouched",
            params=(_DEPTH,),
            build=_build_depth_loss_scale,
        ),
    ],
    group=ENTRY_POINT_GROUP,
    accept=_accept,
)
"""Registry of hidden-state variants by name: the built-ins above, then the plug-ins of installed
distributions (:data:`ENTRY_POINT_GROUP`), loaded at its first use; ``VARIANTS.plugin(name)`` says
where a plug-in came from (None for a built-in)."""


def make_variant(name: str, **params: Any) -> Variant:
    """Looks up a variant by name and binds its parameters (the builder imports TensorFlow).

    Args:
      name: a key of :data:`VARIANTS`.
      **params: the variant's parameters; missing ones take their defaults.

    Returns:
      The bound :class:`Variant`, usable eagerly and inside a compiled ``tf.function``.

    Raises:
      ConfigError: unknown name, unknown parameter, or a parameter of the wrong type or range.
    """
    return VARIANTS.lookup(name).bind(**params)
