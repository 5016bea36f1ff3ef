"""A named registry: the one way gradlab maps a user-facing name to what it stands for.

Variants, placements, loss scales and normalisations are each one :class:`Registry` of small
frozen entries. A registry is importable without TensorFlow (entries that need it import it
inside their builder), so ``gradlab list``, planning and validation stay fast; an unknown name is
one :class:`~experiments.base.errors.ConfigError` naming the value and every choice.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Generic, Protocol, TypeVar

from experiments.base.errors import unknown_choice

__all__ = ["Named", "Registry"]


class Named(Protocol):
    """What an entry needs: a name and a one-line summary."""

    @property
    def name(self) -> str: ...

    @property
    def summary(self) -> str: ...


E = TypeVar("E", bound=Named)


class Registry(Mapping[str, E], Generic[E]):
    """Entries of one kind by name, in the order they were given.

    Args:
      kind: what the entries are, for messages (``"variant"``, ``"placement"``, ...).
      entries: the entries; names must be unique.
    """

    def __init__(self, kind: str, entries: Iterable[E]) -> None:
        self.kind = kind
        self._entries: dict[str, E] = {}
        for entry in entries:
            if entry.name in self._entries:
                raise ValueError(f"{kind} {entry.name!r} is registered twice")
            self._entries[entry.name] = entry

    def _table(self) -> dict[str, E]:
        """The entries by name; a subclass that adds entries later adds them here
        (:class:`experiments.base.plugins.PluggableRegistry`)."""
        return self._entries

    def __getitem__(self, name: str) -> E:
        return self._table()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())

    def lookup(self, name: object) -> E:
        """The entry called ``name``; an unknown name raises ConfigError listing the choices."""
        table = self._table()
        if not isinstance(name, str) or name not in table:
            raise unknown_choice(self.kind, name, table)
        return table[name]

    def summaries(self) -> Mapping[str, str]:
        """``{name: one-line summary}``, in registration order."""
        return {name: entry.summary for name, entry in self._table().items()}
