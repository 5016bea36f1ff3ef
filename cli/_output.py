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
    "refuse_inputs",
]

READ_FILES = ("preregistration.json", "multirun.yaml", "calibration.json", "calibration.md")
"""Files at a results folder's top level that gradlab reads (a record, a sweep's or a
calibration's record): never written over by an output."""

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


def refuse_inputs(out: Path | None, inputs: list[Path] | tuple[Path, ...]) -> None:
    """Refuses an output that would write over what the command reads: an input file, a file
    gradlab reads at an input folder's top level (:data:`READ_FILES`), or anything inside one of
    its job folders (a run's summary, metrics, curves, config). A new file at an input folder's
    top level (``-o DIR/table.md``) is allowed.

    Raises:
      ConfigError: one line naming the output and the input it would overwrite.
    """
    if out is None:
        return
    target = out.resolve()
    for given in inputs:
        source = given.resolve()
        if target == source:
            raise ConfigError(f"--out '{out}' is the input '{given}'; choose another path")
        if not source.is_dir() or source not in target.parents:
            continue
        inside = target.relative_to(source).parts
        if len(inside) > 1 or inside[0] in READ_FILES:
            raise ConfigError(
                f"--out '{out}' lies inside the input '{given}' "
                f"({'its record' if inside[0] in READ_FILES else 'a run folder'}); an output "
                "never writes over what it reads: choose a path outside its run folders"
            )


def emit(text: str, out: Path | None, inputs: list[Path] | tuple[Path, ...] = ()) -> None:
    """``text`` to stdout, or to ``out`` and ``wrote OUT`` on stdout.

    No folder is made: a mistyped ``--out`` path must not leave folders behind; an output that
    would write over an input is refused (:func:`refuse_inputs`).

    Raises:
      ConfigError: ``out``'s folder does not exist, ``out`` is or lies inside an input, or
        ``out`` cannot be written.
    """
    refuse_inputs(out, inputs)
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
