"""Bad inputs (issue 7, item 4): every bad command line or config value gives exit code 2, one
line ``error: ...`` naming the value, no traceback, and leaves existing results untouched.

One table of cases over ``gradlab run``, ``sweep``, ``table`` and ``plot``: unknown names, wrong
types, zero or negative sizes, a negative scale, empty / corrupt / missing / mixed results
folders, a read-only results folder and a results folder holding another ablation's jobs. Every
case runs against the same tree of finished results, checksummed (paths, bytes and modes)
before and after.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

import _standin_job as standin
import pytest
from conftest import compose_config
from typer.testing import CliRunner

from cli.main import app
from experiments.jobs.process import isolation
from experiments.launch.hydra_app import job_request


def _job(conf: Path, folder: Path, *, variant: str = "none", seed: int = 0, ablation: str) -> None:
    overrides = ["regime=tuned", f"variant={variant}", f"seed={seed}"]  # the folders' names
    extra = ["muzero.training_steps=3", "logger=none", "runtime.progress=false"]
    cfg = compose_config(conf, [*overrides, *extra], schema=standin.MuZeroConfig)
    choices = {"task": "catch", "ablation": ablation}
    request = job_request(cfg, folder, overrides=overrides, choices=choices)
    assert isolation.execute(request, job=standin.JOB).status == "completed"


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """Finished results and broken folders under ``data/``; the stand-in's config folder."""
    root = tmp_path_factory.mktemp("bad_inputs")
    with pytest.MonkeyPatch.context() as mp:
        conf = standin.make_conf(root)
        data = root / "data"
        res = data / "res"
        _job(
            conf,
            res / "hidden_scale" / "regime=tuned__variant=none__seed=0",
            ablation="hidden_scale",
        )
        _job(conf, res / "hidden_scale" / "regime=tuned__variant=scale_gradient__seed=0",
             variant="scale_gradient", ablation="hidden_scale")  # fmt: skip
        _job(conf, res / "runs" / "seed=0", ablation=None)
        # a folder named hidden_scale holding a job of the clip ablation (copied or renamed)
        _job(
            conf,
            data / "other" / "hidden_scale" / "regime=tuned__variant=none__seed=0",
            ablation="clip",
        )
        _job(
            conf,
            data / "ro" / "hidden_scale" / "regime=tuned__variant=none__seed=0",
            ablation="hidden_scale",
        )
        (data / "empty").mkdir()
        (data / "corrupt" / "job").mkdir(parents=True)
        (data / "corrupt" / "job" / "summary.json").write_text('{"status": "compl')
        (data / "mixed").mkdir()
        shutil.copytree(
            res / "hidden_scale" / "regime=tuned__variant=none__seed=0", data / "mixed" / "a"
        )
        shutil.copytree(
            data / "other" / "hidden_scale" / "regime=tuned__variant=none__seed=0",
            data / "mixed" / "b",
        )
        (data / "afile").write_text("not a folder\n")
        for path in sorted((data / "ro").rglob("*"), reverse=True) + [data / "ro"]:
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        yield {"conf": conf, "data": data, "mp": mp}
        for path in [data / "ro", *(data / "ro").rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)


