"""Every table quoted in README.md and docs/ equals what its command prints from the committed
summaries (experiments/report/doc_tables.py), so a quoted table cannot drift from its data."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.report.doc_tables import documents, marked_tables, output_of

ROOT = Path(__file__).resolve().parents[1]
QUOTED = [
    pytest.param(cmd, body, id=f"{path.name}: {cmd}")
    for path in documents(ROOT)
    for cmd, body in marked_tables(path.read_text(encoding="utf-8"))
]


def test_the_marker_pattern_finds_a_table():
    text = "x\n<!-- table: gradlab table a -->\n| a |\n<!-- /table -->\n"
    assert list(marked_tables(text)) == [("gradlab table a", "| a |\n")]


@pytest.mark.parametrize(("command", "body"), QUOTED)
def test_quoted_table_regenerates(command, body):
    assert output_of(command, ROOT) == body
