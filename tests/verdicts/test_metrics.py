"""Stability summary: hand-computed figures and verdicts on tiny, hand-built runs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments.base.errors import ConfigError
from experiments.verdicts.stability import (
    COLLAPSE_FRACTION,
    FINAL_WINDOW_START,
    STABILITY_KEYS,
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
    assert s["final_return"] == 0.5  # final window: steps > 0.9 x 10 (the last step seen) = {10}
    assert s["final_return_last"] == 0.5 and s["final_evals"] == 1
    assert s["best_return"] == 0.9  # moving average over w = 1 evaluation
    # no return range: the run's gain 0.9 - 0.2 = 0.7; fell 0.4 >= 0.25 x 0.7 and stayed there
    assert s["collapsed"] == 1 and s["unstable"] == 1
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


# --- the return verdicts: final window, best window, collapse, unstable -----------------------


def _curve(evals: dict[int, float], *, last_step: int | None = None) -> list[dict]:
    """One row per step 1..last_step (default: the last evaluation), a flat finite loss, and
    ``eval/return`` on the given steps."""
    last = last_step if last_step is not None else max(evals)
    rows = [{"step": t, "loss/total": 1.0, "grad/global_norm": 1.0} for t in range(1, last + 1)]
    for row in rows:
        if row["step"] in evals:
            row["eval/return"] = evals[row["step"]]
    return rows


# Catch-like: rises to 1.0, then sags; the final window (steps > 90 of 100) holds 3 evaluations.
_SAG = {20: -1.0, 40: 0.2, 60: 1.0, 80: 1.0, 92: 0.6, 96: 0.4, 100: 0.2}


def test_constants():
    assert COLLAPSE_FRACTION == 0.25 and FINAL_WINDOW_START == 0.9


def test_final_and_best_windows_by_hand():
    s = stability_summary(_curve(_SAG), threshold=0.9, training_steps=100, return_range=2.0)
    assert s["final_evals"] == 3  # steps 92, 96, 100 are > 90
    assert s["final_return"] == pytest.approx((0.6 + 0.4 + 0.2) / 3)
    assert s["final_return_last"] == 0.2
    # moving averages of 3: 0.2/3, 2.2/3, 2.6/3, 2.0/3, 1.2/3 -> best 2.6/3 (steps 60, 80, 92)
    assert s["best_return"] == pytest.approx(2.6 / 3)
    # fell 1.4/3 = 0.467 < 0.25 x 2 = 0.5: not collapsed (a single-evaluation best, 1.0 - 0.2,
    # would have said so: like is compared with like)
    assert s["collapsed"] == 0 and s["unstable"] == 0 and s["diverged"] == 0
    assert s["reached_threshold"] == 1 and s["steps_to_threshold"] == 60


def test_collapse_depends_on_the_return_range():
    s = stability_summary(_curve(_SAG), threshold=None, training_steps=100, return_range=1.8)
    assert s["collapsed"] == 1 and s["unstable"] == 1  # 1.4/3 = 0.467 >= 0.25 x 1.8 = 0.45


@pytest.mark.parametrize(
    "evals, return_range, collapsed",
    [
        ({50: 0.0, 80: 1.0, 100: 0.5}, 2.0, 1),  # fell exactly a quarter of the range: collapsed
        ({50: 0.0, 80: 1.0, 100: 0.51}, 2.0, 0),  # fell 0.49 < 0.5
        ({50: 0.0, 80: 0.7, 100: 0.4}, 1.2, 1),  # 0.7 - 0.4 = 0.2999... >= 0.3 up to rounding
        ({50: 0.0, 80: 1.0, 90: 0.0, 100: 1.0}, 2.0, 0),  # fell, then recovered by the end
        ({50: 0.0, 80: 1.0, 100: 0.7}, None, 1),  # own gain 1.0: fell 0.3 >= 0.25
        ({50: 0.0, 80: 1.0, 100: 0.8}, None, 0),  # own gain 1.0: fell 0.2 < 0.25
        ({50: 0.5, 80: 0.3, 100: 0.2}, None, 0),  # best at the start: no gain, no collapse
        ({50: 0.5, 80: 0.5, 100: 0.5}, None, 0),  # flat
    ],
)
def test_collapse_on_hand_built_curves(evals, return_range, collapsed):
    s = stability_summary(
        _curve(evals), threshold=None, training_steps=100, return_range=return_range
    )
    assert s["final_evals"] == 1 and s["final_return"] == evals[100]
    assert s["collapsed"] == collapsed and s["unstable"] == collapsed


def test_training_steps_default_is_the_last_step_seen():
    evals = {40: 0.0, 80: 1.0, 95: 0.2, 100: 0.4}
    planned = stability_summary(_curve(evals), threshold=None, training_steps=100)
    seen = stability_summary(_curve(evals), threshold=None)
    assert planned == seen and seen["final_evals"] == 2  # 95 and 100 are > 90
    # planned 104 steps: the window starts after 93.6, still {95, 100}; planned 120: after 108
    assert stability_summary(_curve(evals), threshold=None, training_steps=104) == seen
    late = stability_summary(_curve(evals), threshold=None, training_steps=120)
    assert late["final_evals"] == 0 and late["final_return"] is None


def test_diverged_before_the_final_window():
    rows = _curve({20: 0.5, 40: 0.9}, last_step=50)
    rows[-1].update({"loss/total": float("nan"), "nonfinite": 1.0})
    s = stability_summary(rows, threshold=None, training_steps=100, return_range=2.0)
    assert s["diverged"] == 1 and s["diverged_step"] == 50
    assert s["final_evals"] == 0 and s["final_return"] is None  # stopped before the window
    assert s["final_return_last"] == 0.9 and s["best_return"] == 0.9
    assert s["collapsed"] is None and s["unstable"] == 1
    json.dumps(s, allow_nan=False)


def test_diverged_inside_the_final_window_is_unstable_whatever_the_returns():
    rows = _curve({50: 0.5, 95: 0.9}, last_step=96)
    rows[-1]["grad/global_norm"] = float("inf")
    s = stability_summary(rows, threshold=None, training_steps=100, return_range=2.0)
    assert s["diverged"] == 1 and s["collapsed"] == 0 and s["unstable"] == 1


def test_run_without_a_final_window_evaluation():
    s = stability_summary(_curve({50: 0.5}, last_step=80), threshold=None, training_steps=100)
    assert s["final_evals"] == 0 and s["final_return"] is None and s["best_return"] == 0.5
    assert s["collapsed"] is None and s["unstable"] is None  # not diverged, undecided


def test_run_without_evaluations():
    s = stability_summary(_curve({}, last_step=10), threshold=0.9, return_range=2.0)
    for key in ("final_return", "final_return_last", "best_return", "collapsed", "unstable"):
        assert s[key] is None, key
    assert s["final_evals"] == 0


def test_nonfinite_returns_are_not_evaluations():
    s = stability_summary(
        _curve({50: 0.5, 95: float("nan"), 100: 0.25}), threshold=None, training_steps=100
    )
    assert s["final_evals"] == 1 and s["final_return"] == 0.25


def test_best_window_against_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(2, 30))
        steps = sorted(rng.choice(np.arange(1, 201), size=n, replace=False).tolist())
        evals = {int(t): float(v) for t, v in zip(steps, rng.normal(size=n), strict=True)}
        s = stability_summary(_curve(evals, last_step=200), threshold=None, training_steps=200)
        final = [v for t, v in evals.items() if t > 180]
        values = list(evals.values())
        w = max(1, len(final))
        best = max(sum(values[i : i + w]) / w for i in range(len(values) - w + 1))
        assert s["final_evals"] == len(final)
        assert s["best_return"] == pytest.approx(best)
        if final:
            assert s["final_return"] == pytest.approx(sum(final) / len(final))
            assert s["best_return"] >= s["final_return"] - 1e-12


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"training_steps": 0}, "training_steps=0 is out of range; expected an integer >= 1"),
        ({"training_steps": 2.5}, "training_steps=2.5"),
        ({"training_steps": True}, "training_steps=True"),
        ({"return_range": 0.0}, "return_range=0.0 is out of range; expected a finite number > 0"),
        ({"return_range": -2}, "return_range=-2"),
        ({"return_range": float("inf")}, "return_range=inf"),
    ],
)
def test_bad_window_arguments(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        stability_summary(_rows(), threshold=None, **kwargs)
