"""CLI tests of `gradlab run`, `gradlab sweep` (validation, dry run) and `gradlab list`."""

from __future__ import annotations

import json
import subprocess
import sys

import _standin_job as standin
import pytest
from typer.testing import CliRunner

from cli.main import app

ABLATIONS = ("hidden_scale", "scale_placement", "scale_value", "loss_scale", "unroll", "clip")


@pytest.fixture
def env(standin_env):
    """The stand-in's config folder and job (tests/conftest.py), as a dict."""
    return {"conf": standin_env.conf, "res": standin_env.res, "common": standin_env.common}


def _invoke(args):
    return CliRunner().invoke(app, args, obj=standin.JOB)


def test_list_names_every_choice_without_tensorflow():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from cli.main import app\n"
        "r = CliRunner().invoke(app, ['list'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(r.output)\n"
        "print('TF_IMPORTED' if 'tensorflow' in sys.modules else 'TF_ABSENT')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip().endswith("TF_ABSENT")
    for name in ABLATIONS:
        assert f"  {name} " in out
    from experiments.gradients import PLACEMENTS, VARIANTS
    from experiments.muzero.options import LOSS_SCALES, NORMALISATIONS, Q_FORMS

    for registry in (VARIANTS, PLACEMENTS, LOSS_SCALES, NORMALISATIONS, Q_FORMS):
        for name, entry in registry.items():
            assert f"  {name}" in out and entry.summary in out
    assert "scale=0.5" in out  # a variant's parameters with their defaults
    assert "catch" in out and "wandb_offline" in out and "  paper " in out
    # the calibrated presets, the ladders and the studies, each with its file's first comment
    conf = standin.CONF
    for path in sorted((conf / "regime" / "calibrated").glob("*.yaml")):
        assert f"  calibrated/{path.stem} " in out
    assert "catch_pseudocode" in out and "Calibrated for task=catch" in out
    for group in ("ladder", "study"):
        for path in sorted((conf / group).glob("*.yaml")):
            assert f"  {path.stem} " in out
    assert "ladders (gradlab calibrate ladder=NAME):" in out and "  harsh " in out
    assert "studies (gradlab study plan|register|run NAME):" in out and "  catch_stress " in out


def test_no_variant_yaml_the_nodes_come_from_the_registry():
    assert not (standin.CONF / "variant").exists()


@pytest.mark.parametrize("command", ["run", "sweep", "list"])
def test_help_has_examples(command):
    result = _invoke([command, "--help"])
    assert result.exit_code == 0 and "Example" in result.output


