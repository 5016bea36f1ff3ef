"""Stability figures of one run, computed from its per-step metric rows.

The runner calls :func:`stability_summary` when a job ends and stores the result under the
``"stability"`` key of ``summary.json``; the report reads it back (or recomputes it from
``metrics.jsonl``, read by :func:`experiments.jobs.store.read_metrics`). Pure Python and NumPy: no
TensorFlow, no pandas.

Every figure is a plain ``int``, ``float`` or ``None`` (``None`` = not defined for this run, e.g. no
evaluation ran, or the loss at the end was not finite), so the dict is valid strict JSON.

The stability verdicts (fixed before any experiment was run, independently of its results):

* ``diverged`` (0/1), ``diverged_step``: the first diverging step by
  :func:`experiments.verdicts.stopping.first_divergence` (the rule the runner stops a run with:
  non-finite losses or gradients, or ``loss/total`` above ``factor`` x its early mean); ``None`` if
  none.
* **final window**: the evaluations (rows with a finite ``eval/return``) whose step is
  > :data:`FINAL_WINDOW_START` (0.9) x ``training_steps`` (the run's planned number of steps; the
  last step seen when it is not given). ``final_evals``: how many evaluations it holds;
  ``final_return``: their mean ``eval/return`` (``None`` when the window holds none, e.g. a run
  stopped before it); ``final_return_last``: the last single ``eval/return``.
* ``best_return``: the maximum over the run of the moving average of ``eval/return`` over ``w``
  consecutive evaluations, ``w = max(1, final_evals)`` (a window as wide as the final one, so like
  is compared with like; the final window is itself one of them, so ``best_return >=
  final_return``); ``None`` without evaluations.
* ``collapsed`` (0/1): 1 iff ``best_return - final_return >= COLLAPSE_FRACTION x range`` with
  :data:`COLLAPSE_FRACTION` = 0.25: the run fell from its best window by at least a quarter of the
  range and was still that low at the end. ``range`` is the task's declared return range
  (``return_range``: max minus min episode return, times the reward scale; Catch 2, CartPole 500);
  for a task without one, the run's own gain ``best_return - first eval/return``, and a run with
  no gain (<= 0) has not collapsed (0). ``None`` when ``final_return`` is ``None``. The comparison
  allows for floating-point rounding (a relative 1e-9).
* ``unstable`` (0/1): 1 if ``diverged``, else ``collapsed`` (``None`` when that is ``None``).

The other figures (``rows`` sorted by ``step``; "finite rows" = rows before the diverging one):

* ``steps``: the last step seen.
* ``final_loss``: mean ``loss/total`` over the last 10% of the rows (at least one row); ``None`` if
  any of them is not finite (a diverged run has no final loss).
* ``loss_auc``: area under ``loss/total`` against ``step`` (trapezoid rule) over the finite rows,
  divided by their step span: the step-averaged loss, comparable across run lengths.
* ``grad_norm_median`` / ``grad_norm_p99`` / ``grad_norm_max``: of the finite ``grad/global_norm``.
* ``spike_count``: steps whose finite global gradient norm exceeds ``spike_factor`` times the
  running median of all earlier finite norms (the first step cannot spike).
* ``grad_hidden_ratio``: median over steps of ``grad/hidden_depth_K / grad/hidden_depth_0`` with K
  the deepest depth logged (gradient reaching the deepest hidden state relative to the root).
* ``hidden_norm_growth``: median over steps of ``hidden/norm_depth_K / hidden/norm_depth_0``.
* ``return_auc``: area under ``eval/return`` against ``step`` divided by the step span (the single
  value if only one evaluation ran).
* ``steps_to_threshold``: the first step whose ``eval/return`` >= ``threshold`` (the caller passes
  it already scaled by the task's reward scale); ``None`` if never (``reached_threshold`` 0/1 says
  which).
* ``wall_time_s``: the argument if given, else the last ``time/elapsed_s``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence

import numpy as np

from experiments.base.errors import ConfigError
from experiments.verdicts.stopping import DivergenceRule, first_divergence

__all__ = [
    "COLLAPSE_FRACTION",
    "FINAL_WINDOW_START",
    "STABILITY_KEYS",
    "running_median_spikes",
    "stability_summary",
]

STABILITY_KEYS = (
    "diverged",
    "diverged_step",
    "collapsed",
    "unstable",
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
    "final_return_last",
    "final_evals",
    "best_return",
    "return_auc",
    "reached_threshold",
    "steps_to_threshold",
    "wall_time_s",
)
"""The keys of :func:`stability_summary`'s dict, in order."""

