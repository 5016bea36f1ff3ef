"""The named registry (experiments/base/registry.py): entries in the order given, a name
registered twice refused, an unknown name one line listing every choice."""

from __future__ import annotations

import dataclasses

import pytest

from experiments.base.errors import ConfigError
from experiments.base.registry import Registry


@dataclasses.dataclass(frozen=True)
class _Entry:
    name: str
    summary: str


ENTRIES = [_Entry("zeta", "last letter"), _Entry("alpha", "first letter"), _Entry("mu", "middle")]


def test_a_mapping_in_registration_order():
    registry = Registry("letter", ENTRIES)
    assert list(registry) == ["zeta", "alpha", "mu"] and len(registry) == 3
    assert registry["mu"] is ENTRIES[2] and "alpha" in registry and "beta" not in registry
    assert registry.summaries() == {"zeta": "last letter", "alpha": "first letter", "mu": "middle"}
    assert list(registry.summaries()) == ["zeta", "alpha", "mu"]


def test_lookup_finds_or_names_every_choice():
    registry = Registry("letter", ENTRIES)
    assert registry.lookup("zeta") is ENTRIES[0]
    for bad in ("beta", 3, None):
        with pytest.raises(ConfigError) as err:
            registry.lookup(bad)
        # choices sorted in the message, whatever the registration order
        assert str(err.value) == f"unknown letter {bad!r}; choose one of: alpha, mu, zeta"


def test_plain_indexing_stays_a_mapping():
    with pytest.raises(KeyError):
        Registry("letter", ENTRIES)["beta"]


def test_a_name_registered_twice_is_refused():
    with pytest.raises(ValueError, match="letter 'mu' is registered twice"):
        Registry("letter", [*ENTRIES, _Entry("mu", "again")])


def test_an_empty_registry():
    registry = Registry("letter", [])
    assert len(registry) == 0 and registry.summaries() == {}
    with pytest.raises(ConfigError, match="^unknown letter 'a'; choose one of: $"):
        registry.lookup("a")
