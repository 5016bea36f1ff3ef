"""The notebook face (``import gradlab``): no TensorFlow on import, and the CLI's numbers."""

from __future__ import annotations

import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gradlab
from cli.main import app

FINDINGS = Path(__file__).resolve().parents[2] / "results" / "findings"
MAIN = FINDINGS / "hidden_scale"

pytestmark = pytest.mark.skipif(not MAIN.is_dir(), reason="no committed runs here")


def test_import_gradlab_does_not_import_tensorflow():
    code = "import sys, gradlab; print('tensorflow' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)  # fmt: skip
    assert done.stdout.strip() == "False"


def test_the_table_is_the_cli_s():
    table = gradlab.table(MAIN, metrics=["unstable", "final_return", "grad_norm_p99"])
    cli = CliRunner().invoke(app, ["table", str(MAIN), "-m", "unstable,final_return,grad_norm_p99"])
    assert cli.exit_code == 0
    assert table.to_markdown().rstrip("\n") == cli.stdout.rstrip("\n")
    assert table._repr_markdown_() == table.to_markdown()


def test_runs_has_one_row_per_run_with_outcome_and_identity():
    frame = gradlab.runs(MAIN)
    assert len(frame) == 50 and frame["seed"].nunique() == 5
    for column in ("variant", "regime", "status", "outcome", "failed", "final_return",
                   "started_at", "config_sha256"):  # fmt: skip
        assert column in frame
    # by hand: the main job's stress none arm, unstable 3 of 5 (the README's table)
    stress_none = frame[(frame.regime == "stress") & (frame.variant == "none")]
    assert int(stress_none["unstable"].sum()) == 3


def test_runs_names_the_cpu_type_each_run_was_made_on():
    import json

    folder = FINDINGS / "study_minatar_return"
    frame = gradlab.runs(folder)
    for path, cpu in zip(frame["path"], frame["cpu"], strict=True):
        summary = Path(path) / "summary.json"  # none yet: a run that has just started here
        raw = json.loads(summary.read_text()) if summary.is_file() else {"versions": {"cpu": None}}
        assert cpu == raw["versions"]["cpu"]
    # Study 6's first runs were made on an Intel Xeon (docs/studies.md, its deviation)
    first = frame[(frame.task == "breakout") & (frame.variant == "none") & (frame.seed == 6000)]
    assert list(first["cpu"]) == ["Intel(R) Xeon(R) Processor (AVX-512)"]


def test_curves_are_long_format_with_every_evaluation():
    frame = gradlab.curves(MAIN)
    assert list(frame.columns) == ["job", "variant", "task", "seed", "step", "metric", "value"]
    assert set(frame["metric"]) == {"eval/return"}
    assert frame["job"].nunique() == 50
    with pytest.raises(gradlab._api.ConfigError, match="unknown curve metric 'loss'"):
        gradlab.curves(MAIN, metrics=["loss"])


class _Cells(HTMLParser):
    """The rows of an HTML table as ``[(text, bold text)]`` per cell, and the paragraph below."""

    def __init__(self):
        super().__init__()
        self.rows, self.paragraph, self._bold, self._where = [], "", False, None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.rows[-1].append(["", ""])
            self._where = "cell"
        elif tag == "b":
            self._bold = True
        elif tag == "p":
            self._where = "p"

    def handle_endtag(self, tag):
        self._bold = self._bold and tag != "b"
        self._where = None if tag in ("td", "th", "p") else self._where

    def handle_data(self, data):
        if self._where == "cell":
            self.rows[-1][-1][0] += data
            self.rows[-1][-1][1] += data if self._bold else ""
        elif self._where == "p":
            self.paragraph += data


def test_jupyter_s_html_shows_the_markdown_s_cells_bold_alike_and_the_caption():
    table = gradlab.table(MAIN)
    parser = _Cells()
    parser.feed(table._repr_html_())
    markdown, caption = table.to_markdown().split("\n\n", 1)
    lines = markdown.splitlines()
    expected = []  # by hand from the Markdown: cells between "|", "**x**" bold, the rule skipped
    for line in lines[:1] + lines[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        expected.append(
            [(c.replace("**", ""), c.split("**")[1] if "**" in c else "") for c in cells]
        )
    got = [[tuple(cell) for cell in row] for row in parser.rows]
    assert got == expected
    assert sum(bool(b) for row in got for _, b in row) == table.to_markdown().count("**") // 2 > 0
    assert parser.paragraph == caption.rstrip("\n")
