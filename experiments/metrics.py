"""Stability figures of one run, computed from its per-step metric rows.

The runner calls :func:`stability_summary` when a job ends and stores the result under the
``"stability"`` key of ``summary.json``; the report reads it back (or recomputes it from
``metrics.jsonl`` with :func:`read_metrics`). Pure Python and NumPy: no TensorFlow, no pandas.

Every figure is a plain ``int``, ``float`` or ``None`` (``None`` = not defined for this run, e.g. no
evaluation ran, or the loss at the end was not finite), so the dict is valid strict JSON.

Definitions (``rows`` sorted by ``step``; "finite rows" = rows before the first non-finite one):

* ``diverged`` (0/1), ``diverged_step``: the first diverging step by
  :func:`experiments.stopping.first_divergence` (the rule the runner stops a run with: non-finite
  losses or gradients, or ``loss/total`` above ``factor`` x its early mean); ``None`` if none.
* ``steps``: the last step seen.
* ``final_loss``: mean ``loss/total`` over the last 10% of the rows (at least one row); ``None`` if
  any of them is not finite (a diverged run has no final loss).
* ``loss_auc``: area under ``loss/total`` against ``step`` (trapezoid rule) over the rows before
  the diverging one (all rows if none diverged),
  divided by their step span: the step-averaged loss, comparable across run lengths.
* ``grad_norm_median`` / ``grad_norm_p99`` / ``grad_norm_max``: of the finite ``grad/global_norm``.
* ``spike_count``: steps whose finite global gradient norm exceeds ``spike_factor`` times the
  running median of all earlier finite norms (the first step cannot spike).
* ``grad_hidden_ratio``: median over steps of ``grad/hidden_depth_K / grad/hidden_depth_0`` with K
  the deepest depth logged (gradient reaching the deepest hidden state relative to the root).
* ``hidden_norm_growth``: median over steps of ``hidden/norm_depth_K / hidden/norm_depth_0``.
* ``final_return``: the last ``eval/return``; ``return_auc``: area under ``eval/return`` against
  ``step`` divided by the step span (the single value if only one evaluation ran).
* ``steps_to_threshold``: the first step whose ``eval/return`` >= ``threshold``; ``None`` if never
  (``reached_threshold`` 0/1 says which).
* ``wall_time_s``: the argument if given, else the last ``time/elapsed_s``.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from experiments.errors import ConfigError
from experiments.stopping import DivergenceRule, first_divergence

__all__ = ["STABILITY_KEYS", "read_metrics", "running_median_spikes", "stability_summary"]

STABILITY_KEYS = (
    "diverged",
    "diverged_step",
    "steps",
    "final_loss",
    "loss_auc",
    "grad_norm_median",
    "grad_norm_p99",
    "grad_norm_max",
    "spike_count",
    "grad_hidden_ratio",
    "hidden_norm_growth",
    "final_return",
    "return_auc",
    "reached_threshold",
    "steps_to_threshold",
    "wall_time_s",
)
"""The keys of :func:`stability_summary`'s dict, in order."""

_FINAL_FRACTION = 0.1


