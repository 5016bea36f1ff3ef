"""Tests of the results folder: job names, atomic writes, torn-line reads, resume decisions."""

from __future__ import annotations

import json
import math

import pytest

from experiments.base.errors import ConfigError
from experiments.jobs import store


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["variant=scale_gradient", "seed=0"], "variant=scale_gradient__seed=0"),
        (["seed=0", "variant=scale_gradient"], "variant=scale_gradient__seed=0"),
        (
            ["seed=3", "variant.scale=0.25", "variant=scale_gradient", "ablation=scale_value"],
            "variant=scale_gradient__variant.scale=0.25__seed=3",
        ),
        (["logger=none", "runtime.threads=1", "runtime.results_dir=/x/y"], "default"),
        ([], "default"),
        (["+muzero.extra=1", "seed=1"], "muzero.extra=1__seed=1"),
        (["task.id=ALE/Pong-v5"], "task.id=ALE-Pong-v5"),
        (["hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "seed=2"], "seed=2"),
        (["variant.placement=paper", "variant=none"], "variant=none__variant.placement=paper"),
    ],
)
def test_job_name(overrides, expected):
    assert store.job_name(overrides) == expected


def test_job_name_is_filesystem_safe_and_mapping_equivalent():
    name = store.job_name({"task.id": "../../etc passwd*?", "seed": "0"})
    assert "/" not in name and " " not in name and "*" not in name and "?" not in name
    assert not name.startswith(".")
    assert store.job_name({"seed": "1", "variant": "none"}) == store.job_name(
        ["variant=none", "seed=1"]
    )


def test_parse_overrides_rejects_missing_equals():
    with pytest.raises(ConfigError, match="'variant' is not of the form key=value"):
        store.parse_overrides(["variant"])
    assert store.parse_overrides(["++a.b=1", "~c"]) == {"a.b": "1", "~c": ""}


def test_ablation_dir(tmp_path):
    assert store.ablation_dir(tmp_path, "hidden_scale") == tmp_path / "hidden_scale"
    assert store.ablation_dir(tmp_path, None) == tmp_path / "runs"


def test_atomic_write_replaces_whole_file_and_leaves_no_temp(tmp_path):
    path = tmp_path / "sub" / "summary.json"
    store.write_json_atomic(path, {"status": "running", "x": float("nan")})
    store.write_json_atomic(path, {"status": "completed", "loss": float("inf")})
    assert json.loads(path.read_text()) == {"status": "completed", "loss": "inf"}
    assert sorted(p.name for p in path.parent.iterdir()) == ["summary.json"]


def test_atomic_write_keeps_old_file_when_serialisation_fails(tmp_path):
    path = tmp_path / "summary.json"
    store.write_json_atomic(path, {"status": "running"})
    with pytest.raises(TypeError):
        store.write_json_atomic(path, {"status": object()})
    assert json.loads(path.read_text()) == {"status": "running"}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_atomic_bytes_write_that_fails_names_the_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    """A full disk fails the fsync with ENOSPC and no file name (the OS is the edge faked here):
    the error names the file written, the old bytes stay, no temporary file is left."""
    path = tmp_path / "curves.csv.gz"
    store.write_bytes_atomic(path, b"\x1f\x8bold")

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store.os, "fsync", full)
    with pytest.raises(OSError, match=r"\[Errno 28\] No space left on device: '.*curves.csv.gz'"):
        store.write_bytes_atomic(path, b"\x1f\x8bnew")
    monkeypatch.undo()
    assert path.read_bytes() == b"\x1f\x8bold"
    assert [p.name for p in tmp_path.iterdir()] == ["curves.csv.gz"]


def test_metrics_roundtrip_with_nonfinite_values(tmp_path):
    path = tmp_path / "metrics.jsonl"
    with store.MetricsWriter(path) as writer:
        writer.append({"step": 1, "loss/total": 2.5})
        writer.append({"step": 2, "loss/total": float("nan"), "grad/global_norm": float("-inf")})
    assert writer.rows == 2
    rows = store.read_metrics(path)
    assert rows[0] == {"step": 1, "loss/total": 2.5}
    assert math.isnan(rows[1]["loss/total"]) and rows[1]["grad/global_norm"] == -math.inf