def test_run_then_rerun_is_skipped(env):
    args = ["run", "seed=1", "muzero.training_steps=3", *env["common"], "--config-dir", env["conf"]]
    result = _invoke(args)
    assert result.exit_code == 0, result.output
    job = env["res"] / "runs" / "muzero.training_steps=3__seed=1"
    summary = json.loads((job / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["steps"] == 3
    assert summary["ablation"] is None and summary["group"] == {"muzero.training_steps": "3"}
    assert f"completed: {job}" in result.output
    again = _invoke(args)
    assert again.exit_code == 0 and "already completed" in again.output
    forced = _invoke([*args, "--force"])
    assert forced.exit_code == 0 and "completed:" in forced.output


def test_failed_run_exits_1_with_traceback_saved(env):
    result = _invoke(["run", "muzero.fail_at=2", *env["common"], "--config-dir", env["conf"]])
    assert result.exit_code == 1
    job = env["res"] / "runs" / "muzero.fail_at=2"
    assert json.loads((job / "summary.json").read_text())["status"] == "failed"
    assert "stand-in failure at step 2" in (job / "error.txt").read_text()


def test_dry_run_lists_jobs_and_writes_nothing(env):
    args = ["sweep", "ablation=hidden_scale", "seed=0,1", *env["common"], "--config-dir"]
    result = _invoke([*args, env["conf"], "--dry-run"])
    assert result.exit_code == 0, result.output
    # 5 variants x 2 regimes (paper, stress) x 2 seeds
    assert "20 to run, 0 to skip" in result.output
    assert "hidden_scale/regime=stress__variant=stop_gradient__seed=1  (new)" in result.output
    assert not env["res"].exists()


def test_dry_run_refuses_a_results_folder_that_is_a_file(env, tmp_path):
    # issue 49, item 8: the dry run said "20 to run" where the real run refuses
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    common = [o for o in env["common"] if not o.startswith("runtime.results_dir=")]
    args = ["sweep", "ablation=hidden_scale", "seed=0,1", *common, f"runtime.results_dir={afile}"]
    result = _invoke([*args, "--config-dir", env["conf"], "--dry-run"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert lines == [f"error: results folder '{afile}' is not a folder; choose runtime.results_dir"]
    assert afile.read_text() == "keep me"


BAD = [
    (["sweep"], "gradlab sweep needs ablation=NAME; choose one of: calibration, clip, hidden_"),
    (["sweep", "ablation=hiden_scale"], "unknown ablation 'hiden_scale'; choose one of: calib"),
    (["sweep", "ablation=clip", "variant=nope,none"], "unknown variant 'nope'; choose one of"),
    (["sweep", "ablation=clip", "--jobs", "0"], "--jobs 0 is out of range"),
    (["sweep", "ablation=clip", "--jobs", "-2"], "--jobs -2 is out of range"),
    (["sweep", "ablation=clip", "--jobs", "many"], "--jobs 'many' is not valid; expected auto"),
    (
        ["sweep", "ablation=clip", "--jobs", "2", "hydra/launcher=joblib"],
        "--jobs 2 picks hydra/launcher=joblib",
    ),
    (["sweep", "ablation=clip", "seed=0,x"], "seed='x' has the wrong type"),
    (["sweep", "ablation=scale_value", "seed=-1"], "seed=-1 is out of range"),
    (["run", "variant=maxnorn"], "unknown variant 'maxnorn'; choose one of"),
    (["run", "task=pong"], "unknown task 'pong'; choose one of: catch"),
    (["run", "logger=wandb"], "unknown logger 'wandb'; choose one of: none, wandb_offline"),
    (["run", "variant.placement=paperr"], "unknown placement 'paperr'; choose one of: hook"),
    (["run", "variant=scale_gradient", "variant.scale=-1"], "scale=-1 is out of range"),
    (["run", "variant=scale_gradient", "variant.scale=abc"], "scale='abc' has the wrong type"),
    (["run", "variant.scal=0.3"], "unknown key variant.scal; valid keys under variant: name"),
    (["run", "sed=1"], "unknown key sed; valid keys at the top level"),
    (["run", "budget.max_steps=-3"], "budget.max_steps=-3 is out of range"),
    (["run", "budget.max_wall_s=0"], "budget.max_wall_s=0.0 is out of range"),
    (["run", "seed=0,1"], "'seed=0,1' is a sweep; a single run takes one value"),
    (["run", "ablation=clip"], "ablation='clip' is a sweep preset"),
    (["run", "seed"], "'seed' is not of the form key=value"),
    (["run", "muzero.training_steps=0"], "muzero.training_steps=0 must be >= 1"),
    (["run", "hydra/launcher=nosuch"], "unknown hydra/launcher 'nosuch'; choose one of: basic"),
    (["sweep", "ablation=clip", "hydra/sweeper=x"], "unknown hydra/sweeper 'x'; choose one of"),
    (["run", "regime=calm"], "unknown regime 'calm'; choose one of: high_lr, large_reward"),
]


@pytest.mark.parametrize(("args", "message"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_one_line_exit_2_nothing_written(env, args, message):
    command, *rest = args  # the command's own arguments last: they win over the common ones
    result = _invoke([command, *env["common"], *rest, "--config-dir", env["conf"]])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert message in lines[0]
    assert "Traceback" not in result.output
    assert not env["res"].exists()


def test_bad_config_dir(tmp_path):
    result = _invoke(["run", "--config-dir", str(tmp_path)])
    assert result.exit_code == 2 and "holds no config.yaml" in result.stderr
