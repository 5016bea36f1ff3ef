"""The typed summary: its JSON form, schema versions, and the files written before versions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.base.errors import ConfigError
from experiments.jobs import store
from experiments.jobs.summary import SCHEMA, Summary

COMMITTED = Path(__file__).resolve().parents[2] / "results" / "findings"


def test_round_trip_writes_the_schema_first_and_reads_back_equal(tmp_path):
    summary = Summary(status="completed", job="seed=0", steps=3, stability={"diverged": 0})
    store.write_summary(tmp_path, summary)
    data = json.loads((tmp_path / "summary.json").read_text())
    assert list(data)[:3] == ["schema", "status", "job"] and data["schema"] == SCHEMA
    assert store.read_summary(tmp_path) == summary == store.load_summary(tmp_path)


def test_a_file_without_a_schema_is_version_1_with_defaults_for_missing_fields(tmp_path):
    (tmp_path / "summary.json").write_text('{"status": "failed", "job": "j", "extra": 1}')
    summary = store.read_summary(tmp_path)
    assert summary == Summary(status="failed", job="j", schema=1)
    assert summary.group == {} and summary.wall_time_s is None and summary.steps == 0


def test_every_committed_summary_reads(tmp_path):
    paths = sorted(COMMITTED.glob("**/summary.json"))
    if not paths:
        pytest.skip("no committed findings in this checkout")
    for path in paths:
        data = json.loads(path.read_text())
        summary = store.load_summary(path.parent)
        assert summary.schema == data.get("schema", 1)
        written = summary.to_json()
        assert {k: written[k] for k in data} == data  # every field as it was


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1]", "expected a JSON object"),
        ('{"steps": 1}', "no 'status' key"),
        ('{"status": "done"}', "unknown status in"),
        ('{"status": "completed", "group": 3}', "'group' must be an object"),
        (f'{{"status": "completed", "schema": {SCHEMA + 1}}}', "a newer gradlab wrote it"),
        ('{"status": "compl', "corrupt summary file"),
    ],
)
def test_what_is_not_a_summary_is_refused_naming_the_file(tmp_path, content, message):
    (tmp_path / "summary.json").write_text(content)
    with pytest.raises(ConfigError, match=message) as err:
        store.load_summary(tmp_path)
    assert str(tmp_path / "summary.json") in str(err.value)
    assert store.read_summary(tmp_path) is None  # for decisions: no summary
