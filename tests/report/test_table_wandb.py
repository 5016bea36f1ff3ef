"""``gradlab table DIR --wandb``: the table in a real offline W&B run of the sweep's group, read
back from the run's files; a W&B failure changes neither the table nor the results folder."""

from __future__ import annotations

import base64
import hashlib
import json
import math
from pathlib import Path

import pytest
from _wandb_records import record_objects, wait_for_exit
from typer.testing import CliRunner

import gradlab
from cli.main import app
from experiments.base.errors import ConfigError
from experiments.report.table.to_wandb import wandb_mode

MAIN = Path(__file__).resolve().parents[2] / "results" / "findings" / "hidden_scale"
committed = pytest.mark.skipif(not MAIN.is_dir(), reason="no committed runs here")
METRICS = "unstable,final_return"


@pytest.fixture
def wandb_env(tmp_path, monkeypatch):
    """W&B's own folders (artifact staging, cache, settings) under ``tmp_path``, WANDB_MODE
    unset (the default: offline)."""
    import wandb

    monkeypatch.delenv("WANDB_MODE", raising=False)
    for name in ("WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    yield tmp_path
    # the W&B service this test started in the pytest process, with these folders, is shut down:
    # a later test's run starts its own (left running, it failed later tests' init after the
    # sweep tests, MailboxClosedError)
    wandb.teardown()


def _table(*args):
    return CliRunner().invoke(app, ["table", str(MAIN), "-m", METRICS, *map(str, args)])


def _snapshot(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*")}


def _md5(text: str) -> str:
    return base64.b64encode(hashlib.md5(text.encode("utf-8")).digest()).decode()


@committed
def test_the_table_reaches_an_offline_run_of_the_sweep_s_group(wandb_env):
    before = _snapshot(MAIN)
    done = _table("--wandb", "--wandb-dir", wandb_env / "wb")
    assert done.exit_code == 0, done.output
    table = gradlab.table(MAIN, metrics=METRICS.split(","))
    assert done.stdout == table.to_markdown()  # the table printed is the one without --wandb
    (run_file,) = (wandb_env / "wb").glob("wandb/offline-run-*/run-*.wandb")
    assert f"wandb sync {run_file.parent}" in done.stderr
    wait_for_exit(run_file)
    found = {}
    for record in record_objects(run_file):
        which = record.WhichOneof("record_type")
        if which == "run":
            found["run"] = record.run
        elif which == "history":
            items = [i for i in record.history.item if i.nested_key[:1] == ["table"]]
            found["table"] = {i.nested_key[1]: json.loads(i.value_json) for i in items}
        elif which == "artifact" and record.artifact.type == "table":
            found["artifact"] = record.artifact
    assert found["run"].run_group == "hidden_scale" and found["run"].job_type == "table"
    # the wandb.Table: the typed table's rows, every column and number
    media = found["table"]
    assert media["_type"] == "table-file" and media["nrows"] == len(table.rows) == 10
    logged = json.loads((run_file.parent / "files" / media["path"]).read_text())
    assert logged["columns"] == list(table.rows.columns)
    for got, (_, row) in zip(logged["data"], table.rows.iterrows(), strict=True):
        for value, expected in zip(got, row.tolist(), strict=True):
            if isinstance(expected, float) and math.isnan(expected):
                assert value is None or math.isnan(value)
            elif isinstance(expected, float):
                assert value == pytest.approx(expected, rel=1e-12)
            else:
                assert value == expected or str(value) == str(expected)
    # the artifact: the Markdown the CLI printed and the CSV, by their MD5 digests
    artifact = found["artifact"]
    assert artifact.name == "table-hidden_scale"
    contents = {c.path: c for c in artifact.manifest.contents}
    assert contents["table.md"].digest == _md5(table.to_markdown())
    assert Path(contents["table.md"].local_path).read_text() == table.to_markdown()
    assert contents["table.csv"].digest == _md5(table.rows.to_csv(index=False))
    assert _snapshot(MAIN) == before


@committed
def test_a_w_and_b_failure_is_one_warning_and_changes_no_table(wandb_env, monkeypatch):
    import wandb

    plain = _table("-o", wandb_env / "plain.md")
    assert plain.exit_code == 0
    before = _snapshot(MAIN)

    def boom(*args, **kwargs):
        raise RuntimeError("W&B is down")

    monkeypatch.setattr(wandb, "init", boom)
    done = _table("--wandb", "--wandb-dir", wandb_env / "wb", "-o", wandb_env / "t.md")
    assert done.exit_code == 0, done.output
    assert (wandb_env / "t.md").read_bytes() == (wandb_env / "plain.md").read_bytes()
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: W&B")]
    assert len(warnings) == 1 and "W&B is down" in warnings[0]
    assert not list((wandb_env / "wb").glob("wandb/*run-*"))
    assert _snapshot(MAIN) == before
    printed = _table("--wandb", "--wandb-dir", wandb_env / "wb")  # to stdout: the same table
    assert printed.exit_code == 0 and printed.stdout == _table().stdout


@committed
@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["--wandb-dir", MAIN], {}, "lies inside the results folder"),
        (["--wandb-dir", MAIN / "wandb"], {}, "lies inside the results folder"),
        (["--wandb-dir", "{tmp}/wb"], {"WANDB_MODE": "sometimes"},
         "unknown WANDB_MODE 'sometimes'; choose one of: disabled, offline, online"),
    ],
)  # fmt: skip
def test_bad_w_and_b_input_is_one_line_exit_2_before_any_work(
    wandb_env, monkeypatch, args, env, expected
):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    before = _snapshot(MAIN)
    args = [str(a).replace("{tmp}", str(wandb_env)) for a in args]
    done = _table("--wandb", *args)
    assert done.exit_code == 2
    assert done.stdout == ""  # no table: refused before any work
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and expected in line and "Traceback" not in done.output
    assert _snapshot(MAIN) == before and not (wandb_env / "wb").exists()


@committed
def test_wandb_mode_disabled_logs_nothing_and_says_so(wandb_env, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    done = _table("--wandb", "--wandb-dir", wandb_env / "wb")
    assert done.exit_code == 0 and done.stdout == _table().stdout
    assert "WANDB_MODE=disabled" in done.stderr
    assert not (wandb_env / "wb").exists()


def test_wandb_mode_defaults_to_offline_and_maps_w_and_b_s_old_names():
    assert wandb_mode({}) == "offline"
    assert wandb_mode({"WANDB_MODE": ""}) == "offline"
    assert wandb_mode({"WANDB_MODE": "dryrun"}) == "offline"
    assert wandb_mode({"WANDB_MODE": "run"}) == "online"
    assert wandb_mode({"WANDB_MODE": "Online"}) == "online"
    with pytest.raises(ConfigError, match="unknown WANDB_MODE 'x'"):
        wandb_mode({"WANDB_MODE": "x"})
