"""Turns bad-input errors into one line on stderr and exit code 2, with no traceback."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer

from experiments.base.errors import ConfigError

__all__ = ["USAGE_ERROR", "guarded"]

USAGE_ERROR = 2  # the exit code of every usage error, as Click uses for its own

_P = ParamSpec("_P")
_R = TypeVar("_R")


def guarded(command: Callable[_P, _R]) -> Callable[_P, _R]:
    """Wraps a Typer command so a :class:`ConfigError` prints ``error: <message>`` and exits 2."""

    @functools.wraps(command)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return command(*args, **kwargs)
        except ConfigError as err:
            typer.echo(f"error: {err}", err=True)
            raise typer.Exit(USAGE_ERROR) from None

    return wrapper
