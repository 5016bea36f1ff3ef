"""`gradlab explain` through Typer's CliRunner: live figures, all formats, bad input."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli.main import app
from experiments.gradients import PLACEMENTS, VARIANTS


@pytest.fixture(scope="module")
def explained() -> dict:
    result = CliRunner().invoke(app, ["explain", "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_has_every_variant_and_placement(explained):
    assert [v["name"] for v in explained["variants"]] == list(VARIANTS)
    assert [p["name"] for p in explained["placements"]] == list(PLACEMENTS)


def test_json_figures_match_hand_computed_values(explained):
    v = {row["name"]: row for row in explained["variants"]}
    assert v["scale_gradient"]["forward_max_abs_diff"] == 0.0
    assert v["scale_gradient"]["gradient_factor"] == pytest.approx(0.5)
    assert v["stop_gradient"]["gradient_factor"] == 0.0
    assert v["none"]["gradient_factor"] == pytest.approx(1.0)
    # MaxNorm at 2 shrinks row [1.5, 2, 2.5, 3] (norm sqrt(21.5)): largest change 3 - 3*2/sqrt(21.5)
    assert v["maxnorm"]["forward_max_abs_diff"] == pytest.approx(3 - 6 / 21.5**0.5, rel=1e-5)
    assert v["clipnorm"]["scope"] == "per variable"
    assert v["global_clipnorm"]["scope"] == "global"
    assert v["maxnorm"]["scope"] == "per sample"
    assert v["maxnorm_kernel"]["scope"] == "per kernel column"
    p = {row["name"]: row for row in explained["placements"]}
    assert p["pseudocode"]["grad_h0"] == pytest.approx([1, 2, 2, 2])
    assert p["paper"]["grad_h0"] == pytest.approx([1, 1, 1, 1])
    assert p["hook"]["grad_w"] == pytest.approx([0, 0.5, 1.5, 3.5])


def test_json_states_the_confusions(explained):
    text = " ".join(explained["confusions"])
    assert "scale_gradient is not clipnorm" in text
    assert "scale_gradient is not MaxNorm" in text
    assert "stop_gradient is scale_gradient with scale 0" in text


def test_markdown_table():
    result = CliRunner().invoke(app, ["explain", "--format", "md"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    rows = [line for line in lines if line.startswith("| ") and "---" not in line]
    # header + 7 variants, header + 3 placements
    assert len(rows) == (1 + len(VARIANTS)) + (1 + len(PLACEMENTS))
    assert "| scale_gradient | gradient | scale=0.5 | 0 | 0.5 |" in result.stdout


def test_rich_table_on_terminal():
    result = CliRunner().invoke(app, ["explain"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Hidden-state variants, measured live" in result.stdout
    for name in list(VARIANTS) + list(PLACEMENTS):
        assert name in result.stdout


def test_bad_format_is_one_line_and_exit_2():
    result = CliRunner().invoke(app, ["explain", "--format", "xml"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: unknown format 'xml'; choose one of: json, md, rich"
    assert "Traceback" not in result.output
