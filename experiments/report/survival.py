"""Steps to the task's return threshold as time to an event, with censoring.

A run that never reaches the threshold has not "failed to have a time": it is *censored*. We know
only that its time exceeds the last step it was watched: its diverging step (a diverged run is
stopped there) or the end of its training. Dropping such runs (what an average over the runs that
reached the threshold does) keeps only the fast learners and flatters a variant that kills its
slow runs. So per arm:

* :func:`time_to_event`: one ``(time, event)`` per run: ``event`` 1 at ``steps_to_threshold``
  when the run reached the threshold (before diverging); else 0 at ``diverged_step`` (diverged) or
  ``steps`` (the last step it ran).
* :func:`km_median`: the Kaplan-Meier median (the first time the estimated survival, the share of
  runs not yet at the threshold, falls below 1/2: statsmodels' and SAS's convention; R's ``survfit``
  instead takes the midpoint where the curve sits exactly at 1/2) with the Brookmeyer-Crowley
  confidence interval on the complementary log-log scale,
  ``statsmodels.duration.survfunc.SurvfuncRight`` (``quantile`` and ``quantile_ci``). The median is
  NaN ("not reached") when fewer than half the runs are known to have reached the threshold; an
  unbounded upper limit is ``inf``.
* :func:`logrank_p`: the two-sided log-rank test of two arms, ``scipy.stats.logrank`` on
  ``scipy.stats.CensoredData`` (runs matched by seed are still compared as independent samples:
  the log-rank test has no paired form).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["km_median", "logrank_p", "time_to_event"]


def time_to_event(runs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The time to the threshold of each run, and whether it was reached.

    Args:
      runs: ``[N]`` rows with ``threshold``, ``reached_threshold``, ``steps_to_threshold``,
        ``diverged``, ``diverged_step`` and ``steps`` (see :mod:`experiments.metrics`).

    Returns:
      ``(time [N] float, event [N] bool)``. ``time`` is NaN where it is unknown: the run has no
      threshold (its task declares none) or no record of the steps it ran.
    """

    def column(name: str) -> np.ndarray:
        return pd.to_numeric(runs[name], errors="coerce").to_numpy(dtype=float)

    has_threshold = runs["threshold"].notna().to_numpy()
    reached, at = column("reached_threshold") >= 0.5, column("steps_to_threshold")
    diverged, diverged_at = column("diverged") >= 0.5, column("diverged_step")
    steps = column("steps")
    # a threshold first crossed after the diverging step does not count (the run had stopped)
    event = reached & np.isfinite(at) & ~(diverged & np.isfinite(diverged_at) & (at > diverged_at))
    censor = np.where(diverged & np.isfinite(diverged_at), diverged_at, steps)
    time = np.where(event, at, censor)
    time = np.where(has_threshold, time, np.nan)
    return time.astype(float), event & has_threshold


def _known(time: np.ndarray, event: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    time, event = np.asarray(time, dtype=float).ravel(), np.asarray(event, dtype=bool).ravel()
    keep = np.isfinite(time)
    return time[keep], event[keep]


def km_median(
    time: np.ndarray, event: np.ndarray, *, confidence: float = 0.95
) -> tuple[float, float, float]:
    """The Kaplan-Meier median time to the event, with its confidence interval.

    Args:
      time: ``[N]`` event or censoring times; NaN entries (unknown) are dropped.
      event: ``[N]`` True where the event happened at ``time``, False where censored there.
      confidence: the level, in (0, 1).

    Returns:
      ``(median, low, high)``: NaN median when it is not reached; ``high`` is ``inf`` when the
      interval is unbounded above; all NaN without a run.
    """
    from statsmodels.duration.survfunc import SurvfuncRight

    time, event = _known(time, event)
    if not len(time):
        return float("nan"), float("nan"), float("nan")
    if not event.any():  # statsmodels needs an event; with none, nothing is known below the end
        return float("nan"), float("nan"), float("nan")
    survival = SurvfuncRight(time, event.astype(int))
    median = float(survival.quantile(0.5))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # the cloglog transform meets log(0) where S is 0 or 1: those points are simply excluded
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = survival.quantile_ci(0.5, alpha=1 - confidence)
    return median, float(low), float(high)


def logrank_p(
    time_x: np.ndarray, event_x: np.ndarray, time_y: np.ndarray, event_y: np.ndarray
) -> float:
    """Two-sided log-rank test of two arms' times to the event.

    Args:
      time_x: ``[N_x]`` the first arm's times (NaN dropped).
      event_x: ``[N_x]`` its event flags.
      time_y: ``[N_y]`` the second arm's times.
      event_y: ``[N_y]`` its event flags.

    Returns:
      The p-value; NaN when an arm has no run, or when no event time has runs of both arms at
      risk (the test has no information: e.g. every baseline run diverged before any run reached
      the threshold); 1 when no run of either arm had the event (two identical survival curves).
    """
    time_x, event_x = _known(time_x, event_x)
    time_y, event_y = _known(time_y, event_y)
    if not len(time_x) or not len(time_y):
        return float("nan")
    if not event_x.any() and not event_y.any():
        return 1.0

    def data(time: np.ndarray, event: np.ndarray) -> stats.CensoredData:
        return stats.CensoredData(uncensored=time[event], right=time[~event])

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # a zero variance: NaN, said above
        return float(stats.logrank(data(time_x, event_x), data(time_y, event_y)).pvalue)
