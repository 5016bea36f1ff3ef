"""The variant config classes are declared (experiments/config/variants.py), found by name, and
checked against the registry: a class and its registry entry cannot drift apart."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from experiments.config import variants as variant_config
from experiments.config.variants import VARIANT_CONFIGS, VariantConfig, check_declared
from experiments.gradients import VARIANTS


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_each_registered_variant_has_a_declared_class(name):
    cls = VARIANT_CONFIGS[name]
    # declared in the module's source under its own name (not generated), so pickle finds it
    assert getattr(variant_config, cls.__name__) is cls
    assert cls.__module__ == "experiments.config.variants"
    node = cls()
    assert node.name == name and node.params == {p.name: p.default for p in VARIANTS[name].params}
    assert pickle.loads(pickle.dumps(node)) == node


def test_a_class_that_drifts_from_its_entry_is_refused(monkeypatch):
    @dataclasses.dataclass(frozen=True)
    class Drifted(VariantConfig):
        name: str = "scale_gradient"
        scale: float = 0.25  # the registry's default is 0.5

    monkeypatch.setitem(VARIANT_CONFIGS, "scale_gradient", Drifted)
    with pytest.raises(RuntimeError, match="variant 'scale_gradient': Drifted's fields"):
        check_declared()


def test_a_registry_entry_without_a_class_is_refused(monkeypatch):
    monkeypatch.delitem(VARIANT_CONFIGS, "maxnorm")
    with pytest.raises(RuntimeError, match=r"registered without a class \['maxnorm'\]"):
        check_declared()
