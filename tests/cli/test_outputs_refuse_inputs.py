"""No command writes over what it reads: an ``-o`` that is, or lies inside, an input folder's run
folder or record is refused in one line, exit 2, nothing written (issue 49's probes)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app

FINDINGS = Path(__file__).resolve().parents[2] / "results" / "findings"
STUDY = FINDINGS / "study_catch_stress"

pytestmark = pytest.mark.skipif(not STUDY.is_dir(), reason="no committed study here")


@pytest.fixture
def copy(tmp_path) -> Path:
    """The study's record and five runs of each of its primary contrast's arms."""
    target = tmp_path / "study"
    target.mkdir()
    shutil.copy2(STUDY / "preregistration.json", target / "preregistration.json")
    for arm in ("variant=none__", "variant=scale_gradient__"):
        for job in sorted(p for p in STUDY.iterdir() if arm in p.name)[:5]:
            shutil.copytree(job, target / job.name)
    return target


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("command", "where", "message"),
    [
        (["table"], "run", "lies inside the input"),
        (["table", "-f", "json"], "record", "lies inside the input"),
        (["pool"], "run", "lies inside the input"),
        (["plot"], "run-folder", "lies inside the input"),
    ],
)
def test_an_output_over_an_input_is_refused(copy, tmp_path, command, where, message):
    run = next(p for p in sorted(copy.iterdir()) if p.is_dir())
    out = {
        "run": run / "summary.json",
        "record": copy / "preregistration.json",
        "run-folder": run / "figures",
    }[where]
    before = _snapshot(copy)
    args = [*command, str(copy)]
    if command[0] == "pool":
        other = tmp_path / "other"
        shutil.copytree(copy, other)
        args.append(str(other))
    result = CliRunner().invoke(app, [*args, "-o", str(out)] if command[0] != "plot" else [
        *args, "--out", str(out)])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and message in result.output
    assert _snapshot(copy) == before


def test_a_new_file_at_an_input_s_top_level_is_written(copy):
    out = copy / "table.md"
    result = CliRunner().invoke(app, ["table", str(copy), "-m", "failed_v1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("| variant")


def test_a_single_run_into_a_registered_study_folder_is_refused(copy):
    before = _snapshot(copy)
    result = CliRunner().invoke(app, ["run", "variant=maxnorm", "seed=9",
                                      f"hydra.run.dir={copy}/x", "logger=none"])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "lies inside the registered study folder" in result.output
    assert _snapshot(copy) == before and not (copy / "x").exists()


def test_python_m_cli_is_the_command_line():
    import subprocess
    import sys

    for module in ("cli", "cli.main"):  # python -m cli.main did nothing (issue 49 item 8)
        done = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True,
                              text=True, check=False, timeout=120)  # fmt: skip
        assert done.returncode == 0 and "Usage: gradlab" in done.stdout, module