def read_metrics(path: str | Path) -> list[dict]:
    """Reads a ``metrics.jsonl`` file: one JSON object per line.

    A torn last line (a job killed mid-write) is dropped; a bad line anywhere else is an error.

    Args:
      path: the file.

    Returns:
      The rows, in file order.

    Raises:
      ConfigError: the file is missing or a line other than the last is not a JSON object.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot read metrics file '{path}': {err.strerror}") from None
    lines = [line for line in text.splitlines() if line.strip()]
    rows = []
    for i, line in enumerate(lines):
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            row = None
        if not isinstance(row, dict):
            if i == len(lines) - 1:
                break  # torn last line: the writer was interrupted
            raise ConfigError(f"corrupt metrics file '{path}': line {i + 1} is not a JSON object")
        rows.append(row)
    return rows


def running_median_spikes(values: Sequence[float], *, factor: float) -> int:
    """Counts values above ``factor`` times the median of all earlier values.

    Non-finite values are skipped (neither counted nor added to the history). O(n log n) with two
    heaps.

    Args:
      values: ``[T]`` the series, in time order.
      factor: the spike threshold, a multiple of the running median.

    Returns:
      The number of spikes.
    """
    low: list[float] = []  # max-heap (negated) of the lower half
    high: list[float] = []  # min-heap of the upper half
    count = 0
    for v in values:
        v = float(v)
        if not math.isfinite(v):
            continue
        if low:
            median = -low[0] if len(low) > len(high) else (-low[0] + high[0]) / 2
            if v > factor * median:
                count += 1
        if not low or v <= -low[0]:
            heapq.heappush(low, -v)
        else:
            heapq.heappush(high, v)
        if len(low) > len(high) + 1:
            heapq.heappush(high, -heapq.heappop(low))
        elif len(high) > len(low):
            heapq.heappush(low, -heapq.heappop(high))
    return count


def _column(rows: Sequence[Mapping[str, float]], key: str) -> tuple[np.ndarray, np.ndarray]:
    """``(steps [N], values [N])`` of the rows that hold ``key`` (None counts as absent)."""
    pairs = [(r["step"], r[key]) for r in rows if r.get(key) is not None]
    if not pairs:
        return np.zeros(0), np.zeros(0)
    steps, values = zip(*pairs, strict=True)
    return np.asarray(steps, dtype=float), np.asarray(values, dtype=float)


def _step_average(steps: np.ndarray, values: np.ndarray) -> float | None:
    """Trapezoid area under ``values`` against ``steps`` divided by the span; the value if one."""
    if len(values) == 0:
        return None
    if len(values) == 1 or steps[-1] == steps[0]:
        return float(np.mean(values))
    return float(np.trapezoid(values, steps) / (steps[-1] - steps[0]))


def _depth_ratio(rows: Sequence[Mapping[str, float]], prefix: str) -> float | None:
    """Median over rows of ``{prefix}K / {prefix}0`` with K the deepest logged depth."""
    depths = {
        int(key[len(prefix) :])
        for r in rows
        for key in r
        if key.startswith(prefix) and key[len(prefix) :].isdigit()
    }
    if not depths or max(depths) == 0:
        return None
    deep, root = f"{prefix}{max(depths)}", f"{prefix}0"
    ratios = [
        float(r[deep]) / float(r[root])
        for r in rows
        if r.get(deep) is not None
        and r.get(root) is not None
        and float(r[root]) != 0.0
        and math.isfinite(float(r[deep]) / float(r[root]))
    ]
    return float(np.median(ratios)) if ratios else None


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def stability_summary(
    rows: Sequence[Mapping[str, float]],
    *,
    threshold: float | None,
    wall_time_s: float | None = None,
    divergence: DivergenceRule = DivergenceRule(),
    spike_factor: float = 10.0,
) -> dict[str, float | int | None]:
    """The stability figures of one run (definitions in the module docstring).

    Args:
      rows: ``[T]`` the per-step metric dicts (keys as in docs/interfaces.md), any order.
      threshold: the task's success return (catch 0.9, cartpole 475), or None for no threshold.
      wall_time_s: the job's wall time; if None, the last ``time/elapsed_s`` is used.
      divergence: the rule that decides ``diverged`` (the job's ``divergence`` config).
      spike_factor: a step spikes when its global gradient norm exceeds this times the running
        median.

    Returns:
      A dict with exactly the keys of :data:`STABILITY_KEYS`; values are int, float or None.

    Raises:
      ConfigError: ``spike_factor`` is not a positive finite number or a row has no ``step``.
    """
    if not (isinstance(spike_factor, int | float) and math.isfinite(spike_factor)) or (
        spike_factor <= 0
    ):
        raise ConfigError(f"spike_factor must be a positive number, got {spike_factor!r}")
    if any("step" not in r for r in rows):
        raise ConfigError("every metric row needs a 'step' key; a row without one was given")
    rows = sorted(rows, key=lambda r: r["step"])
    out: dict[str, float | int | None] = dict.fromkeys(STABILITY_KEYS)
    out.update(diverged=0, steps=int(rows[-1]["step"]) if rows else 0, spike_count=0)
    out["reached_threshold"] = 0

    bad = first_divergence(rows, divergence)
    if bad is not None:
        out["diverged"], out["diverged_step"] = 1, bad
    finite_rows = rows if bad is None else [r for r in rows if r["step"] < bad]

    loss_rows = [r for r in rows if r.get("loss/total") is not None]
    if loss_rows:
        tail = loss_rows[-max(1, math.ceil(_FINAL_FRACTION * len(loss_rows))) :]
        out["final_loss"] = _finite_or_none(float(np.mean([float(r["loss/total"]) for r in tail])))
    out["loss_auc"] = _step_average(*_column(finite_rows, "loss/total"))

    _, norms = _column(rows, "grad/global_norm")
    finite_norms = norms[np.isfinite(norms)]
    if len(finite_norms):
        out["grad_norm_median"] = float(np.median(finite_norms))
        out["grad_norm_p99"] = float(np.percentile(finite_norms, 99))
        out["grad_norm_max"] = float(np.max(finite_norms))
    out["spike_count"] = running_median_spikes(norms, factor=float(spike_factor))

    out["grad_hidden_ratio"] = _depth_ratio(finite_rows, "grad/hidden_depth_")
    out["hidden_norm_growth"] = _depth_ratio(finite_rows, "hidden/norm_depth_")

    eval_steps, returns = _column(rows, "eval/return")
    keep = np.isfinite(returns)
    eval_steps, returns = eval_steps[keep], returns[keep]
    if len(returns):
        out["final_return"] = float(returns[-1])
        out["return_auc"] = _step_average(eval_steps, returns)
        if threshold is not None:
            hit = np.flatnonzero(returns >= threshold)
            if len(hit):
                out["reached_threshold"] = 1
                out["steps_to_threshold"] = int(eval_steps[hit[0]])

    if wall_time_s is not None:
        out["wall_time_s"] = float(wall_time_s)
    else:
        _, elapsed = _column(rows, "time/elapsed_s")
        out["wall_time_s"] = float(elapsed[-1]) if len(elapsed) else None
    return out
