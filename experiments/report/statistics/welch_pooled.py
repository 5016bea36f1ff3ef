"""A value endpoint's difference between two arms pooled over tasks with equal weights.

Study 6's declared method (``welch_equal_weights``, :data:`experiments.protocols.study.design.
VALUE_TESTS`): in each task ``g`` of ``G`` the difference of the arms' means,
``d_g = mean(arm) - mean(baseline)``, with its Welch variance ``v_g = s_a^2 / n_a + s_b^2 / n_b``
(sample variances, ``n - 1``); pooled, ``D = sum(d_g) / G`` (each task weighted 1/G, whatever
its scale: the endpoint is normalised per task before), ``SE = sqrt(sum(v_g)) / G``, and
Satterthwaite's degrees of freedom over the ``2G`` variance components,
``df = (sum_g v_g)^2 / sum_{g, arm} (s^2 / n)^2 / (n - 1)``. With one task this is Welch's
t test (``scipy.stats.ttest_ind(equal_var=False)``).

* Difference: two-sided t test of ``D = 0``, ``p = 2 * t.sf(|D| / SE, df)``, and the
  ``1 - alpha`` interval ``D +- t(1 - alpha / 2, df) * SE``.
* Equivalence within ``+-margin`` (declared before the runs): two one-sided t tests (TOST),
  ``p = max(t.sf((D + m) / SE, df), t.cdf((D - m) / SE, df))``, equivalently the ``1 - 2 alpha``
  interval inside ``+-m``.
* One verdict (:func:`verdict`): ``lower`` or ``higher`` when the difference test rejects (with
  ``, within +-m`` when the TOST rejects too: a difference smaller than the margin),
  ``equivalent within +-m`` when only the TOST rejects, else ``not separated``.

Equal weights answer "the mean over these games of the change", which is what a MuZero user
asks; a weight by precision would let the least noisy game decide. Checked in the tests against
statsmodels by another route (an OLS of the cell means with HC2 errors, whose contrast is ``D``
with this standard error) and against scipy's and statsmodels' Welch and TOST with one task.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from scipy import stats

from experiments.base.errors import ConfigError

__all__ = ["PooledDifference", "TaskDifference", "verdict", "welch_pooled"]


@dataclasses.dataclass(frozen=True)
class TaskDifference:
    """One task's Welch difference (arm minus baseline).

    Attributes:
      estimate: ``mean(arm) - mean(baseline)``.
      se: its standard error, ``sqrt(s_a^2 / n_a + s_b^2 / n_b)``.
      df: Welch-Satterthwaite degrees of freedom.
      ci: the two-sided ``1 - alpha`` interval.
      p: Welch's two-sided p of no difference.
      n: runs per arm, ``(arm, baseline)``.
    """

    estimate: float
    se: float
    df: float
    ci: tuple[float, float]
    p: float
    n: tuple[int, int]


@dataclasses.dataclass(frozen=True)
class PooledDifference:
    """The pooled difference and its tests (module docstring).

    Attributes:
      estimate: ``D``, the mean over tasks of the per-task differences.
      se: its standard error.
      df: Satterthwaite's degrees of freedom.
      ci: the two-sided ``1 - alpha`` interval.
      p: the two-sided p of no difference.
      margin: the equivalence margin, or None.
      tost_ci: the ``1 - 2 alpha`` interval (None without a margin).
      tost_p: the TOST p (None without a margin).
      alpha: the level.
      tasks: each task's :class:`TaskDifference`, in the order given.
    """

    estimate: float
    se: float
    df: float
    ci: tuple[float, float]
    p: float
    margin: float | None
    tost_ci: tuple[float, float] | None
    tost_p: float | None
    alpha: float
    tasks: tuple[TaskDifference, ...]

    @property
    def verdict(self) -> str:
        """The one verdict of the module docstring."""
        return verdict(self.estimate, self.p, self.tost_p, alpha=self.alpha, margin=self.margin)


def verdict(
    estimate: float, p: float, tost_p: float | None, *, alpha: float, margin: float | None
) -> str:
    """``lower`` / ``higher`` (``, within ±m`` when equivalence is shown too), ``equivalent
    within ±m``, or ``not separated``."""
    equivalent = tost_p is not None and margin is not None and tost_p < alpha
    if p < alpha:
        word = "lower" if estimate < 0 else "higher"
        return f"{word}, within ±{margin:g}" if equivalent else word
    return f"equivalent within ±{margin:g}" if equivalent else "not separated"


def _values(x: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    values = np.asarray(x, dtype=float)
    if values.ndim != 1 or len(values) < 2 or not np.all(np.isfinite(values)):
        raise ConfigError(
            f"{what}: {len(np.atleast_1d(values))} value(s); a Welch difference needs at least "
            "two finite values per arm"
        )
    return values


def welch_pooled(
    tasks: Sequence[tuple[Sequence[float], Sequence[float]]],
    *,
    alpha: float = 0.05,
    margin: float | None = None,
) -> PooledDifference:
    """The pooled difference over ``tasks`` (module docstring).

    Args:
      tasks: per task ``(arm values [n_a], baseline values [n_b])``, each at least 2 finite.
      alpha: the level of both tests.
      margin: the equivalence margin (> 0), or None for no TOST.

    Raises:
      ConfigError: no task, an arm with fewer than two finite values, a margin <= 0, or zero
        variance in every arm of every task (no test is defined).
    """
    if not tasks:
        raise ConfigError("a pooled difference needs at least one task")
    if margin is not None and not margin > 0:
        raise ConfigError(f"margin={margin!r}; expected a number > 0")
    per_task, components = [], []
    for i, (arm, base) in enumerate(tasks):
        a, b = _values(arm, f"task {i + 1}, arm"), _values(base, f"task {i + 1}, baseline")
        ca, cb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
        components += [(ca, len(a)), (cb, len(b))]
        d, v = a.mean() - b.mean(), ca + cb
        df = _satterthwaite([(ca, len(a)), (cb, len(b))])
        per_task.append(_task(d, v, df, alpha, (len(a), len(b))))
    g = len(tasks)
    total = sum(c for c, _ in components)
    if total == 0:
        raise ConfigError("every arm of every task has zero variance: no test is defined")
    estimate = float(np.mean([t.estimate for t in per_task]))
    se = float(np.sqrt(total) / g)
    df = _satterthwaite(components)
    half = stats.t.ppf(1 - alpha / 2, df) * se
    p = float(2 * stats.t.sf(abs(estimate) / se, df))
    tost_ci = tost_p = None
    if margin is not None:
        q = stats.t.ppf(1 - alpha, df) * se
        tost_ci = (estimate - q, estimate + q)
        tost_p = float(max(stats.t.sf((estimate + margin) / se, df),
                           stats.t.cdf((estimate - margin) / se, df)))  # fmt: skip
    return PooledDifference(estimate, se, df, (estimate - half, estimate + half), p, margin,
                            tost_ci, tost_p, alpha, tuple(per_task))  # fmt: skip


def _satterthwaite(components: Sequence[tuple[float, int]]) -> float:
    """``(sum c)^2 / sum c^2 / (n - 1)`` over variance components ``c = s^2 / n``; a
    component of zero variance adds nothing to either sum."""
    total = sum(c for c, _ in components)
    denominator = sum(c * c / (n - 1) for c, n in components)
    return float(total * total / denominator) if denominator > 0 else float("inf")


def _task(d: float, v: float, df: float, alpha: float, n: tuple[int, int]) -> TaskDifference:
    se = float(np.sqrt(v))
    if se == 0:
        p = 1.0 if d == 0 else 0.0
        return TaskDifference(float(d), 0.0, df, (float(d), float(d)), p, n)
    half = stats.t.ppf(1 - alpha / 2, df) * se
    p = float(2 * stats.t.sf(abs(d) / se, df))
    return TaskDifference(float(d), se, df, (float(d - half), float(d + half)), p, n)
