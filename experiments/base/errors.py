"""The one error type users see for bad input.

Every bad name, type or range found anywhere in gradlab raises :class:`ConfigError` with a message
that names the bad value and the valid choices. The CLI turns it into one line on stderr and exit
code 2, with no traceback.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["ConfigError", "unknown_choice"]


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