def test_metrics_writer_starts_a_fresh_file(tmp_path):
    path = tmp_path / "metrics.jsonl"
    with store.MetricsWriter(path) as writer:
        writer.append({"step": 1})
        writer.append({"step": 2})
    with store.MetricsWriter(path) as writer:  # a re-run must not duplicate rows
        writer.append({"step": 1})
    assert store.read_metrics(path) == [{"step": 1}]


def test_read_metrics_tolerates_a_torn_last_line_only(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1}\n{"step": 2}\n{"step": 3, "loss/to')
    assert store.read_metrics(path) == [{"step": 1}, {"step": 2}]
    path.write_text('{"step": 1}\n{"ste\n{"step": 3}\n')
    with pytest.raises(ConfigError, match="line 2"):
        store.read_metrics(path)
    assert store.read_metrics(tmp_path / "missing.jsonl") == []


def test_read_metrics_torn_line_after_nan_rows(tmp_path):
    """Both spellings of NaN come back as floats: the writer's ``"nan"`` string and JSON's bare
    ``NaN`` token (Python's json module writes it when allow_nan is on)."""
    path = tmp_path / "metrics.jsonl"
    lines = ['{"step": 1, "loss/total": 2.0}', '{"step": 2, "loss/total": NaN, "g": "inf"}',
             '{"step": 3, "lo']  # fmt: skip
    path.write_text("\n".join(lines))
    rows = store.read_metrics(path)
    assert [r["step"] for r in rows] == [1, 2]
    assert math.isnan(rows[1]["loss/total"]) and rows[1]["g"] == math.inf


def test_read_metrics_corrupt_middle_line_and_empty_file(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1}\nnot json\n{"step": 3}\n')
    with pytest.raises(ConfigError, match="line 2 is not a JSON object"):
        store.read_metrics(path)
    path.write_text('{"step": 1}\n[1, 2]\n{"step": 3}\n')  # JSON, but not an object
    with pytest.raises(ConfigError, match="line 2"):
        store.read_metrics(path)
    path.write_text("")
    assert store.read_metrics(path) == []


@pytest.mark.parametrize(
    ("content", "force", "expected"),
    [
        (None, False, (True, "new")),
        ('{"status": "completed"}', False, (False, "completed")),
        ('{"status": "diverged"}', False, (False, "diverged")),
        ('{"status": "timeout"}', False, (False, "timeout")),
        ('{"status": "completed"}', True, (True, "forced")),
        ('{"status": "failed"}', False, (True, "failed")),
        ('{"status": "running"}', False, (True, "unfinished")),
        ('{"status": "compl', False, (True, "unfinished")),
        ('{"status": "bogus"}', False, (True, "unfinished")),
    ],
)
def test_should_run(tmp_path, content, force, expected):
    if content is not None:
        (tmp_path / "summary.json").write_text(content)
    assert store.should_run(tmp_path, force=force) == expected


def test_long_job_names_stay_distinct_keep_the_seed_and_fit():
    long = [f"muzero.setting_{i}={'x' * 20}" for i in range(10)]
    names = {store.job_name([*long, f"seed={s}"]) for s in range(3)}
    assert len(names) == 3
    for s, name in enumerate(sorted(names)):
        assert len(name) == 200 and name.endswith(f"__seed={s}")
    assert len({name.rsplit("__seed=", 1)[0] for name in names}) == 1  # one group, one prefix
    other = store.job_name([*long[:-1], "muzero.setting_9=y", "seed=0"])
    assert other not in names and len(other) == 200  # differs past the cut: the hash tells
    assert store.job_name(["variant=none", "seed=1"]) == "variant=none__seed=1"  # short: as is


def test_a_full_disk_names_the_file_it_could_not_write(tmp_path):
    """/dev/full fails every write with ENOSPC, as a full disk does; the error names the file
    (a failed write names none by itself)."""
    path = tmp_path / "metrics.jsonl"
    path.symlink_to("/dev/full")
    writer = store.MetricsWriter(path)
    with pytest.raises(OSError, match=r"\[Errno 28\] No space left on device: '.*metrics.jsonl'"):
        writer.append({"step": 1})
    with pytest.raises(OSError, match="No space left on device: '.*metrics.jsonl'"):
        writer.close()
    writer.close()  # closed once: nothing left to fail
