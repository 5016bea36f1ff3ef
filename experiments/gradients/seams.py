"""The seams a gradient variant acts at, one callable type each: what a bound
:class:`~experiments.gradients.variants.Variant` hands the learner, the search and the networks.

Each seam is called where it acts, with no dispatch on where a variant acts; a variant that does
not act at a seam leaves it at its neutral value (the identity, no option, x1, no constraint):

* :class:`HiddenTransform`: the hidden state ``[B, H] -> [B, H]``, put in the unroll by a placement
  (:mod:`experiments.gradients.placements`); ``forward`` says whether it changes forward values,
  and so whether the search plans with it too;
* :class:`OptimizerOptions`: keyword arguments the optimizer is built with (``clipnorm``,
  ``global_clipnorm``); called with the optimizer's class and settings, it builds it;
* :class:`LearningRates`: a network's learning-rate factor, called with the network's name
  (:data:`NETWORKS`);
* :data:`KernelConstraint`: a Keras constraint on the dynamics network's kernels (or None);
* :class:`LossWeights`: the factor of each unroll step's loss, called with the unroll length.

No TensorFlow here: the transforms and constraints a builder binds bring it.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "NETWORKS",
    "HiddenFn",
    "HiddenTransform",
    "KernelConstraint",
    "LearningRates",
    "LossWeights",
    "OptimizerOptions",
]

HiddenFn = Callable[[Any], Any]
"""A transform of the hidden state ``[B, H] -> [B, H]`` (TensorFlow tensors)."""

KernelConstraint = Callable[[Any], Any]
"""A Keras constraint: a kernel ``[in, out]`` -> the kernel applied after each update."""

NETWORKS = ("representation", "dynamics", "prediction")
"""The three networks, the units :class:`LearningRates` gives factors for."""


def _identity(h: Any) -> Any:
    return h


def _frozen(mapping: Mapping[str, float] | None = None) -> Mapping[str, float]:
    return types.MappingProxyType(dict(mapping or {}))


@dataclasses.dataclass(frozen=True)
class HiddenTransform:
    """The hidden-state seam: ``[B, H] -> [B, H]``, the identity (the very tensor) by default.

    Attributes:
      fn: the transform (eager or inside a compiled ``tf.function``).
      forward: whether it changes forward values (``maxnorm``): then the search's recurrent
        inference applies it where the learner's unroll does; one acting on the gradient alone
        (``scale_gradient``) leaves the search's model unchanged.
    """

    fn: HiddenFn = _identity
    forward: bool = False

    def __call__(self, h: Any) -> Any:
        """``fn(h)``: ``h`` ``[B, H]`` -> ``[B, H]``."""
        return self.fn(h)


@dataclasses.dataclass(frozen=True)
class OptimizerOptions:
    """The optimizer seam: keyword arguments every optimizer of the learner is built with.

    Attributes:
      kwargs: e.g. ``{"clipnorm": 1.0}`` or ``{"global_clipnorm": 1.0}``; empty by default.
    """

    kwargs: Mapping[str, float] = dataclasses.field(default_factory=_frozen)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kwargs", _frozen(self.kwargs))

    def __call__(self, optimizer: Callable[..., Any], *args: Any, **settings: Any) -> Any:
        """``optimizer(*args, **settings)`` with these options added (a Keras optimizer)."""
        return optimizer(*args, **settings, **self.kwargs)

    @property
    def global_norm(self) -> bool:
        """Whether they clip by the norm of all gradients together (``global_clipnorm``)."""
        return "global_clipnorm" in self.kwargs


@dataclasses.dataclass(frozen=True)
class LearningRates:
    """The learning-rate seam: a factor of the learning rate by network, x1 where not named.

    Attributes:
      scales: factors by network (:data:`NETWORKS`); empty by default. The learner gives each
        distinct factor its own optimizer on the same schedule x factor; Adam's and momentum's
        state is per variable, so that equals one optimizer with per-variable learning rates.
    """

    scales: Mapping[str, float] = dataclasses.field(default_factory=_frozen)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scales", _frozen(self.scales))

    def __call__(self, network: str) -> float:
        """The factor of ``network``'s learning rate."""
        return float(self.scales.get(network, 1.0))


@dataclasses.dataclass(frozen=True)
class LossWeights:
    """The loss-weights seam: step k's loss (k = 0..K) x ``scale**k`` on top of the ``loss_scale``
    weights; all 1 by default.

    Attributes:
      scale: ``s``, or None (every factor 1).
    """

    scale: float | None = None

    def __call__(self, unroll_steps: int) -> list[float]:
        """``[K+1]`` the factor of each step's loss: ``s**k``, or all 1."""
        s = 1.0 if self.scale is None else float(self.scale)
        return [s**k for k in range(unroll_steps + 1)]