COLLAPSE_FRACTION = 0.25
"""A run has collapsed when its best window of returns exceeds its final window by at least this
fraction of the return range."""

FINAL_WINDOW_START = 0.9
"""The final window holds the evaluations after this fraction of the planned training steps."""

_FINAL_FRACTION = 0.1  # final_loss: the mean over this last fraction of the rows
_ROUNDING = 1e-9  # relative tolerance of the collapse comparison


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


def _return_verdicts(
    steps: np.ndarray,
    returns: np.ndarray,
    *,
    window_end: float,
    return_range: float | None,
) -> dict[str, float | int | None]:
    """The final-window figures and the collapse verdict (definitions in the module docstring).

    Args:
      steps: ``[E]`` the steps of the finite evaluations, ascending.
      returns: ``[E]`` their ``eval/return``.
      window_end: the run's planned number of steps (the final window is after 0.9 of it).
      return_range: the task's return range, or None to use the run's own gain.
    """
    out: dict[str, float | int | None] = dict.fromkeys(
        ("final_return", "final_return_last", "final_evals", "best_return", "collapsed")
    )
    final = returns[steps > FINAL_WINDOW_START * window_end]
    out["final_evals"] = len(final)
    if not len(returns):
        return out
    out["final_return_last"] = float(returns[-1])
    w = max(1, len(final))
    out["best_return"] = best = float(np.max(np.convolve(returns, np.ones(w) / w, mode="valid")))
    if not len(final):
        return out
    out["final_return"] = final_return = float(np.mean(final))
    span = return_range if return_range is not None else best - float(returns[0])
    if span <= 0:
        out["collapsed"] = 0  # no gain: nothing to collapse from
        return out
    drop, limit = best - final_return, COLLAPSE_FRACTION * span
    out["collapsed"] = int(drop >= limit - _ROUNDING * span)
    return out


def _check_positive(name: str, value: object, *, integer: bool) -> None:
    kind = "an integer >= 1" if integer else "a finite number > 0"
    ok = (
        value is None
        or (integer and isinstance(value, int) and not isinstance(value, bool) and value >= 1)
        or (
            not integer
            and isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and value > 0
        )
    )
    if not ok:
        raise ConfigError(f"{name}={value!r} is out of range; expected {kind} or None")


def stability_summary(
    rows: Sequence[Mapping[str, float]],
    *,
    threshold: float | None,
    wall_time_s: float | None = None,
    divergence: DivergenceRule = DivergenceRule(),
    spike_factor: float = 10.0,
    training_steps: int | None = None,
    return_range: float | None = None,
) -> dict[str, float | int | None]:
    """The stability figures of one run (definitions in the module docstring).

    Args:
      rows: ``[T]`` the per-step metric dicts (keys as in docs/interfaces.md), any order.
      threshold: the task's success return, already multiplied by the task's reward scale (catch
        0.9, cartpole 475 unscaled), or None for no threshold.
      wall_time_s: the job's wall time; if None, the last ``time/elapsed_s`` is used.
      divergence: the rule that decides ``diverged`` (the job's ``divergence`` config).
      spike_factor: a step spikes when its global gradient norm exceeds this times the running
        median.
      training_steps: the run's planned number of training steps (the final window is the
        evaluations after 0.9 of it); None: the last step seen.
      return_range: the task's declared max minus min episode return, times its reward scale
        (catch 2, cartpole 500), the scale of ``collapsed``; None: the run's own gain.

    Returns:
      A dict with exactly the keys of :data:`STABILITY_KEYS`; values are int, float or None.

    Raises:
      ConfigError: ``spike_factor`` or ``return_range`` is not a positive finite number,
        ``training_steps`` is not a positive integer, or a row has no ``step``.
    """
    if not (isinstance(spike_factor, int | float) and math.isfinite(spike_factor)) or (
        spike_factor <= 0
    ):
        raise ConfigError(f"spike_factor must be a positive number, got {spike_factor!r}")
    _check_positive("training_steps", training_steps, integer=True)
    _check_positive("return_range", return_range, integer=False)
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
    window_end = training_steps if training_steps is not None else out["steps"]
    out.update(
        _return_verdicts(eval_steps, returns, window_end=window_end, return_range=return_range)
    )
    out["unstable"] = 1 if out["diverged"] else out["collapsed"]
    if len(returns):
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
