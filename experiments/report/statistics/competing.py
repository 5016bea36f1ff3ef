"""Reaching the task's threshold when divergence can come first: competing risks.

A run that diverges can never reach the threshold afterwards: divergence is a *competing* event,
not a censoring. Kaplan-Meier that censors a run at its divergence estimates the time to the
threshold in a world where nothing diverges, and so over-states both the chance of reaching the
threshold and its speed (Study 2's ``none`` arm had the fastest KM median of all arms with 4/40
runs ever reaching 0.9). Per run there is one first event (:func:`competing_times`):

* cause 1 (:data:`REACHED`): reached the threshold, at ``steps_to_threshold``, not after its
  diverging step;
* cause 2 (:data:`DIVERGED`): diverged first, at ``diverged_step``;
* cause 0 (:data:`CENSORED`): neither, watched until its last step ``steps`` (the budget).

Per arm, :func:`cumulative_incidence` is the Aalen-Johansen estimate of the cumulative incidence
of reaching the threshold, F(t) = P(reached by t, before diverging): F(t) = sum over event times
t_j <= t of S(t_{j-1}) d1_j / n_j (S: Kaplan-Meier of "no event of either cause", n_j at risk,
d1_j reaching the threshold at t_j). Its variance is the delta-method (Greenwood-type) estimator
of Collett (2015, *Modelling Survival Data in Medical Research*, 3rd ed., §12.2.3, p. 411), the
one lifelines' ``AalenJohansenFitter`` computes, with tied times grouped (lifelines instead
jitters tied times of different causes at random, so it is used only as a test oracle on data
without such ties). The interval is lifelines' too: the log(-log) transform of F with that
variance, exp(-exp(log(-log F) -+ z se / (F |log F|))), which stays inside (0, 1); it is undefined
(NaN) where F is 0 or 1 at the time asked.

:func:`gray_test` is Gray's k-sample test of equal cumulative incidence of cause 1 (Gray 1988,
*Ann. Statist.* 16(3):1141-1154, with the weight (1 - F_pooled(t-))^rho, rho = 0 as cmprsk's
default), written out in NumPy: per group the score sum_t w(t) [d1_k(t) - R_k(t) d1(t) / R(t)],
R_k(t) = n_k(t) (1 - F_k(t-)) / S_k(t-) (the subdistribution risk set), and the variance of Gray's
paper (section 2), as in cmprsk's ``crstm``; statistic s' V^-1 s over the first k - 1 groups,
chi-square with k - 1 degrees of freedom. Checked against R's ``cmprsk::cuminc`` 2.2.11 in
tests/report/test_competing.py (tests/data/competing_cuminc.R).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
from scipy import stats

from experiments.base.errors import ConfigError

__all__ = [
    "CENSORED",
    "DIVERGED",
    "REACHED",
    "GrayTest",
    "Incidence",
    "aalen_johansen",
    "competing_times",
    "cumulative_incidence",
    "gray_test",
    "incidence_difference",
]

CENSORED, REACHED, DIVERGED = 0, 1, 2
"""Cause codes: censored at the last step, reached the threshold first, diverged first."""


def _column(runs: pd.DataFrame, name: str) -> np.ndarray:
    if name not in runs:
        return np.full(len(runs), np.nan)
    return pd.to_numeric(runs[name], errors="coerce").to_numpy(dtype=float)


def competing_times(runs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each run's first event (reached the threshold, diverged) or its censoring, and its step.

    Args:
      runs: ``[N]`` rows with ``threshold``, ``reached_threshold``, ``steps_to_threshold``,
        ``diverged``, ``diverged_step``, ``steps`` and ``path`` (see
        :mod:`experiments.verdicts.stability`).

    Returns:
      ``(time [N] float, cause [N] int)``: cause :data:`REACHED` at ``steps_to_threshold`` (a
      threshold first crossed after the diverging step does not count), :data:`DIVERGED` at
      ``diverged_step``, else :data:`CENSORED` at ``steps``. A run without a threshold (its task
      declares none) has time NaN and cause 0: it is not a run of this figure.

    Raises:
      ConfigError: a run with a threshold whose summary lacks the step its cause needs (``steps``,
        ``diverged_step`` or ``steps_to_threshold``), naming its summary file.
    """
    has_threshold = runs["threshold"].notna().to_numpy()
    reached, at = _column(runs, "reached_threshold") >= 0.5, _column(runs, "steps_to_threshold")
    diverged, diverged_at = _column(runs, "diverged") >= 0.5, _column(runs, "diverged_step")
    steps = _column(runs, "steps")
    first = reached & ~(diverged & (at > diverged_at))  # NaN compares False: checked below
    cause = np.where(first, REACHED, np.where(diverged, DIVERGED, CENSORED))
    time = np.choose(cause, [steps, at, diverged_at])
    needs = np.choose(cause, ["steps", "steps_to_threshold", "diverged_step"])
    missing = has_threshold & ~np.isfinite(time)
    missing |= has_threshold & reached & diverged & ~np.isfinite(at + diverged_at)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        need = "steps_to_threshold and diverged_step" if reached[i] and diverged[i] else needs[i]
        what = "reached the threshold" if reached[i] else "diverged" if diverged[i] else "neither"
        where = f"{runs['path'].iloc[i]}/summary.json" if "path" in runs else f"run {i}"
        raise ConfigError(
            f"{where} has no {need} (the run {what}): steps_to_threshold, a competing-risk "
            "figure, needs each run's steps, diverged_step and steps_to_threshold; leave "
            "steps_to_threshold out of --metrics for these runs"
        )
    cause = np.where(has_threshold, cause, CENSORED)
    return np.where(has_threshold, time, np.nan), cause.astype(int)


