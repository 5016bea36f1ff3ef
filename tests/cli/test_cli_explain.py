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
    # header + one row per variant, per placement, per freeze case (5: none, stop_gradient at
    # two placements, freezing two networks)
    assert len(rows) == (1 + len(VARIANTS)) + (1 + len(PLACEMENTS)) + (1 + 5)
    freeze_row = "| freeze dynamics | 10.5  6  5.25 | repr moved, dyna FIXED, pred moved |"
    assert freeze_row in result.stdout
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


def test_freeze_vs_stop_gradient_by_hand():
    # h0 = r, h1 = w h0, h2 = w h1, y_k = p h_k, L = sum y_k^2 with r=1, w=0.5, p=2:
    # y = (2, 1, 0.5), dL/dy = (4, 2, 1); dL/dp = 4*1 + 2*0.5 + 1*0.25 = 5.25;
    # dL/dh direct = (8, 4, 2). none: dL/dw = 2 (h1 + w h0) + 4 h0 = 6,
    # dL/dr = 8 + 4w + 2w^2 = 10.5.
    # stop_gradient at the 2nd dynamics input: dL/dw = 2 h1 + 4 h0 = 5, dL/dr = 8 + 4w = 10;
    # at every dynamics input (paper): dL/dw = 5, dL/dr = 8.
    from experiments.gradients.explain import explain_freeze

    rows = {row.case: row for row in explain_freeze()}
    expected = {
        "none": (10.5, 6.0, 5.25),
        "stop_gradient, pseudocode placement": (10.0, 5.0, 5.25),
        "stop_gradient, paper placement": (8.0, 5.0, 5.25),
        "freeze representation": (10.5, 6.0, 5.25),
        "freeze dynamics": (10.5, 6.0, 5.25),
    }
    assert set(rows) == set(expected)
    for case, grads in expected.items():
        assert tuple(rows[case].gradients.values()) == pytest.approx(grads), case
    frozen = {"freeze representation": "representation", "freeze dynamics": "dynamics"}
    for case, row in rows.items():
        assert row.moved == {n: n != frozen.get(case) for n in row.moved}, case
