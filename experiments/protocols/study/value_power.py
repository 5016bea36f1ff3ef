"""Power of a pooled value contrast before any run: the pooled Welch difference over tasks
(:mod:`experiments.report.statistics.welch_pooled`), by the noncentral t distribution.

With ``n`` runs an arm in each of ``G`` tasks and a standard deviation ``sd_g`` per run in task
``g`` (both arms), the pooled difference has ``SE = sqrt(sum_g 2 sd_g^2 / n) / G`` and
Satterthwaite's ``df = (sum_g 2 sd_g^2)^2 / sum_g 2 sd_g^4 / (n - 1)``.

* :func:`welch_pooled_power` without a margin: the two-sided test's power at a true difference
  ``effect``, ``P(T > t_c) + P(T < -t_c)`` with ``T`` noncentral t (``ncp = effect / SE``),
  ``t_c = t(1 - alpha / 2, df)``.
* With a margin: the TOST's power at the true difference, ``P(T_U < -t_c) - P(T_L <= t_c)``,
  ``T_U`` with ``ncp = (effect - m) / SE``, ``T_L`` with ``ncp = (effect + m) / SE``,
  ``t_c = t(1 - alpha, df)``, floored at 0: the usual approximation (exact in the limit of a
  known SE; the tests check it against a simulation of the test itself).

:func:`runs_for_power` finds the fewest runs an arm a task reaching a target.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

from experiments.base.errors import ConfigError

__all__ = ["runs_for_power", "welch_pooled_power"]


def welch_pooled_power(
    sds: Sequence[float],
    n: int,
    *,
    effect: float,
    alpha: float = 0.05,
    margin: float | None = None,
) -> float:
    """The power of the pooled Welch difference (module docstring).

    Args:
      sds: ``[G]`` a run's standard deviation in each task (> 0).
      n: runs an arm in each task (>= 2).
      effect: the true pooled difference, arm minus baseline.
      alpha: the level.
      margin: None for the difference test; the equivalence margin (> 0) for the TOST.

    Raises:
      ConfigError: no task, an sd <= 0, n < 2, alpha outside (0, 1) or a margin <= 0.
    """
    sd = np.asarray(sds, dtype=float)
    if sd.ndim != 1 or not len(sd) or not np.all(sd > 0):
        raise ConfigError(f"sds={list(np.atleast_1d(sd))!r}; expected one sd > 0 per task")
    if isinstance(n, bool) or int(n) != n or n < 2:
        raise ConfigError(f"n={n!r}; expected at least 2 runs an arm a task")
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha={alpha!r}; expected 0 < alpha < 1")
    if margin is not None and not margin > 0:
        raise ConfigError(f"margin={margin!r}; expected a number > 0")
    g, var = len(sd), 2 * sd**2 / n
    se = float(np.sqrt(var.sum()) / g)
    df = float(var.sum() ** 2 / (2 * (sd**2 / n) ** 2 / (n - 1)).sum())
    if margin is None:
        tc = stats.t.ppf(1 - alpha / 2, df)
        ncp = effect / se
        return float(stats.nct.sf(tc, df, ncp) + stats.nct.cdf(-tc, df, ncp))
    tc = stats.t.ppf(1 - alpha, df)
    upper = stats.nct.cdf(-tc, df, (effect - margin) / se)
    lower = stats.nct.cdf(tc, df, (effect + margin) / se)
    return float(max(0.0, upper - lower))


def runs_for_power(
    sds: Sequence[float],
    *,
    effect: float,
    power: float,
    alpha: float = 0.05,
    margin: float | None = None,
    max_n: int = 2000,
) -> int:
    """The fewest runs an arm a task (>= 2) whose :func:`welch_pooled_power` reaches ``power``.

    Raises:
      ConfigError: a power outside (0, 1), or none up to ``max_n`` (named).
    """
    if not 0 < power < 1:
        raise ConfigError(f"power={power!r}; expected a target power in (0, 1)")
    for n in range(2, max_n + 1):
        if welch_pooled_power(sds, n, effect=effect, alpha=alpha, margin=margin) >= power:
            return n
    raise ConfigError(f"no n up to {max_n} runs an arm a task reaches power {power}")
