"""The one error type users see for bad input.

Every bad name, type or range found anywhere in gradlab raises :class:`ConfigError` with a message
that names the bad value and the valid choices. The CLI turns it into one line on stderr and exit
code 2, with no traceback.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ConfigError", "build_checked", "unknown_choice"]


class ConfigError(ValueError):
    """Bad user input: the message names the value and what is accepted."""


def unknown_choice(kind: str, value: object, choices: Iterable[str]) -> ConfigError:
    """Builds the standard 'unknown X' error.

    Args:
      kind: what was being chosen, e.g. ``"variant"``.
      value: the value given.
      choices: the accepted names.

    Returns:
      A :class:`ConfigError` reading ``unknown variant 'foo'; choose one of: a, b, c``.
    """
    return ConfigError(f"unknown {kind} {value!r}; choose one of: {', '.join(sorted(choices))}")


def build_checked(cls: type, owner: str, values: Mapping[str, Any]) -> Any:
    """Builds the dataclass ``cls`` from ``values``, refusing keys it has no field for.

    Args:
      cls: a dataclass (its ``__post_init__`` validates the values themselves).
      owner: the config section, for the message, e.g. ``"task"``.
      values: the settings.

    Raises:
      ConfigError: ``task has no setting 'idd'; choose from: id, name, ...``.
    """
    fields = {f.name for f in dataclasses.fields(cls)}
    for key in values:
        if key not in fields:
            raise ConfigError(
                f"{owner} has no setting {key!r}; choose from: {', '.join(sorted(fields))}"
            )
    return cls(**values)
