"""The README's example notebook (``examples/notebook.ipynb``) runs in a real Jupyter kernel on the
main job's committed runs, and its numbers are the CLI's."""

from __future__ import annotations

import ast
import base64
import json
import os
from pathlib import Path

import pytest
from scipy import stats
from typer.testing import CliRunner

import gradlab
from cli.main import app

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "notebook.ipynb"
MAIN = ROOT / "results" / "findings" / "hidden_scale"

pytestmark = pytest.mark.skipif(not MAIN.is_dir(), reason="no committed runs here")


@pytest.fixture(scope="module")
def executed():
    """The notebook executed from ``examples/`` (as Jupyter opens it) in a ``python3`` kernel that
    imports this checkout's gradlab; its code cells' outputs by tag."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", path)  # the kernel imports the gradlab under test
        patch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
        where = {"metadata": {"path": str(NOTEBOOK.parent)}}  # Jupyter's cwd: the notebook's
        nbclient.NotebookClient(
            notebook, timeout=120, kernel_name="python3", resources=where
        ).execute()
    outputs = {}
    for cell in notebook.cells:
        for tag in cell.get("metadata", {}).get("tags", []):
            outputs[tag] = cell.outputs
    return outputs


def _result(outputs, kind="text/plain"):
    (result,) = [o for o in outputs if o["output_type"] in ("execute_result", "display_data")
                 and kind in o["data"]]  # fmt: skip
    return result["data"][kind]


def test_the_notebook_has_no_stored_outputs_and_every_cell_ran_without_error(executed):
    stored = json.loads(NOTEBOOK.read_text())
    assert all(not c.get("outputs") for c in stored["cells"] if c["cell_type"] == "code")
    assert {"runs", "table", "plot", "scores"} <= set(executed)
    assert not [o for outs in executed.values() for o in outs if o["output_type"] == "error"]


def test_the_notebook_s_table_is_the_cli_s(executed):
    cli = CliRunner().invoke(app, ["table", str(MAIN)])
    assert cli.exit_code == 0
    assert _result(executed["table"], "text/markdown").rstrip("\n") == cli.stdout.rstrip("\n")
    assert _result(executed["table"], "text/html") == gradlab.table(MAIN)._repr_html_()


def test_the_notebook_counts_every_run_and_draws_a_figure(executed):
    printed = "".join(o.get("text", "") for o in executed["runs"] if o["output_type"] == "stream")
    assert printed.strip() == f"{len(list(MAIN.glob('*/summary.json')))} runs" == "50 runs"
    png = base64.b64decode(_result(executed["plot"], "image/png"))
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_the_notebook_s_iqm_is_computed_by_hand_from_the_summaries(executed):
    from experiments.tasks.registry import task_facts

    shown = ast.literal_eval(_result(executed["scores"]))
    random_return = task_facts("catch").random_return
    by_arm: dict[str, list[float]] = {}
    for path in MAIN.glob("*/summary.json"):
        s = json.loads(path.read_text())
        diverged = s["stability"]["diverged"] == 1 or s["stability"]["final_return"] is None
        value = (
            random_return * (s["reward_scale"] or 1.0)
            if diverged
            else s["stability"]["final_return"]
        )
        by_arm.setdefault(f"regime={s['regime']}, variant={s['variant']}", []).append(value)
    expected = {arm: round(float(stats.trim_mean(v, 0.25)), 4) for arm, v in by_arm.items()}
    assert shown == expected
    assert shown["regime=stress, variant=none"] < 0 < shown["regime=stress, variant=maxnorm"]
