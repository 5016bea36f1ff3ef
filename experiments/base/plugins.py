"""A registry that installed packages extend through an entry-point group: gradlab's plug-ins.

A distribution adds an entry to a :class:`PluggableRegistry` by declaring, in its
``pyproject.toml``, an entry point of the registry's group whose name is the entry's name and
whose object is the entry itself (for variants, ``[project.entry-points."gradlab.variants"]``
``my_variant = "my_package:SPEC"``, a :class:`~experiments.gradients.VariantSpec`). The group is
read, and each entry point imported, at the registry's first use (not at import: a broken
plug-in then fails the command that reads the registry, in one line, instead of every import of
gradlab). A plug-in that fails to import, gives no entry of the registry's type, or whose name is
malformed or already taken (by a built-in or another plug-in) is refused with one
:class:`~experiments.base.errors.ConfigError` line naming it: its entry point and the
distribution it came from, with that distribution's version (:class:`Plugin`).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from experiments.base.errors import ConfigError
from experiments.base.registry import Named, Registry

__all__ = ["NAME_PATTERN", "Plugin", "PluggableRegistry"]

NAME_PATTERN = re.compile(r"[a-z][a-z0-9]*(_[a-z][a-z0-9]*)*")
"""A plug-in's name: lower-case words joined by ``_``, each starting with a letter (a Hydra option
name, and one CamelCase class name per name: ``depth_scale`` -> ``DepthScale``)."""

E = TypeVar("E", bound=Named)


@dataclasses.dataclass(frozen=True)
class Plugin:
    """Where a plug-in's entry came from.

    Attributes:
      name: the entry point's name (the entry's name).
      value: the entry point's object reference, ``module:attribute``.
      group: the entry-point group.
      distribution: the installed distribution that declares it (its ``Name``).
      version: that distribution's version.
    """

    name: str
    value: str
    group: str
    distribution: str
    version: str

    def __str__(self) -> str:
        return (
            f"plug-in {self.name!r} (entry point {self.name} = {self.value} in group "
            f"{self.group!r} of {self.distribution} {self.version})"
        )

    @property
    def source(self) -> str:
        """``<distribution> <version>``, as ``gradlab list`` shows it."""
        return f"{self.distribution} {self.version}"


def _plugin(entry_point: importlib.metadata.EntryPoint) -> Plugin:
    dist = getattr(entry_point, "dist", None)
    name = dist.metadata["Name"] if dist is not None else None
    return Plugin(
        name=entry_point.name,
        value=entry_point.value,
        group=entry_point.group,
        distribution=name or "an unknown distribution",
        version=(dist.version if dist is not None else None) or "unknown",
    )


def _error_line(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}".splitlines()[0][:300]


class PluggableRegistry(Registry[E]):
    """A :class:`~experiments.base.registry.Registry` of built-in entries and the entries that
    installed distributions declare in the entry-point group ``group``, loaded at first use.

    Args:
      kind: what the entries are, for messages.
      entries: the built-in entries.
      group: the entry-point group (``gradlab.variants``).
      accept: checks an entry point's object and returns it as an entry, or raises ConfigError
        saying what is wrong with it (prefixed with the plug-in by the registry).
    """

    def __init__(
        self, kind: str, entries: Iterable[E], *, group: str, accept: Callable[[Any], E]
    ) -> None:
        super().__init__(kind, entries)
        self.group = group
        self._accept = accept
        self._builtins = dict(self._entries)
        self._plugins: dict[str, Plugin] | None = None

    @property
    def builtins(self) -> dict[str, E]:
        """The built-in entries, by name (no plug-in loaded)."""
        return dict(self._builtins)

    def plugins(self) -> dict[str, Plugin]:
        """Each plug-in entry's :class:`Plugin`, by name (loads them)."""
        self._table()
        return dict(self._plugins or {})

    def plugin(self, name: str) -> Plugin | None:
        """Where the entry ``name`` came from: its :class:`Plugin`, or None for a built-in."""
        return self.plugins().get(name)

    def reload(self) -> None:
        """Forgets the plug-ins; the next use reads the entry-point group again (after an
        install into this process's ``sys.path``, and in tests)."""
        self._entries = dict(self._builtins)
        self._plugins = None

    def _table(self) -> dict[str, E]:
        if self._plugins is None:
            found = self._load()
            self._entries = {**self._builtins, **{n: e for n, (e, _) in found.items()}}
            self._plugins = {n: p for n, (_, p) in found.items()}
        return self._entries

    def _load(self) -> dict[str, tuple[E, Plugin]]:
        """Every entry point of :attr:`group`, imported and checked, by name (sorted)."""
        points = importlib.metadata.entry_points(group=self.group)
        found: dict[str, tuple[E, Plugin]] = {}
        for point in sorted(points, key=lambda p: (p.name, p.value)):
            plugin = _plugin(point)
            if not NAME_PATTERN.fullmatch(point.name):
                raise ConfigError(
                    f"{plugin}: {point.name!r} is not a {self.kind} name (lower-case words "
                    "joined by '_', each starting with a letter)"
                )
            if point.name in self._builtins:
                raise ConfigError(f"{plugin}: its name collides with the built-in {self.kind}")
            if point.name in found:
                raise ConfigError(f"{plugin}: its name collides with {found[point.name][1]}")
            try:
                obj = point.load()
            except Exception as err:  # noqa: BLE001 - any import failure is the plug-in's
                raise ConfigError(f"{plugin} fails to import: {_error_line(err)}") from None
            try:
                entry = self._accept(obj)
            except ConfigError as err:
                raise ConfigError(f"{plugin}: {err}") from None
            if entry.name != point.name:
                raise ConfigError(
                    f"{plugin}: its entry point is named {point.name!r} but its {self.kind} "
                    f"{entry.name!r}; they must be the same"
                )
            found[point.name] = (entry, plugin)
        return found
