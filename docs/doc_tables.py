"""The tables quoted in README.md and docs/*.md, regenerated from the committed summaries.

A quoted table sits between two markers that name the command producing it::

    <!-- table: gradlab table results/findings/hidden_scale -->
    | regime | variant | ... |
    <!-- /table -->

:func:`refresh` re-runs every such command (in process, through the Typer app) and writes its
output between the markers; ``tests/project/test_committed_tables.py`` checks that every
quoted table equals what its command prints from the committed files, so a quoted table cannot
drift from its data. Run ``python docs/doc_tables.py`` (from the repository root; a root as its
argument) after committing new summaries.

A script, not a module of the library: it drives the command line (``cli.main``), which the
library (``experiments/``) never imports; it sits beside the documents it rewrites.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = ["MARKED", "documents", "marked_tables", "output_of", "refresh"]

MARKED = re.compile(r"(<!-- table: (?P<cmd>.+?) -->\n)(?P<body>.*?)(<!-- /table -->)", re.S)


def documents(root: str | Path) -> list[Path]:
    root = Path(root)
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def marked_tables(text: str) -> Iterator[tuple[str, str]]:
    """(command, quoted body) of every marked table of a document."""
    for match in MARKED.finditer(text):
        yield match.group("cmd"), match.group("body")


def output_of(command: str, root: str | Path) -> str:
    """What ``gradlab ...`` prints, run from ``root``."""
    import os

    from typer.testing import CliRunner

    from cli.main import app

    args = shlex.split(command)
    if args[:1] != ["gradlab"]:
        raise ValueError(f"a quoted table's command must start with gradlab: {command!r}")
    cwd = os.getcwd()
    os.chdir(root)
    try:
        result = CliRunner().invoke(app, args[1:])
    finally:
        os.chdir(cwd)
    if result.exit_code != 0:
        raise RuntimeError(f"{command!r} exited {result.exit_code}: {result.output.strip()}")
    return result.stdout.rstrip("\n") + "\n"  # the table; notes go to stderr


def refresh(root: str | Path) -> list[Path]:
    """Rewrites every marked table of the documents under ``root``; returns the changed ones."""
    changed = []
    for path in documents(root):
        text = path.read_text(encoding="utf-8")
        new = MARKED.sub(lambda m: m.group(1) + output_of(m.group("cmd"), root) + m.group(4), text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


if __name__ == "__main__":
    for path in refresh(sys.argv[1] if len(sys.argv) > 1 else "."):
        print(f"refreshed {path}")
