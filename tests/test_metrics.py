"""Stability summary: hand-computed figures on tiny runs, and the metrics-file reader."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from experiments.errors import ConfigError
from experiments.metrics import (
    STABILITY_KEYS,
    read_metrics,
    running_median_spikes,
    stability_summary,
)

_NORMS = [1.0, 2.0, 3.0, 4.0, 100.0, 5.0, 6.0, 7.0, 8.0, 9.0]
_EVALS = {2: 0.2, 5: 0.9, 10: 0.5}


def _rows(n: int = 10) -> list[dict]:
    """Steps 1..n: loss n+1-step, norms above, hidden grads with ratio step/10."""
    rows = []
    for step in range(1, n + 1):
        row = {
            "step": step,
            "loss/total": float(n + 1 - step),
            "grad/global_norm": _NORMS[(step - 1) % len(_NORMS)],
            "grad/hidden_depth_0": 10.0,
            "grad/hidden_depth_3": 7.0,  # a middle depth: ignored
            "grad/hidden_depth_5": float(step),
            "hidden/norm_depth_0": 2.0,
            "hidden/norm_depth_5": 6.0,
            "nonfinite": 0.0,
            "time/elapsed_s": 1.5 * step,
        }
        if step in _EVALS:
            row["eval/return"] = _EVALS[step]
        rows.append(row)
    return rows


def test_hand_computed_figures():
    s = stability_summary(_rows(), threshold=0.9)
    assert list(s) == list(STABILITY_KEYS)
    assert s["diverged"] == 0 and s["diverged_step"] is None
    assert s["steps"] == 10
    assert s["final_loss"] == 1.0  # last 10% of 10 rows = the last row
    assert s["loss_auc"] == pytest.approx(49.5 / 9)  # linear 10 -> 1 over 9 steps: mean 5.5
    assert s["grad_norm_median"] == pytest.approx(5.5)
    assert s["grad_norm_p99"] == pytest.approx(9 + 0.91 * 91)  # numpy linear interpolation
    assert s["grad_norm_max"] == 100.0
    assert s["spike_count"] == 1  # 100 > 10 x median(1, 2, 3, 4) = 25
    assert s["grad_hidden_ratio"] == pytest.approx(0.55)  # median of 0.1 .. 1.0
    assert s["hidden_norm_growth"] == pytest.approx(3.0)
    assert s["final_return"] == 0.5
    assert s["return_auc"] == pytest.approx((3 * 1.1 / 2 + 5 * 1.4 / 2) / 8)
    assert s["reached_threshold"] == 1 and s["steps_to_threshold"] == 5
    assert s["wall_time_s"] == 15.0


def test_final_loss_is_last_tenth_and_order_does_not_matter():
    rows = _rows(20)
    s = stability_summary(list(reversed(rows)), threshold=None)
    assert s["final_loss"] == pytest.approx(1.5)  # mean of the last 2 losses (2, 1)
    assert s["reached_threshold"] == 0 and s["steps_to_threshold"] is None


def test_threshold_not_reached_and_wall_time_argument():
    s = stability_summary(_rows(), threshold=0.95, wall_time_s=42.0)
    assert s["reached_threshold"] == 0 and s["steps_to_threshold"] is None
    assert s["wall_time_s"] == 42.0


def test_diverged_run():
    rows = _rows()[:7]
    rows[-1].update({"loss/total": float("nan"), "grad/global_norm": float("inf"), "nonfinite": 1})
    s = stability_summary(rows, threshold=0.9)
    assert s["diverged"] == 1 and s["diverged_step"] == 7
    assert s["final_loss"] is None  # the loss at the end is not finite
    assert s["loss_auc"] == pytest.approx(7.5)  # finite rows 1..6: linear 10 -> 5
    assert s["grad_norm_max"] == 100.0  # finite norms only
    json.dumps(s, allow_nan=False)  # strict JSON


def test_nonfinite_flag_alone_marks_divergence():
    rows = _rows()
    rows[3]["nonfinite"] = 1.0
    assert stability_summary(rows, threshold=None)["diverged_step"] == 4


def test_empty_run():
    s = stability_summary([], threshold=0.9)
    assert s["steps"] == 0 and s["diverged"] == 0 and s["spike_count"] == 0
    assert s["final_loss"] is None and s["final_return"] is None and s["wall_time_s"] is None


def test_no_depth_keys_gives_none():
    rows = [{"step": 1, "loss/total": 1.0}]
    s = stability_summary(rows, threshold=None)
    assert s["grad_hidden_ratio"] is None and s["hidden_norm_growth"] is None


def test_spikes_match_brute_force():
    rng = np.random.default_rng(3)
    values = np.exp(rng.normal(size=300) * 1.5)
    values[[50, 120]] = np.nan
    for factor in (2.0, 5.0, 10.0):
        expected, history = 0, []
        for v in values:
            if not np.isfinite(v):
                continue
            if history and v > factor * np.median(history):
                expected += 1
            history.append(v)
        assert running_median_spikes(values, factor=factor) == expected
    assert running_median_spikes(values, factor=2.0) > 0  # the data does have spikes


@pytest.mark.parametrize("factor", [0, -1, float("nan")])
def test_bad_spike_factor(factor):
    with pytest.raises(ConfigError, match="spike_factor"):
        stability_summary(_rows(), threshold=None, spike_factor=factor)


def test_read_metrics_tolerates_torn_last_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    lines = ['{"step": 1, "loss/total": 2.0}', '{"step": 2, "loss/total": NaN}', '{"step": 3, "lo']
    path.write_text("\n".join(lines))
    rows = read_metrics(path)
    assert [r["step"] for r in rows] == [1, 2]
    assert math.isnan(rows[1]["loss/total"])


def test_read_metrics_rejects_corrupt_middle_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1}\nnot json\n{"step": 3}\n')
    with pytest.raises(ConfigError, match="line 2"):
        read_metrics(path)


def test_read_metrics_missing_and_empty(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        read_metrics(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    assert read_metrics(tmp_path / "empty.jsonl") == []
