"""Gradient-handling variants for MuZero's hidden state, and where in the unroll they act.

MuZero's pseudocode (Schrittwieser et al., 2020, Appendix "Pseudocode") calls
``scale_gradient(hidden_state, 0.5)`` after each recurrent step. TensorFlow has no such function;
the paper's author defined it as ``x * s + tf.stop_gradient(x) * (1 - s)``: the forward value is
unchanged, the gradient is multiplied by ``s``. It is often confused with the optimizer's
``clipnorm``, with ``keras.constraints.MaxNorm`` (which changes forward values) and with
``stop_gradient`` (which is scale 0). This module holds all of them side by side:

* :func:`scale_gradient`, the paper author's definition;
* :data:`VARIANTS`, a registry of named variants, each declaring where it acts and its parameters;
  :func:`make_variant` binds and validates parameters and returns a :class:`Variant`;
* :data:`PLACEMENTS`, a registry of the three places the hidden-state handling is put in practice
  (``pseudocode``, ``paper``, ``hook``), each a pair of pure functions a learner calls around each
  dynamics call. They work eagerly and inside a compiled ``tf.function``.

Adding a variant is one entry in ``_VARIANT_SPECS`` (and it is then covered by the parametrised
tests in ``tests/test_gradients.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
from collections.abc import Callable, Mapping
from typing import Any

import keras
import tensorflow as tf

from experiments.errors import ConfigError, unknown_choice

__all__ = [
    "ACTS_ON",
    "PLACEMENTS",
    "VARIANTS",
    "HiddenFn",
    "ParamSpec",
    "Placement",
    "Variant",
    "VariantSpec",
    "get_placement",
    "make_variant",
    "maxnorm_hidden",
    "scale_gradient",
]

HiddenFn = Callable[[tf.Tensor], tf.Tensor]
"""A transform of the hidden state ``[B, H] -> [B, H]``."""

ACTS_ON = ("nothing", "forward", "gradient", "optimizer", "weights")
"""Where a variant acts: the hidden state's forward values, the gradient through the hidden state,
the optimizer's update, or the weights (a constraint applied after each update)."""


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


def _identity(h: tf.Tensor) -> tf.Tensor:
    return h


# --------------------------------------------------------------------------------------------
# Variants


@dataclasses.dataclass(frozen=True)
class ParamSpec:
    """One numeric parameter of a variant."""

    name: str
    default: float
    minimum: float  # smallest accepted value
    minimum_inclusive: bool  # whether ``minimum`` itself is accepted
    doc: str

    def check(self, variant: str, value: Any) -> float:
        """Returns ``value`` as a float, or raises :class:`ConfigError` naming it and the range."""
        rng = f"{'>=' if self.minimum_inclusive else '>'} {self.minimum:g}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(
                f"variant {variant!r}: {self.name}={value!r} is not a number; "
                f"expected a float {rng}"
            )
        value = float(value)
        ok = value >= self.minimum if self.minimum_inclusive else value > self.minimum
        if not ok or not math.isfinite(value):
            raise ConfigError(
                f"variant {variant!r}: {self.name}={value:g} is out of range; expected a finite "
                f"float {rng}"
            )
        return value


@dataclasses.dataclass(frozen=True)
class Variant:
    """A variant with its parameters bound: what a learner needs to apply it.

    Attributes:
      name: registry name.
      acts_on: one of :data:`ACTS_ON`.
      params: the bound parameters, defaults filled in.
      hidden: transform of the hidden state ``[B, H] -> [B, H]`` (identity unless the variant acts
        on the hidden state's forward values or gradient); put in place by a :class:`Placement`.
      optimizer_kwargs: keyword arguments for the Keras optimizer (``clipnorm``,
        ``global_clipnorm``), empty unless the variant acts on the optimizer.
      kernel_constraint: a Keras constraint for the dynamics network's kernels, or ``None``.
    """

    name: str
    acts_on: str
    params: Mapping[str, float]
    hidden: HiddenFn
    optimizer_kwargs: Mapping[str, float]
    kernel_constraint: keras.constraints.Constraint | None

    @property
    def transforms_hidden(self) -> bool:
        """Whether :attr:`hidden` is anything but the identity."""
        return self.acts_on in ("forward", "gradient")