def _known(time: np.ndarray, cause: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    time, cause = np.asarray(time, dtype=float).ravel(), np.asarray(cause).ravel().astype(int)
    keep = np.isfinite(time)
    return time[keep], cause[keep]


def aalen_johansen(
    time: np.ndarray, cause: np.ndarray, *, of: int = REACHED
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Aalen-Johansen cumulative incidence of one cause, and its variance, at each event time.

    Args:
      time: ``[N]`` event or censoring times (NaN dropped).
      cause: ``[N]`` 0 censored, else the cause of the event at ``time``.
      of: the cause of interest; every other nonzero cause competes.

    Returns:
      ``(times [T], cif [T], variance [T])`` at the distinct times with an event of any cause,
      increasing; ``cif`` right-continuous (includes the events at that time). Empty without one.
    """
    time, cause = _known(time, cause)
    times = np.unique(time[cause != CENSORED])
    at_risk = (time[None, :] >= times[:, None]).sum(axis=1).astype(float)  # [T]
    events = ((time[None, :] == times[:, None]) & (cause[None, :] != CENSORED)).sum(axis=1)
    mine = ((time[None, :] == times[:, None]) & (cause[None, :] == of)).sum(axis=1)
    survival = np.cumprod(1.0 - events / at_risk)  # S(t_j), no event of any cause
    before = np.concatenate([[1.0], survival[:-1]])  # S(t_{j-1})
    cif = np.cumsum(before * mine / at_risk)
    # Collett (2015) p. 411; at the last time with n_j = d_j the first term's factor F(t) - F(t_j)
    # is 0 (nothing happens after), so the 1/(n_j - d_j) there is never needed
    with np.errstate(divide="ignore", invalid="ignore"):
        greenwood = np.where(at_risk > events, events / (at_risk * (at_risk - events)), 0.0)
    own = before**2 * mine * (at_risk - mine) / at_risk**3
    cross = before * mine / at_risk**2
    gap = cif[:, None] - cif[None, :]  # [t, j]: F(t) - F(t_j)
    upto = np.tri(len(times), dtype=bool)  # t_j <= t
    variance = (
        np.where(upto, gap**2 * greenwood[None, :], 0).sum(axis=1)
        + np.cumsum(own)
        - 2 * np.where(upto, gap * cross[None, :], 0).sum(axis=1)
    )
    return times, cif, np.maximum(variance, 0.0)


@dataclasses.dataclass(frozen=True)
class Incidence:
    """The cumulative incidence of one cause at one time, with its interval.

    Attributes:
      estimate: F(time), in [0, 1]; NaN without a run.
      low: the interval's lower end (log(-log) transform); NaN where F is 0 or 1.
      high: its upper end.
      variance: the delta-method variance of F(time) (Collett 2015).
      time: the time it is read at: the end of the budget (the largest time of the runs).
      k: runs whose first event was the cause of interest by ``time``.
      n: runs with a known time.
    """

    estimate: float
    low: float
    high: float
    variance: float
    time: float
    k: int
    n: int


def cumulative_incidence(
    time: np.ndarray,
    cause: np.ndarray,
    *,
    at: float | None = None,
    of: int = REACHED,
    confidence: float = 0.95,
) -> Incidence:
    """The cumulative incidence of ``of`` at time ``at``, with its log(-log) interval.

    Args:
      time: ``[N]`` event or censoring times (NaN dropped).
      cause: ``[N]`` cause codes (0 censored).
      at: the time to read F at; None: the largest time (the end of the budget: every run that
        did not diverge or reach the threshold ran to it).
      of: the cause of interest.
      confidence: the interval's level, in (0, 1).

    Returns:
      An :class:`Incidence`; every figure NaN (k = n = 0) without a run.
    """
    time, cause = _known(time, cause)
    if not len(time):
        nan = float("nan")
        return Incidence(nan, nan, nan, nan, nan, 0, 0)
    at = float(time.max()) if at is None else float(at)
    times, cif, variance = aalen_johansen(time, cause, of=of)
    j = int(np.searchsorted(times, at, side="right")) - 1
    f, var = (float(cif[j]), float(variance[j])) if j >= 0 else (0.0, 0.0)
    f = float(round(f)) if abs(f - round(f)) < 1e-12 else f  # a sum's 1 - 1e-16 is 1
    low = high = float("nan")
    if 0.0 < f < 1.0:
        z = stats.norm.ppf(0.5 + confidence / 2)
        centre, se = math.log(-math.log(f)), math.sqrt(var) / (f * abs(math.log(f)))
        with np.errstate(over="ignore"):  # exp(-exp(large)) is 0
            low, high = np.exp(-np.exp([centre + z * se, centre - z * se]))
        low, high = float(low), float(high)
    k = int(((cause == of) & (time <= at)).sum())
    return Incidence(f, low, high, var, at, k, len(time))


def incidence_difference(x: Incidence, y: Incidence) -> tuple[float, float, float]:
    """``F_x - F_y`` with the MOVER interval (Zou & Donner 2008) of two independent arms.

    Newcombe's hybrid-score interval of two rates is the same construction with Wilson
    intervals; here each arm's log(-log) interval: low = d - sqrt((F_x - l_x)^2 + (u_y - F_y)^2),
    high = d + sqrt((u_x - F_x)^2 + (F_y - l_y)^2). It inherits the arms' ranges, so it stays in
    [-1, 1].

    Returns:
      ``(difference, low, high)``; the interval NaN where an arm's is (F at 0 or 1), the
      difference NaN where an arm has no run.
    """
    d = x.estimate - y.estimate
    low = d - math.hypot(x.estimate - x.low, y.high - y.estimate)
    high = d + math.hypot(x.high - x.estimate, y.estimate - y.low)
    return d, low, high


@dataclasses.dataclass(frozen=True)
class GrayTest:
    """Gray's k-sample test of equal cumulative incidence.

    Attributes:
      statistic: s' V^-1 s (chi-square under the null); NaN where V is singular.
      df: degrees of freedom, groups - 1.
      p: the upper-tail chi-square p-value; 1 when no run had the event; NaN where undefined.
      score: ``[groups - 1]`` the score s of every group but the last.
      variance: ``[groups - 1, groups - 1]`` its estimated covariance V.
    """

    statistic: float
    df: int
    p: float
    score: np.ndarray
    variance: np.ndarray


def gray_test(
    time: np.ndarray, cause: np.ndarray, group: np.ndarray, *, of: int = REACHED, rho: float = 0.0
) -> GrayTest:
    """Gray's (1988) test that the groups share one cumulative incidence of cause ``of``.

    Args:
      time: ``[N]`` event or censoring times (NaN entries dropped with their run).
      cause: ``[N]`` 0 censored, else the cause (``of``, or a competing one).
      group: ``[N]`` group labels (any sortable values); groups in sorted order.
      of: the cause of interest.
      rho: the weight's power, (1 - F_pooled(t-))^rho; 0 is cmprsk's default.

    Returns:
      A :class:`GrayTest` (no stratification).
    """
    time, cause = np.asarray(time, dtype=float).ravel(), np.asarray(cause).ravel().astype(int)
    group = np.asarray(group).ravel()
    keep = np.isfinite(time)
    time, cause, group = time[keep], cause[keep], group[keep]
    labels, g = np.unique(group, return_inverse=True)
    k = len(labels)
    if k < 2:
        return GrayTest(float("nan"), k - 1, float("nan"), np.zeros(0), np.zeros((0, 0)))
    m = np.where(cause == of, 1, np.where(cause == CENSORED, 0, 2))
    if not (m == 1).any():  # every group's incidence is 0 throughout: the same curve
        return GrayTest(0.0, k - 1, 1.0, np.zeros(k - 1), np.zeros((k - 1, k - 1)))
    at_risk = np.bincount(g, minlength=k).astype(float)  # n_k(t)
    surv_before, cif_before = np.ones(k), np.zeros(k)  # S_k(t-), F_k(t-)
    pooled_before = 0.0  # the pooled incidence F(t-) of Gray's weight
    score = np.zeros(k - 1)
    c = np.zeros((k, k))  # running integral of a(t) dN1/(h (1 - F(t-)))
    v1 = np.zeros((k - 1, k - 1))  # the parts of V summed over the event times
    v2 = np.zeros((k - 1, k))
    v3 = np.zeros(k)
    for t in np.unique(time):  # 1 - F(t-) is 0 where the pooled incidence reached 1: as cmprsk
        here = time == t
        d1 = np.bincount(g[here & (m == 1)], minlength=k).astype(float)
        d2 = np.bincount(g[here & (m == 2)], minlength=k).astype(float)
        n1, n2 = d1.sum(), d2.sum()
        if n1 or n2:
            live = at_risk > 0
            safe = np.where(live, at_risk, 1.0)
            surv = np.where(live, surv_before * (at_risk - d1 - d2) / safe, surv_before)
            cif = np.where(live, cif_before + surv_before * d1 / safe, cif_before)
            h = np.where(live, at_risk / np.where(live, surv_before, 1.0), 0.0)  # n_k / S_k(t-)
            total = h.sum()
            risk = h * (1 - cif_before)  # Gray's R_k(t)
            pooled = pooled_before + n1 / total
            weight = (1 - pooled_before) ** rho
            a = -weight * np.outer(h, h) / total
            a[np.diag_indices(k)] = weight * h * (1 - h / total)
            a[~live, :] = 0.0
            a[:, ~live] = 0.0
            # a zero term adds nothing, also where the pooled incidence already reached 1
            # (1 - F(t-) = 0: one group left at risk, a = 0): 0 here, where 0 / 0 would be NaN
            with np.errstate(divide="ignore", invalid="ignore"):
                c += np.where(a == 0, 0.0, a * n1 / (total * (1 - pooled_before)))
            score += np.where(live, weight * (d1 - n1 * risk / risk.sum()), 0.0)[: k - 1]
            if n1:
                for j in np.flatnonzero(live):
                    b = 1 - (1 - pooled) / surv[j] if surv[j] > 0 else 1.0
                    tie = 1 - (n1 - 1) / (total * surv_before[j] - 1) if n1 > 1 else 1.0
                    step = tie * surv_before[j] * n1 / (total * at_risk[j])
                    u = a[: k - 1, j] - b * c[: k - 1, j]
                    v3[j] += b * b * step
                    v2[:, j] += u * b * step
                    v1 += np.outer(u, u) * step
            if n2:
                for j in np.flatnonzero((surv > 0) & (d2 > 0)):
                    b = (1 - pooled) / surv[j]
                    tie = 1 - (d2[j] - 1) / (at_risk[j] - 1) if d2[j] > 1 else 1.0
                    step = tie * surv_before[j] ** 2 * d2[j] / at_risk[j] ** 2
                    u = b * c[: k - 1, j]
                    v3[j] += b * b * step
                    v2[:, j] -= u * b * step
                    v1 += np.outer(u, u) * step
            pooled_before, surv_before, cif_before = pooled, surv, cif
        at_risk -= np.bincount(g[here], minlength=k)
    cc = c[: k - 1, :]
    variance = v1 + (cc * v3) @ cc.T + cc @ v2.T + v2 @ cc.T
    try:
        if np.linalg.matrix_rank(variance) < k - 1:
            raise np.linalg.LinAlgError
        statistic = float(score @ np.linalg.solve(variance, score))
    except np.linalg.LinAlgError:
        return GrayTest(float("nan"), k - 1, float("nan"), score, variance)
    return GrayTest(statistic, k - 1, float(stats.chi2.sf(statistic, k - 1)), score, variance)
