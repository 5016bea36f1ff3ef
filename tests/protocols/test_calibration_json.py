"""calibration.json and calibration.md byte for byte: the typed record
(experiments/protocols/calibration/record.py's CalibrationRecord) writes what the dict-built record
wrote.

The golden files under tests/data/calibration/ were written by the protocol as it was before the
record was typed (commit 198f7f1's experiments/protocols/calibration/calibrate.py), on the stand-in
job, for four calibrations that cover every branch of the record: a chosen rung after an early stop,
a ladder run out, an unfinished rung, and the endpoint ``lost_after_learning`` (version 2). The
folders of the run (tmp_path) read ``<TMP>`` in them. ``GOLDEN_WRITE=1`` rewrites them (never needed
unless the record's format changes on purpose, which is a new record version).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import _standin_job as standin
import pytest

from experiments.jobs import store
from experiments.jobs.summary import Summary
from experiments.protocols.calibration.calibrate import prepare, run_calibration
from experiments.protocols.calibration.record import CalibrationRecord

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "data" / "calibration"
ROOT = pathlib.Path(__file__).resolve().parents[2]

LADDER = """\
rungs:
  - name: heavier
    times: {muzero.base_loss: 2}
  - name: heavier_still
    times: {muzero.base_loss: 3}
  - name: heaviest
    times: {muzero.base_loss: 5}
"""


def _run(diverged=0, collapsed=0, reached=1, *, status=None, norm=None, steps=500, final=0.95):
    stability = {
        "diverged": diverged,
        "collapsed": collapsed,
        "unstable": 1 if diverged else collapsed,
        "reached_threshold": reached,
        "steps_to_threshold": steps if reached else None,
        "diverged_step": 900 if diverged else None,
        "final_return": final,
        "grad_norm_median": norm,
    }
    status = status or ("diverged" if diverged else "completed")
    return Summary(status=status, task="catch", threshold=0.9, stability=stability)


STABLE = [_run(norm=1.25), _run(norm=0.3), _run(reached=0, norm=2.0 / 3.0), _run(), _run()]
CASES = {
    # rung 1 stopped after 4 seeds (batch 2: at best 0 + 1 of 5 < 0.4); rung 2 meets 2/5
    "chosen": (
        "unstable",
        2,
        [STABLE, [_run(1, norm=1e6), _run(1, norm=3.5e7), *STABLE[:3]]],
    ),
    # no rung meets the rule: the ladder runs out
    "exhausted": ("unstable", None, [STABLE, STABLE, [_run(1, norm=0.1), *STABLE[:4]]]),
    # a run that failed and one never run: incomplete after rung 1
    "incomplete": (
        "unstable",
        None,
        [[_run(1), _run(collapsed=1), _run(status="failed"), None, _run()]],
    ),
    # version 2: lost after learning (lost, diverged after learning) 2/5 on rung 2
    "lost": (
        "lost_after_learning",
        2,
        [
            [_run(1, reached=0)] * 5,
            [_run(collapsed=1, final=0.2), _run(1), _run(), _run(), _run(reached=1, final=None)],
        ],
    ),
}


def _calibrate(case, conf, tmp_path):
    endpoint, batch, verdicts = CASES[case]
    (conf / "ladder" / "three.yaml").write_text(LADDER)
    cal = prepare(
        ["task=catch", "ladder=three", "logger=none", f"runtime.results_dir={tmp_path}/r"],
        seeds="100-104",
        endpoint=endpoint,
        config_dir=conf,
        job=standin.JOB,
    )

    def run_sweep(overrides):
        index = next(
            i for i, s in enumerate(cal.settings) if cal.sweep_overrides(i)[:-2] == overrides[:-2]
        )
        seeds = next(o for o in overrides if o.startswith("seed=")).removeprefix("seed=")
        for j, seed in enumerate(cal.seeds):
            summary = verdicts[index][j]
            if str(seed) in seeds.split(",") and summary is not None:
                cal.jobs[index][j].job_dir.mkdir(parents=True, exist_ok=True)
                store.write_summary(cal.jobs[index][j].job_dir, summary)

    outcome = run_calibration(cal, run_sweep, echo=lambda line: None, batch=batch)
    return cal, outcome


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_record_is_written_byte_for_byte_as_before(case, standin_env, tmp_path):
    conf = pathlib.Path(standin_env.conf)
    cal, outcome = _calibrate(case, conf, tmp_path)
    for name in ("calibration.json", "calibration.md"):
        text = (cal.folder / name).read_text().replace(str(tmp_path), "<TMP>")
        golden = GOLDEN / f"{case}.{name.split('.')[1]}"
        if os.environ.get("GOLDEN_WRITE") == "1":
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_text(text)
        assert text == golden.read_text(), f"{case}: {name} differs from {golden}"
    # the typed record reads its own JSON back whole
    written = json.loads((cal.folder / "calibration.json").read_text())
    assert CalibrationRecord.from_json(written) == outcome.record
    assert outcome.record.to_json() == written


def _committed_records():
    """The calibration records committed under results/findings/ (git's copy, not the tree's:
    a calibration in progress may be writing beside them)."""
    try:
        names = subprocess.run(
            ["git", "ls-files", "results/findings/*calibration.json"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return []
    return names


@pytest.mark.parametrize("name", _committed_records())
def test_committed_records_read_back_to_the_same_bytes(name):
    text = subprocess.run(
        ["git", "show", f"HEAD:{name}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    record = CalibrationRecord.from_json(json.loads(text))
    assert json.dumps(record.to_json(), indent=2) + "\n" == text
