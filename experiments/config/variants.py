"""The ``variant`` section of a run's config: :class:`VariantConfig` and one subclass per
registered variant, derived from its registry entry.

A variant's parameters are declared once, in its :class:`~experiments.gradients.VariantSpec`
(built in, :mod:`experiments.gradients.variants`, or a plug-in's): :func:`config_class` derives
its config class from the entry, a frozen subclass of :class:`VariantConfig` adding one float
field per parameter with the entry's default, named after the variant (``scale_gradient`` ->
``ScaleGradientVariant``) and kept as an attribute of this module, so a job's pickled config
names a class that a job process finds here (a plug-in's class is derived again there, when
unpickling asks for it). Adding a variant: its registry entry and its test, nothing here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from experiments.gradients import PLACEMENTS, VARIANTS, VariantSpec

__all__ = ["VARIANT_CONFIGS", "VariantConfig", "class_name", "config_class"]


@dataclasses.dataclass(frozen=True)
class VariantConfig:
    """Which gradient variant the job trains with, and where it acts.

    Each registered variant has a subclass (:func:`config_class`) adding one float field per
    parameter, its default the registry's; :attr:`params` collects them.

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


def class_name(variant: str) -> str:
    """The config class's name of a variant: ``scale_gradient`` -> ``ScaleGradientVariant``."""
    return "".join(part.capitalize() for part in variant.split("_")) + "Variant"


def _derive(spec: VariantSpec) -> type[VariantConfig]:
    fields: list[tuple[str, type, Any]] = [("name", str, dataclasses.field(default=spec.name))]
    fields += [(p.name, float, dataclasses.field(default=p.default)) for p in spec.params]
    cls = dataclasses.make_dataclass(
        class_name(spec.name),
        fields,
        bases=(VariantConfig,),
        frozen=True,
        namespace={"__module__": __name__, "__doc__": f"``variant={spec.name}``: {spec.summary}"},
    )
    cls.__module__ = __name__
    return cls


_derived: dict[str, tuple[VariantSpec, type[VariantConfig]]] = {}
"""Each variant's derived class with the entry it was derived from (a registry reloaded with
another entry of the name derives again). This module's one cache: the classes must be the same
objects for as long as configs refer to them."""


def config_class(name: str) -> type[VariantConfig]:
    """The config class of the registered variant ``name``, derived from its entry at first use
    and set as this module's attribute :func:`class_name` (so pickle finds it).

    Raises:
      KeyError: no variant of that name.
    """
    spec = VARIANTS[name]
    have = _derived.get(name)
    if have is None or have[0] is not spec:
        cls = _derive(spec)
        _derived[name] = (spec, cls)
        globals()[cls.__name__] = cls
        return cls
    return have[1]


class _Configs(Mapping[str, type[VariantConfig]]):
    """Each registered variant's config class by name, in the registry's order (plug-ins'
    included: reading it loads them)."""

    def __getitem__(self, name: str) -> type[VariantConfig]:
        return config_class(name)

    def __iter__(self) -> Iterator[str]:
        return iter(VARIANTS)

    def __len__(self) -> int:
        return len(VARIANTS)


VARIANT_CONFIGS: Mapping[str, type[VariantConfig]] = _Configs()
"""Each registered variant's config class, by name (its ``name`` field's default)."""

for _name in VARIANTS.builtins:  # the built-ins' classes exist from import on
    config_class(_name)
del _name


def __getattr__(attr: str) -> type[VariantConfig]:
    """A plug-in's config class asked for by name before it was derived here (a job process
    unpickling its config): loads the plug-ins and derives it (PEP 562)."""
    if attr.endswith("Variant"):
        for name in VARIANTS:
            if class_name(name) == attr:
                return config_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
