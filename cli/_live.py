"""The common start of a command that measures live in TensorFlow and prints its figures as a rich
terminal table, Markdown or JSON (``gradlab bench``, ``gradlab explain``).

Bad input raises ConfigError (one line, exit 2) before TensorFlow is imported.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from experiments.base.errors import unknown_choice
from experiments.base.process import quiet_tensorflow

__all__ = ["FORMATS", "format_option", "start"]

FORMATS = ("rich", "md", "json")


def format_option(rich: str) -> Any:
    """The ``--format/-f`` option's type, ``rich`` saying what the rich format draws (its help:
    ``Output format: rich (<rich>), md or json.``)."""
    return Annotated[
        str, typer.Option("--format", "-f", help=f"Output format: rich ({rich}), md or json.")
    ]


def start(fmt: str) -> None:
    """Refuses a format not in :data:`FORMATS`, then imports TensorFlow quietly.

    Raises:
      ConfigError: ``fmt`` is not a format, naming the valid ones.
    """
    if fmt not in FORMATS:
        raise unknown_choice("format", fmt, FORMATS)
    quiet_tensorflow()