@dataclasses.dataclass(frozen=True)
class VariantSpec:
    """A registry entry: what the variant is, where it acts, and how to bind it."""

    name: str
    acts_on: str  # one of ACTS_ON
    scope: str  # declared granularity: elementwise, per sample, per variable, global, ...
    summary: str  # one line for `gradlab list` / `gradlab explain`
    params: tuple[ParamSpec, ...]
    _build: Callable[..., tuple[HiddenFn, dict, Any]]  # params -> (hidden, opt kwargs, constraint)

    def bind(self, **params: Any) -> Variant:
        """Validates ``params`` against :attr:`params` and returns the bound :class:`Variant`."""
        known = {p.name: p for p in self.params}
        for key in params:
            if key not in known:
                valid = ", ".join(known) if known else "none (it takes no parameters)"
                raise ConfigError(
                    f"variant {self.name!r} has no parameter {key!r}; its parameters: {valid}"
                )
        bound = {p.name: p.check(self.name, params.get(p.name, p.default)) for p in self.params}
        hidden, opt_kwargs, constraint = self._build(**bound)
        return Variant(
            name=self.name,
            acts_on=self.acts_on,
            params=types.MappingProxyType(bound),
            hidden=hidden,
            optimizer_kwargs=types.MappingProxyType(opt_kwargs),
            kernel_constraint=constraint,
        )


def _build_none() -> tuple[HiddenFn, dict, None]:
    return _identity, {}, None


def _build_scale_gradient(scale: float) -> tuple[HiddenFn, dict, None]:
    return functools.partial(scale_gradient, scale=scale), {}, None


def _build_stop_gradient() -> tuple[HiddenFn, dict, None]:
    return tf.stop_gradient, {}, None


def _build_clipnorm(clipnorm: float) -> tuple[HiddenFn, dict, None]:
    return _identity, {"clipnorm": clipnorm}, None


def _build_global_clipnorm(clipnorm: float) -> tuple[HiddenFn, dict, None]:
    return _identity, {"global_clipnorm": clipnorm}, None


def _build_maxnorm(max_value: float) -> tuple[HiddenFn, dict, None]:
    return functools.partial(maxnorm_hidden, max_value=max_value), {}, None


def _build_maxnorm_kernel(max_value: float) -> tuple[HiddenFn, dict, keras.constraints.MaxNorm]:
    return _identity, {}, keras.constraints.MaxNorm(max_value=max_value, axis=0)


_SCALE = ParamSpec("scale", 0.5, 0.0, True, "gradient factor (0 = stop_gradient, 1 = none)")
_CLIP = ParamSpec("clipnorm", 1.0, 0.0, False, "largest gradient norm the optimizer applies")
_MAX = ParamSpec("max_value", 2.0, 0.0, False, "largest L2 norm kept (Keras' default is 2)")

_VARIANT_SPECS = (
    VariantSpec(
        "none", "nothing", "-",
        "baseline: the hidden state and its gradient pass untouched",
        (), _build_none,
    ),
    VariantSpec(
        "scale_gradient", "gradient", "elementwise",
        "MuZero's scale_gradient: forward unchanged, gradient through the hidden state x scale",
        (_SCALE,), _build_scale_gradient,
    ),
    VariantSpec(
        "stop_gradient", "gradient", "elementwise",
        "tf.stop_gradient on the hidden state: scale_gradient with scale 0",
        (), _build_stop_gradient,
    ),
    VariantSpec(
        "clipnorm", "optimizer", "per variable",
        "Keras optimizer clipnorm: each variable's gradient clipped to a norm, separately",
        (_CLIP,), _build_clipnorm,
    ),
    VariantSpec(
        "global_clipnorm", "optimizer", "global",
        "Keras optimizer global_clipnorm: all gradients rescaled together by their joint norm",
        (_CLIP,), _build_global_clipnorm,
    ),
    VariantSpec(
        "maxnorm", "forward", "per sample",
        "keras.constraints.MaxNorm on the hidden state: rows with norm > max_value are shrunk",
        (_MAX,), _build_maxnorm,
    ),
    VariantSpec(
        "maxnorm_kernel", "weights", "per kernel column",
        "keras.constraints.MaxNorm as the dynamics network's kernel_constraint (weights only)",
        (_MAX,), _build_maxnorm_kernel,
    ),
)  # fmt: skip

