"""Where a table goes (cli/_output.py): the format from --format or --out's suffix, an output
refused where it would write over an input, and the file written or the text printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli._output import FORMATS, READ_FILES, emit, output_format, refuse_inputs
from experiments.base.errors import ConfigError


@pytest.mark.parametrize(
    ("fmt", "out", "want"),
    [
        (None, None, "md"),
        (None, "t.tex", "latex"),
        (None, "T.TEX", "latex"),  # the suffix in any case
        (None, "t.csv", "csv"),
        (None, "t.json", "json"),
        (None, "t.md", "md"),
        (None, "t.txt", "md"),  # an unknown suffix: the default
        ("csv", "t.tex", "csv"),  # --format wins over the suffix
    ],
)
def test_output_format(fmt, out, want):
    assert output_format(fmt, None if out is None else Path(out)) == want


def test_an_unknown_format_names_the_choices():
    with pytest.raises(ConfigError) as err:
        output_format("html", None)
    assert str(err.value) == f"unknown format 'html'; choose one of: {', '.join(sorted(FORMATS))}"


def _results(root: Path) -> Path:
    """A results folder: a record at its top, one job folder with its summary."""
    folder = root / "res"
    (folder / "job_a").mkdir(parents=True)
    (folder / "job_a" / "summary.json").write_text("{}")
    (folder / READ_FILES[0]).write_text("{}")
    return folder


def test_new_files_beside_or_outside_an_input_are_allowed(tmp_path):
    folder = _results(tmp_path)
    for out in (folder / "table.md", tmp_path / "table.md", None):
        refuse_inputs(out, [folder])


@pytest.mark.parametrize(
    ("where", "words"),
    [
        ("res/job_a/summary.json", "lies inside the input '{res}' (a run folder)"),
        ("res/job_a/new.md", "lies inside the input '{res}' (a run folder)"),
        (f"res/{READ_FILES[0]}", "lies inside the input '{res}' (its record)"),
    ],
)
def test_an_output_inside_a_run_folder_or_over_a_record_is_refused(tmp_path, where, words):
    folder = _results(tmp_path)
    with pytest.raises(ConfigError) as err:
        refuse_inputs(tmp_path / where, [folder])
    assert words.format(res=folder) in str(err.value) and "\n" not in str(err.value)


def test_an_output_that_is_an_input_file_is_refused(tmp_path):
    source = tmp_path / "runs.csv"
    source.write_text("x\n")
    with pytest.raises(ConfigError, match="is the input"):
        refuse_inputs(tmp_path / "." / "runs.csv", [source])


def test_emit_prints_or_writes_and_says_where(tmp_path, capsys):
    emit("| a |\n", None)
    assert capsys.readouterr().out == "| a |\n"
    out = tmp_path / "t.md"
    emit("| a |", out)  # a final newline added
    assert out.read_text() == "| a |\n" and capsys.readouterr().out == f"wrote {out}\n"


def test_emit_makes_no_folder(tmp_path):
    out = tmp_path / "missing" / "t.md"
    with pytest.raises(ConfigError, match="its folder '.*missing' does not exist"):
        emit("x", out)
    assert not (tmp_path / "missing").exists()


def test_emit_refuses_before_writing(tmp_path):
    folder = _results(tmp_path)
    target = folder / "job_a" / "summary.json"
    with pytest.raises(ConfigError):
        emit("x", target, [folder])
    assert target.read_text() == "{}"
