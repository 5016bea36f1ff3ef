"""Every table quoted in README.md and docs/ equals what its command prints from the committed
summaries (docs/doc_tables.py, a script), so a quoted table cannot drift from its data."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("doc_tables", ROOT / "docs" / "doc_tables.py")
doc_tables = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(doc_tables)
QUOTED = [
    pytest.param(cmd, body, id=f"{path.name}: {cmd}")
    for path in doc_tables.documents(ROOT)
    for cmd, body in doc_tables.marked_tables(path.read_text(encoding="utf-8"))
]


def test_the_marker_pattern_finds_a_table():
    text = "x\n<!-- table: gradlab table a -->\n| a |\n<!-- /table -->\n"
    assert list(doc_tables.marked_tables(text)) == [("gradlab table a", "| a |\n")]


@functools.cache
def _output_of(command: str) -> str:
    """A command's output, run once: README.md and docs/studies.md quote two tables each with
    the same command (the committed folders do not change while the tests run)."""
    return doc_tables.output_of(command, ROOT)


@pytest.mark.parametrize(("command", "body"), QUOTED)
def test_quoted_table_regenerates(command, body):
    assert _output_of(command) == body
