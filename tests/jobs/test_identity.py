"""A run's and a record's identity: the code's hash, git's commit and dirty flag, the config hash,
UTC times, and what a job writes of them into its summary."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import _standin_job as standin
import pytest

from experiments.config import DivergenceConfig, LoggerConfig, RunConfig, variant_schema
from experiments.jobs import runner, store
from experiments.jobs.identity import (
    CodeIdentity,
    code_identity,
    config_fingerprint,
    dirty_paths,
    flat_config,
    package_root,
    parse_utc,
    tree_sha256,
)
from experiments.jobs.summary import SCHEMA, Summary
from experiments.tasks import TaskConfig

HAS_GIT = shutil.which("git") is not None


def _tree(root: Path) -> None:
    (root / "experiments" / "__pycache__").mkdir(parents=True)
    (root / "experiments" / "a.py").write_text("x")
    (root / "experiments" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"junk")
    (root / "conf").mkdir()
    (root / "conf" / "b.yaml").write_text("y")
    (root / "docs").mkdir()
    (root / "docs" / "c.md").write_text("not hashed")


def test_tree_hash_by_hand_sorted_paths_caches_left_out(tmp_path):
    _tree(tmp_path)
    expected = hashlib.sha256(
        b"conf/b.yaml\0"
        + hashlib.sha256(b"y").digest()
        + b"experiments/a.py\0"
        + hashlib.sha256(b"x").digest()
    ).hexdigest()
    assert tree_sha256(tmp_path) == expected
    (tmp_path / "docs" / "c.md").write_text("changed")  # outside experiments/ and conf/
    assert tree_sha256(tmp_path) == expected
    (tmp_path / "conf" / "b.yaml").write_text("y2")
    assert tree_sha256(tmp_path) != expected


def test_without_git_commit_and_dirty_are_none(tmp_path):
    _tree(tmp_path)
    identity = code_identity(tmp_path)
    assert identity == CodeIdentity(commit=None, dirty=None, tree_sha256=tree_sha256(tmp_path))
    assert dirty_paths(tmp_path) == []


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
def test_in_a_git_repository_the_commit_and_dirty_flag_of_the_pinned_paths(tmp_path):
    _tree(tmp_path)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "c")
    head = _git(tmp_path, "rev-parse", "HEAD")
    assert code_identity(tmp_path) == CodeIdentity(head, False, tree_sha256(tmp_path))
    (tmp_path / "docs" / "c.md").write_text("docs do not make the tree dirty")
    assert code_identity(tmp_path).dirty is False
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "new.py").write_text("untracked code does")
    assert code_identity(tmp_path).dirty is True
    assert dirty_paths(tmp_path) == ["cli/"]


def test_config_fingerprint_leaves_out_seed_runtime_and_logger():
    a = {"seed": 1, "runtime": {"threads": 1}, "logger": {"mode": "none"}, "muzero": {"lr": 0.1}}
    b = {"seed": 2, "runtime": {"threads": 4}, "logger": {"mode": "x"}, "muzero": {"lr": 0.1}}
    assert flat_config(a) == {"muzero.lr": 0.1} == flat_config(b)
    assert config_fingerprint(flat_config(a)) == hashlib.sha256(b'{"muzero.lr":0.1}').hexdigest()
    assert config_fingerprint({"muzero.lr": 0.2}) != config_fingerprint(flat_config(a))


def _cfg(seed: int = 3) -> RunConfig:
    return RunConfig(
        seed=seed,
        task=TaskConfig(),
        muzero=standin.MuZeroConfig(training_steps=3),
        variant=variant_schema("scale_gradient")(scale=0.5),
        divergence=DivergenceConfig(factor=100.0, reference_steps=2),
        logger=LoggerConfig(mode="none"),
    )


class _Quiet:
    def log(self, row, *, step):
        pass

    def finish(self, summary):
        pass


def _run(folder: Path, cfg: RunConfig) -> Summary:
    return runner.run_job(
        cfg,
        folder / "job",
        job="job",
        overrides={"variant": "scale_gradient", "seed": str(cfg.seed)},
        choices={"task": "catch"},
        resolved={"seed": cfg.seed},
        train_fn=standin.train,
        ablation="test",
        tracker=_Quiet(),
    )


def test_a_run_records_its_identity_and_its_folder_s_record_hash(tmp_path):
    study = tmp_path / "study"
    study.mkdir()
    record = b'{"study": "s"}\n'
    (study / "preregistration.json").write_bytes(record)
    cfg = _cfg()
    summary = _run(study, cfg)
    data = json.loads((study / "job" / "summary.json").read_text())
    assert data["schema"] == SCHEMA == 3
    assert data["seed"] == 3 and data["variant"] == "scale_gradient"
    assert data["variant_params"] == {"scale": 0.5}
    assert data["config_sha256"] == config_fingerprint(flat_config(cfg))
    assert data["record_sha256"] == hashlib.sha256(record).hexdigest()
    assert data["code"] == {
        "commit": code_identity().commit,
        "dirty": code_identity().dirty,
        "tree_sha256": tree_sha256(package_root()),
    }
    start, end = parse_utc(data["started_at"]), parse_utc(data["ended_at"])
    assert start is not None and end is not None and start <= end
    assert data["started_at"].endswith("Z") and start.utcoffset().total_seconds() == 0
    assert store.load_summary(study / "job") == summary
    # the same arm at another seed: the same config hash; no record outside a study: None
    other = _run(tmp_path / "plain", _cfg(seed=4))
    assert other.config_sha256 == summary.config_sha256 and other.record_sha256 is None
    # the run's numbers do not depend on where it ran or on its identity
    assert other.steps == summary.steps == 3


def test_an_identity_that_is_not_one_reads_as_none(tmp_path):
    (tmp_path / "summary.json").write_text(
        json.dumps(
            {"schema": 3, "status": "completed", "code": "x", "started_at": 5, "ended_at": None}
        )
    )
    summary = store.load_summary(tmp_path)
    assert summary.code is None and summary.started_at is None and summary.ended_at is None
