"""A summary is bound to its run: an edited figure, rewritten curves, a deleted or garbage run is
an audit breach (issue 49's probes), on a copy of a committed study; the committed studies
recompute cleanly."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from experiments.jobs import store
from experiments.launch.hydra_app import CONF_DIR
from experiments.protocols.study.audit import audit
from experiments.protocols.study.figures import run_mismatches

FINDINGS = Path(__file__).resolve().parents[2] / "results" / "findings"
STUDY = FINDINGS / "study_catch_stress"

pytestmark = pytest.mark.skipif(not STUDY.is_dir(), reason="no committed study here")


@pytest.fixture
def copy(tmp_path) -> Path:
    target = tmp_path / STUDY.name
    shutil.copytree(STUDY, target, ignore=shutil.ignore_patterns("figures"))
    return target


def _breaches(folder: Path) -> dict[str, str]:
    return {c.name: c.line for c in audit(folder, config_dir=CONF_DIR).breaches}


def _first(folder: Path, status: str) -> Path:
    jobs = (p for p in sorted(folder.iterdir()) if p.is_dir())
    return next(p for p in jobs if (store.read_summary(p) or store.Summary("failed")).status
                == status)  # fmt: skip


def _edit(job: Path, edit) -> None:
    data = json.loads((job / "summary.json").read_text())
    edit(data)
    (job / "summary.json").write_text(json.dumps(data))


def test_the_copy_passes(copy):
    assert _breaches(copy) == {}


@pytest.mark.parametrize(
    ("status", "edit", "found"),
    [
        ("diverged", lambda d: d["stability"].update(unstable=0), "unstable=0 is not diverged"),
        ("diverged", lambda d: d.update(status="completed"), "status completed but"),
        ("diverged", lambda d: d.update(status="failed"), "status failed but"),
        ("completed", lambda d: d["stability"].update(final_return=0.99), "final_return"),
        ("completed", lambda d: d["stability"].update(reached_threshold=1 - d["stability"][
            "reached_threshold"]), "reached_threshold"),
    ],
)  # fmt: skip
def test_an_edited_summary_is_a_breach(copy, status, edit, found):
    job = _first(copy, status)
    _edit(job, edit)
    breaches = _breaches(copy)
    assert any(found in line for line in breaches.values()), breaches


def test_rewritten_curves_are_a_breach(copy):
    job = _first(copy, "completed")
    path = job / "curves.csv.gz"
    text = gzip.decompress(path.read_bytes()).decode()
    head, *rows = text.splitlines()
    cols = head.split(",")
    at = cols.index("eval/return")
    rows = [",".join("999" if i == at and v else v for i, v in enumerate(r.split(",")))
            for r in rows]  # fmt: skip
    path.write_bytes(gzip.compress("\n".join([head, *rows]).encode() + b"\n"))
    assert "figures differ from its curves" in _breaches(copy).get("figures", "")


def test_a_deleted_run_is_named_and_stars_nothing_and_a_garbage_one_is_a_breach(copy):
    from experiments.protocols.study.analysis import audit_note

    jobs = sorted(p for p in copy.iterdir() if p.is_dir())
    shutil.rmtree(jobs[0])
    result = audit(copy, config_dir=CONF_DIR)
    accounted = next(c for c in result.checks if c.name == "accounted")
    assert (
        "incomplete: 1 registered run(s) not in yet" in accounted.line and "seed" in accounted.line
    )
    # no * anywhere, and the caption names the missing run (issue 49 item 3)
    name = jobs[0].name  # regime=...__variant=V__seed=S: its arm and seed
    seed = name.rsplit("seed=", 1)[1]
    note = audit_note(copy)
    assert "is incomplete (1 registered run(s) not in: " in note and f" seed {seed})" in note
    (jobs[1] / "summary.json").write_text('{"schema": 99, "status": "completed"}')
    assert "not a summary" in _breaches(copy)["accounted"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_a_committed_run_deleted_later_is_a_breach(copy):
    import subprocess

    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=copy,
                       check=True, capture_output=True)  # fmt: skip

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "runs")
    job = sorted(p for p in copy.iterdir() if p.is_dir())[3]
    shutil.rmtree(job)
    assert f"git has seen are gone (deleted): {job.name}" in _breaches(copy)["accounted"]
    git("commit", "-qam", "a run removed")  # committed, the deletion stays in the history
    assert f"git has seen are gone (deleted): {job.name}" in _breaches(copy)["accounted"]


def test_a_new_run_binds_its_curves_by_hash(tmp_path):
    # a finished job's summary carries its curves' SHA-256 (jobs.finish), which the check uses
    job = _first(STUDY, "completed")
    target = tmp_path / job.name
    shutil.copytree(job, target)
    import hashlib

    digest = hashlib.sha256((target / "curves.csv.gz").read_bytes()).hexdigest()
    _edit(target, lambda d: d.update(curves_sha256=digest))
    assert run_mismatches(target, store.read_summary(target)) == []
    _edit(target, lambda d: d.update(curves_sha256="0" * 64))
    assert run_mismatches(target, store.read_summary(target)) == [
        "curves.csv.gz does not hash as its summary binds it"
    ]


def test_a_record_rewritten_outside_git_fails_against_its_published_hash(copy):
    from experiments.jobs.identity import file_sha256

    published = file_sha256((copy / "preregistration.json").read_bytes())
    ok = audit(copy, config_dir=CONF_DIR, expect_sha256=published)
    assert not ok.breaches
    assert "anchor" in {c.name for c in ok.checks}
    unanchored = next(c for c in audit(copy, config_dir=CONF_DIR).checks if c.name == "anchor")
    assert unanchored.ok and unanchored.line.startswith("unanchored: outside git")
    record = json.loads((copy / "preregistration.json").read_text())
    record["registered_at"] = "2026-11-01T00:00:00Z"
    (copy / "preregistration.json").write_text(json.dumps(record))
    breaches = _breaches_against(copy, published)
    assert "not the published" in breaches["anchor"]


def _breaches_against(folder: Path, published: str) -> dict[str, str]:
    result = audit(folder, config_dir=CONF_DIR, expect_sha256=published)
    return {c.name: c.line for c in result.breaches}


def test_a_pinned_study_run_without_its_identity_is_a_breach(tmp_path):
    source = FINDINGS / "study_faithful_catch"
    copy = tmp_path / source.name
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("figures"))
    assert _breaches(copy) == {}
    job = next(p for p in sorted(copy.iterdir()) if p.is_dir())
    _edit(job, lambda d: d.update(schema=2, started_at=None, code=None))
    assert "no schema 3, started_at, code" in _breaches(copy)["identity"]
    code = {"commit": "x", "dirty": False, "tree_sha256": "y"}
    times = {"started_at": "2026-11-27T05:00:00Z", "ended_at": "2026-11-27T04:00:00Z"}
    _edit(job, lambda d: d.update(schema=3, code=code, **times))
    assert "ended before it started" in _breaches(copy)["identity"]
