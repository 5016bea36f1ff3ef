"""Where a table goes: its format from ``--format`` or ``--out``'s suffix, then stdout or the file.

Shared by ``gradlab table`` and ``gradlab pool``. Bad input raises ConfigError (one line, exit 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from experiments.base.errors import ConfigError, unknown_choice

__all__ = [
    "FORMATS",
    "FormatOption",
    "KeepDuplicatesOption",
    "OutOption",
    "emit",
    "output_format",
]

FORMATS = ("md", "latex", "csv", "json")
_SUFFIX_FORMAT = {".md": "md", ".tex": "latex", ".csv": "csv", ".json": "json"}

FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format", "-f", help="md | latex | csv | json (default: from --out's suffix, else md)."
    ),
]
"""The ``--format`` option of a command that writes a table."""
KeepDuplicatesOption = Annotated[
    str | None,
    typer.Option(
        "--keep-duplicates",
        help="first: where two folders hold the same run (same arm, seed and config), count the "
        "first and list the other in the caption (default: refuse, naming both folders).",
    ),
]
"""The ``--keep-duplicates`` option of a command that counts runs."""
OutOption = Annotated[
    Path | None, typer.Option("--out", "-o", help="Write here instead of stdout.")
]
"""The ``--out`` option of a command that writes a table."""


def output_format(fmt: str | None, out: Path | None) -> str:
    """``fmt`` if given, else ``out``'s suffix (``.tex`` -> ``latex``), else ``md``.

    Raises:
      ConfigError: a format not in :data:`FORMATS`.
    """
    if fmt is None:
        fmt = _SUFFIX_FORMAT.get(out.suffix.lower(), "md") if out is not None else "md"
    if fmt not in FORMATS:
        raise unknown_choice("format", fmt, FORMATS)
    return fmt


def emit(text: str, out: Path | None) -> None:
    """``text`` to stdout, or to ``out`` and ``wrote OUT`` on stdout.

    No folder is made: a mistyped ``--out`` path must not leave folders behind.

    Raises:
      ConfigError: ``out``'s folder does not exist, or ``out`` cannot be written.
    """
    if out is None:
        typer.echo(text.rstrip("\n"))
        return
    if not out.parent.is_dir():
        raise ConfigError(
            f"cannot write '{out}': its folder '{out.parent}' does not exist (no folder is made; "
            "create it first)"
        )
    try:
        out.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot write '{out}': {err.strerror}") from None
    typer.echo(f"wrote {out}")
