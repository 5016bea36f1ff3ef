"""experiments/jobs/curves.py, a job's curves.csv.gz: which rows are kept, the round trip against
metrics.jsonl, the fallback, and the file's mode and bytes (the store's atomic writer)."""

from __future__ import annotations

import gzip
import json
import math
import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments.base.errors import ConfigError
from experiments.jobs import store
from experiments.jobs.curves import (
    CURVE_KEYS,
    CURVES_FILE,
    MAX_POINTS,
    compact_curves,
    read_curves,
    write_curves,
    write_folder_curves,
)
from experiments.jobs.store import read_metrics


def _rows(last: int, *, diverge: bool = False) -> list[dict]:
    rows = []
    for t in range(1, last + 1):
        row = {"step": t, "loss/total": 1.0 / t, "grad/global_norm": 0.1 * t + 1e-3 / 3}
        if t % 50 == 0:
            row["eval/return"] = math.sin(t) / 3  # not a short decimal: tests the float format
        rows.append(row)
    if diverge:
        rows[-1].update({"loss/total": float("nan"), "grad/global_norm": float("inf")})
    return rows


def _job(tmp_path, rows, *, training_steps=1000):
    job = tmp_path / "job"
    job.mkdir()
    summary = {"status": "completed", "training_steps": training_steps}
    (job / "summary.json").write_text(json.dumps(summary))
    text = "\n".join(json.dumps({k: str(v) if v in (math.inf, -math.inf) or v != v else v
                                 for k, v in r.items()}) for r in rows)  # fmt: skip
    (job / "metrics.jsonl").write_text(text + "\n")
    return job


def test_kept_rows_by_hand():
    frame = compact_curves(_rows(1000), training_steps=1000)
    # stride = ceil(1000 / 198) = 6: steps 6, 12, ..., 996 (166 of them), plus steps 1 and 1000
    sampled = frame.dropna(subset=["grad/global_norm"])["step"].tolist()
    assert sampled == [1, *range(6, 1000, 6), 1000] and len(sampled) <= MAX_POINTS
    # every evaluation (steps 50, 100, ..., 1000), whether or not it is a sampled step
    assert frame.dropna(subset=["eval/return"])["step"].tolist() == list(range(50, 1001, 50))
    at_50 = frame[frame["step"] == 50].iloc[0]  # 50 is not a multiple of 6: eval only
    assert at_50["eval/return"] == math.sin(50) / 3 and np.isnan(at_50["grad/global_norm"])


def test_stride_follows_the_planned_length_not_the_stop():
    """A run that diverged at step 400 of 1000 planned is sampled at the same steps as the others,
    and keeps its last (diverging) row."""
    frame = compact_curves(_rows(400, diverge=True), training_steps=1000)
    sampled = frame.dropna(subset=["loss/total"], how="all")["step"].tolist()
    assert sampled[1:4] == [6, 12, 18] and frame["step"].iloc[-1] == 400
    assert np.isinf(frame["grad/global_norm"].iloc[-1])


def test_round_trip_equals_metrics_at_the_kept_steps(tmp_path):
    job = _job(tmp_path, _rows(700, diverge=True))
    path = write_curves(job)
    assert path == job / CURVES_FILE
    from_metrics = read_curves(job)
    (job / "metrics.jsonl").rename(job / "metrics.jsonl.away")  # as on a fresh clone
    from_file = read_curves(job)
    pd.testing.assert_frame_equal(from_file, from_metrics)
    by_step = {r["step"]: r for r in read_metrics(job / "metrics.jsonl.away")}
    kept = 0
    for row in from_file.to_dict("records"):
        for key in CURVE_KEYS:
            if not np.isnan(row[key]):  # a kept value is the logged one, to the last bit
                assert row[key] == by_step[row["step"]][key]
                kept += 1
    # 700 steps of 1000 planned, stride 6: steps 1, 6..696 (116) and 700 -> 118 grad norms and 118
    # losses but the last loss is NaN (117); evaluations at 50..700 (14)
    assert kept == 118 + 117 + 14


def test_file_is_small_and_byte_identical_when_rewritten(tmp_path):
    job = _job(tmp_path, _rows(3000), training_steps=3000)
    first = write_curves(job).read_bytes()
    assert write_curves(job).read_bytes() == first  # no time stamp in the gzip header
    assert len(first) < 12_000
    text = gzip.decompress(first).decode()
    assert text.splitlines()[0] == "step,eval/return,grad/global_norm,loss/total"


def test_missing_and_corrupt(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    assert write_curves(job) is None and not (job / CURVES_FILE).exists()
    assert read_curves(job).empty
    (job / CURVES_FILE).write_bytes(b"not gzip")
    with pytest.raises(ConfigError, match="corrupt curves file"):
        read_curves(job)
    (job / CURVES_FILE).write_bytes(gzip.compress(b"step,x\n1,2\n"))
    with pytest.raises(ConfigError, match="no column eval/return"):
        read_curves(job)


def test_write_folder_curves(tmp_path):
    job = _job(tmp_path, _rows(100))
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "summary.json").write_text('{"status": "failed"}')  # no metrics
    assert write_folder_curves(tmp_path) == [job / CURVES_FILE]


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664)])
def test_curves_are_written_with_the_umasks_mode(tmp_path, umask, mode):
    """The store's atomic writer, as summary.json: not mkstemp's 0600, which a shared results
    folder's other members could not read."""
    job = _job(tmp_path, _rows(100))
    old = os.umask(umask)
    try:
        path = write_curves(job)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert [p.name for p in job.iterdir() if p.name.endswith(".tmp")] == []


COMMITTED = sorted(
    Path(__file__).resolve().parents[2].glob("results/findings/hidden_scale/*/curves.csv.gz")
)


@pytest.mark.skipif(not COMMITTED, reason="no committed curves in this checkout")
@pytest.mark.parametrize("committed", COMMITTED[:3], ids=lambda p: p.parent.name)
def test_committed_curves_are_rewritten_to_the_same_bytes(tmp_path, committed):
    """The kept rows of a committed curves.csv.gz, as the metrics of a job with its summary, are
    kept again at the same steps (same stride: multiples stay multiples, first and last stay) and
    written to the committed bytes: the writer's format (17 digits, no gzip time stamp) holds."""
    job = tmp_path / "job"
    job.mkdir()
    shutil.copy(committed.parent / "summary.json", job / "summary.json")
    frame = pd.read_csv(committed, compression="gzip", float_precision="round_trip")
    rows = [
        {key: (int(value) if key == "step" else value) for key, value in row.items()
         if not (isinstance(value, float) and math.isnan(value))}
        for row in frame.to_dict("records")
    ]  # fmt: skip
    store.write_text_atomic(job / "metrics.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    assert write_curves(job).read_bytes() == committed.read_bytes()
