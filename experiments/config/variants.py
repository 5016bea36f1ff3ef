"""The ``variant`` section of a run's config: :class:`VariantConfig` and one declared subclass
per registered variant, each adding its parameters as float fields with the registry's defaults.

Declared here, by hand, so that grep finds them (``ScaleGradientVariant``) and a job's pickled
config names a class that exists in the source; :func:`check_declared` (run at import) refuses a
registry entry without its class, or a class whose fields or defaults differ from its entry's
parameters, so the two cannot drift apart. Adding a variant: its registry entry
(:mod:`experiments.gradients.variants`), its class here, its test.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from experiments.gradients import PLACEMENTS, VARIANTS

__all__ = ["VARIANT_CONFIGS", "VariantConfig", "check_declared"]


@dataclasses.dataclass(frozen=True)
class VariantConfig:
    """Which gradient variant the job trains with, and where it acts.

    Each registered variant has a subclass below adding one float field per parameter, its
    default the registry's; :attr:`params` collects them.

    Attributes:
      name: a key of ``experiments.gradients.VARIANTS``.
      placement: a key of ``experiments.gradients.PLACEMENTS``.
    """

    name: str = "none"
    placement: str = "pseudocode"

    def __post_init__(self) -> None:
        spec = VARIANTS.lookup(self.name)
        PLACEMENTS.lookup(self.placement)
        spec.check_params(self.params)

    @property
    def params(self) -> dict[str, float]:
        """The variant's parameters, ``{name: value}``."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("name", "placement")
        }

    def build(self) -> tuple[Any, Any]:
        """The bound ``(Variant, Placement)`` (imports TensorFlow)."""
        return VARIANTS[self.name].bind(**self.params), PLACEMENTS[self.placement]


@dataclasses.dataclass(frozen=True)
class NoneVariant(VariantConfig):
    """``variant=none``: the baseline."""

    name: str = "none"


@dataclasses.dataclass(frozen=True)
class ScaleGradientVariant(VariantConfig):
    """``variant=scale_gradient``: the hidden state's gradient x ``scale``."""

    name: str = "scale_gradient"
    scale: float = 0.5


@dataclasses.dataclass(frozen=True)
class StopGradientVariant(VariantConfig):
    """``variant=stop_gradient``: no gradient through the hidden state."""

    name: str = "stop_gradient"


@dataclasses.dataclass(frozen=True)
class ClipnormVariant(VariantConfig):
    """``variant=clipnorm``: each variable's gradient clipped to norm ``clipnorm``."""

    name: str = "clipnorm"
    clipnorm: float = 1.0


@dataclasses.dataclass(frozen=True)
class GlobalClipnormVariant(VariantConfig):
    """``variant=global_clipnorm``: all gradients rescaled to joint norm ``clipnorm``."""

    name: str = "global_clipnorm"
    clipnorm: float = 1.0


@dataclasses.dataclass(frozen=True)
class MaxnormVariant(VariantConfig):
    """``variant=maxnorm``: hidden-state rows of norm above ``max_value`` shrunk to it."""

    name: str = "maxnorm"
    max_value: float = 2.0


@dataclasses.dataclass(frozen=True)
class MaxnormKernelVariant(VariantConfig):
    """``variant=maxnorm_kernel``: the dynamics network's kernels held to norm ``max_value``."""

    name: str = "maxnorm_kernel"
    max_value: float = 2.0


@dataclasses.dataclass(frozen=True)
class LrScaleVariant(VariantConfig):
    """``variant=lr_scale``: every network's learning rate x ``scale`` (a control)."""

    name: str = "lr_scale"
    scale: float = 0.5


@dataclasses.dataclass(frozen=True)
class DynamicsLrScaleVariant(VariantConfig):
    """``variant=dynamics_lr_scale``: the dynamics network's learning rate x ``scale``."""

    name: str = "dynamics_lr_scale"
    scale: float = 0.5


@dataclasses.dataclass(frozen=True)
class DepthLossScaleVariant(VariantConfig):
    """``variant=depth_loss_scale``: step k's loss weighted ``scale**k`` (a control)."""

    name: str = "depth_loss_scale"
    scale: float = 0.5


VARIANT_CONFIGS: dict[str, type[VariantConfig]] = {
    cls.name: cls
    for cls in (
        NoneVariant,
        ScaleGradientVariant,
        StopGradientVariant,
        ClipnormVariant,
        GlobalClipnormVariant,
        MaxnormVariant,
        MaxnormKernelVariant,
        LrScaleVariant,
        DynamicsLrScaleVariant,
        DepthLossScaleVariant,
    )
}
"""Each registered variant's config class, by name (its ``name`` field's default)."""


def check_declared() -> None:
    """Refuses a registered variant without its class here, a class without its registry
    entry, or a class whose parameter fields (names, float type, defaults) are not its entry's.

    Raises:
      RuntimeError: naming the variant and what differs (a programming error, not bad input).
    """
    if set(VARIANT_CONFIGS) != set(VARIANTS):
        raise RuntimeError(
            "variant config classes and the variant registry differ: registered without a "
            f"class {sorted(set(VARIANTS) - set(VARIANT_CONFIGS))}, a class without an entry "
            f"{sorted(set(VARIANT_CONFIGS) - set(VARIANTS))} (experiments/config/variants.py)"
        )
    for name, cls in VARIANT_CONFIGS.items():
        fields = [f for f in dataclasses.fields(cls) if f.name not in ("name", "placement")]
        have = [(f.name, f.type, f.default) for f in fields]
        want = [(p.name, "float", p.default) for p in VARIANTS[name].params]
        if have != want:
            raise RuntimeError(
                f"variant {name!r}: {cls.__name__}'s fields {have} are not its registry "
                f"parameters {want} (experiments/config/variants.py)"
            )


check_declared()