def _checksum(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        digest.update(f"{path.relative_to(root)}|{stat.S_IMODE(info.st_mode):o}|".encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


R = "runtime.results_dir={res}"
C = ("--config-dir", "{conf}")

# (command line, what the one error line must contain); {res}, {data}, {conf} are filled in
BAD = [
    # unknown names
    (["sweep", "ablation=nope", R, *C], "unknown ablation 'nope'; choose one of: calibration, "),
    (["sweep", R, *C], "gradlab sweep needs ablation=NAME; choose one of: calibration, clip"),
    (["sweep", "ablation=clip", "variant=nope,clipnorm", R, *C], "unknown variant 'nope'"),
    (["run", "variant=maxnorn", R, *C], "unknown variant 'maxnorn'; choose one of"),
    (["run", "regime=paper", R, *C], "regime 'paper' was renamed 'tuned'"),
    (["sweep", "ablation=hidden_scale", "regime=paper", R, *C], "use regime=tuned"),
    (["run", "task=pong", R, *C], "unknown task 'pong'; choose one of: catch"),
    (["run", "logger=wandb", R, *C], "unknown logger 'wandb'; choose one of: none"),
    (["run", "logger.mode=cloud", R, *C], "unknown logger.mode 'cloud'; choose one of"),
    (["run", "variant.placement=paperr", R, *C], "unknown placement 'paperr'"),
    (["run", "variant.scal=0.3", R, *C], "unknown key variant.scal; valid keys under variant"),
    (["run", "sed=1", R, *C], "unknown key sed; valid keys at the top level"),
    (["run", "muzero.nope=1", R, *C], "unknown key muzero.nope; valid keys under muzero"),
    (["run", "variant=none", "+variant.scale=0.5", R, *C], "unknown key variant.scale;"),
    # wrong types
    (["run", "seed=abc", R, *C], "seed='abc' has the wrong type"),
    (["run", "seed=1.5", R, *C], "seed=1.5 has the wrong type"),
    (["run", "variant=scale_gradient", "variant.scale=abc", R, *C], "scale='abc' has the wrong"),
    (["run", "budget.max_steps=ten", R, *C], "budget.max_steps='ten' has the wrong type"),
    (["run", "runtime.force=maybe", R, *C], "runtime.force='maybe' has the wrong type"),
    (["run", "muzero.training_steps=abc", R, *C], "muzero.training_steps='abc' has the wrong"),
    (["run", "seed", R, *C], "'seed' is not of the form key=value"),
    # zero or negative sizes, scale < 0, out of range
    (["run", "seed=-1", R, *C], "seed=-1 is out of range"),
    (["run", "variant=scale_gradient", "variant.scale=-0.5", R, *C], "scale=-0.5 is out of range"),
    (["run", "variant=clipnorm", "variant.clipnorm=0", R, *C], "clipnorm=0"),
    (["run", "variant=maxnorm", "variant.max_value=-1", R, *C], "max_value=-1"),
    (["run", "muzero.training_steps=0", R, *C], "muzero.training_steps=0 must be >= 1"),
    (["run", "muzero.training_steps=-5", R, *C], "muzero.training_steps=-5 must be >= 1"),
    (["run", "budget.max_steps=0", R, *C], "budget.max_steps=0 is out of range"),
    (["run", "budget.max_wall_s=-1", R, *C], "budget.max_wall_s=-1.0 is out of range"),
    (["run", "divergence.factor=0.5", R, *C], "divergence.factor=0.5 is out of range"),
    (["run", "divergence.reference_steps=0", R, *C], "divergence.reference_steps=0 is out of"),
    (["run", "runtime.threads=0", R, *C], "runtime.threads=0 is out of range"),
    (["run", "logger.every=0", R, *C], "logger.every=0 is out of range"),
    (["sweep", "ablation=clip", "--jobs", "0", R, *C], "--jobs 0 is out of range"),
    (["sweep", "ablation=clip", "--jobs", "-2", R, *C], "--jobs -2 is out of range"),
    # misused commands
    (["run", "seed=0,1", R, *C], "'seed=0,1' is a sweep; a single run takes one value"),
    (["run", "ablation=clip", R, *C], "ablation='clip' is a sweep preset"),
    (["run", "--config-dir", "{data}/empty"], "holds no config.yaml"),
    # results folders: read-only, not a folder, another ablation's
    (
        ["sweep", "ablation=hidden_scale", "variant=none", "seed=1",
         "runtime.results_dir={data}/ro", *C],
        "results folder '{data}/ro' is read-only",
    ),
    (["run", "runtime.results_dir={data}/ro", *C], "results folder '{data}/ro' is read-only"),
    (["run", "runtime.results_dir={data}/afile", *C], "'{data}/afile' is not a folder"),
    (
        ["sweep", "ablation=hidden_scale", "regime=tuned", "variant=none", "seed=0",
         "runtime.results_dir={data}/other", *C],
        "holds a job of ablation 'clip', not 'hidden_scale'",
    ),
    # gradlab table / plot on bad folders and options
    (["table", "{data}/empty"], "no runs in '{data}/empty'"),
    (["table", "{data}/corrupt"], "corrupt summary file '{data}/corrupt/job/summary.json'"),
    (["table", "{data}/missing"], "results folder '{data}/missing' does not exist"),
    (["table", "{data}/afile"], "results folder '{data}/afile' is not a folder"),
    (["table", "{data}/mixed"], "mixed ablations in '{data}/mixed': clip, hidden_scale"),
    (["table", "{res}"], "holds several ablation folders"),
    (["table", "{res}/hidden_scale", "--format", "xls"], "unknown format 'xls'"),
    (["table", "{res}/hidden_scale", "--stat", "mode"], "unknown statistic 'mode'"),
    (["table", "{res}/hidden_scale", "-m", "nope"], "unknown metric 'nope'"),
    (["table", "{res}/hidden_scale", "--baseline", "nope"], "nope"),
    (["table", "{res}/hidden_scale", "--analysis", "both"],
     "unknown analysis 'both'; choose one of: independent, paired"),
    (["table", "{res}/hidden_scale", "--rate-test", "chi2"],
     "unknown rate test 'chi2'; choose one of: barnard, fisher"),
    (["table", "{res}/hidden_scale", "--alpha", "0"],
     "--alpha '0' is not valid; expected a number in (0, 1)"),
    (["table", "{res}/hidden_scale", "--analysis", "paired", "--baseline", "lr=0.1"],
     "unknown baseline key 'lr'; choose one of: "),
    (["plot", "{data}/empty"], "no runs in '{data}/empty'"),
    (["plot", "{data}/corrupt"], "corrupt summary file"),
]  # fmt: skip


def _fill(text: str, tree: dict) -> str:
    data = tree["data"]
    return text.format(res=data / "res", data=data, conf=tree["conf"])


@pytest.mark.parametrize(("args", "message"), BAD, ids=[" ".join(a[:3]) for a, _ in BAD])
def test_bad_input_exit_2_one_line_no_traceback_results_untouched(tree, args, message):
    before = _checksum(tree["data"])
    result = CliRunner().invoke(app, [_fill(a, tree) for a in args], obj=standin.JOB)
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert _fill(message, tree) in lines[0]
    assert "Traceback" not in result.output and not isinstance(result.exception, Exception | None)
    assert _checksum(tree["data"]) == before


def test_there_are_at_least_30_cases():
    assert len(BAD) >= 30


def test_read_only_results_still_give_a_table_and_a_dry_run(tree):
    """Reading a protected folder is no error: only writing into it is."""
    data = tree["data"]
    before = _checksum(data)
    table = CliRunner().invoke(app, ["table", str(data / "ro" / "hidden_scale")])
    assert table.exit_code == 0, table.output
    args = ["sweep", "ablation=hidden_scale", "regime=tuned", "variant=none", "seed=0,1"]
    dry = CliRunner().invoke(
        app, [*args, f"runtime.results_dir={data / 'ro'}", "--dry-run", "--config-dir",
              str(tree["conf"])], obj=standin.JOB,
    )  # fmt: skip
    assert dry.exit_code == 0 and "1 to run, 1 to skip" in dry.output, dry.output
    assert _checksum(data) == before
    assert os.access(data / "ro", os.W_OK) or os.geteuid() != 0  # root could write: we refuse