VARIANTS: Mapping[str, VariantSpec] = types.MappingProxyType({s.name: s for s in _VARIANT_SPECS})
"""Registry of hidden-state variants by name."""


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
    if name not in VARIANTS:
        raise unknown_choice("variant", name, VARIANTS)
    return VARIANTS[name].bind(**params)


# --------------------------------------------------------------------------------------------
# Placements

PlacementFn = Callable[[tf.Tensor, HiddenFn, "int | tf.Tensor"], tf.Tensor]
"""``(h [B, H], transform, step) -> h [B, H]``; ``step``: 1-based index of the dynamics call, a
Python int (the training unroll: the same for every row) or an int tensor ``[B]`` (the search:
each row's leaf is at its own depth, ``step = depth of the parent + 1``)."""


def _untouched(h: tf.Tensor, transform: HiddenFn, step: int | tf.Tensor) -> tf.Tensor:
    del transform, step
    return h


def _pseudocode_input(h: tf.Tensor, transform: HiddenFn, step: int | tf.Tensor) -> tf.Tensor:
    # The pseudocode scales `hidden_state` after recurrent_inference returns it, so the first
    # dynamics call sees the representation's output untouched and every later one sees T(h).
    if isinstance(step, int):
        return h if step == 1 else transform(h)
    first = tf.reshape(tf.equal(step, 1), [-1, 1])  # [B, 1]
    return tf.where(first, h, transform(h))


def _always(h: tf.Tensor, transform: HiddenFn, step: int | tf.Tensor) -> tf.Tensor:
    del step
    return transform(h)


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where the hidden-state transform goes in the K-step unroll.

    A learner unrolling ``h_k, r_k = dynamics(h_in, a_k)`` for ``k = 1..K`` calls::

        h_in = placement.dynamics_input(h_prev, variant.hidden, k)
        h_k, r_k = dynamics(h_in, a_k)
        h_k = placement.dynamics_output(h_k, variant.hidden, k)   # what step k's heads see
        h_prev = h_k

    Attributes:
      name: registry name.
      summary: one line.
      dynamics_input: applied to the state fed into dynamics call ``k``.
      dynamics_output: applied to the output of dynamics call ``k``.
    """

    name: str
    summary: str
    dynamics_input: PlacementFn
    dynamics_output: PlacementFn


PLACEMENTS: Mapping[str, Placement] = types.MappingProxyType(
    {
        "pseudocode": Placement(
            "pseudocode",
            "after each recurrent step, on the state fed to the next dynamics call "
            "(step k's own heads see the untouched state)",
            _pseudocode_input,
            _untouched,
        ),
        "paper": Placement(
            "paper",
            "at the start of every dynamics call, the first one included (Appendix G's text)",
            _always,
            _untouched,
        ),
        "hook": Placement(
            "hook",
            "on the dynamics output itself, so all gradient into h_k is scaled "
            "(register_hook in the PyTorch ports)",
            _untouched,
            _always,
        ),
    }
)
"""Registry of placements by name."""


def get_placement(name: str) -> Placement:
    """Looks up a placement by name; raises :class:`ConfigError` naming the valid choices."""
    if name not in PLACEMENTS:
        raise unknown_choice("placement", name, PLACEMENTS)
    return PLACEMENTS[name]
