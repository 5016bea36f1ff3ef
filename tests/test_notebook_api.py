"""The notebook face (``import gradlab``): no TensorFlow on import, and the CLI's numbers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gradlab
from cli.main import app

FINDINGS = Path(__file__).resolve().parents[1] / "results" / "findings"
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


def test_curves_are_long_format_with_every_evaluation():
    frame = gradlab.curves(MAIN)
    assert list(frame.columns) == ["job", "variant", "task", "seed", "step", "metric", "value"]
    assert set(frame["metric"]) == {"eval/return"}
    assert frame["job"].nunique() == 50
    with pytest.raises(gradlab._api.ConfigError, match="unknown curve metric 'loss'"):
        gradlab.curves(MAIN, metrics=["loss"])
