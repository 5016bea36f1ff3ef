"""A task's reference from the baseline's calibration runs, and where its threshold falls there.

Before a study is registered, the baseline alone (the study's regime, calibration seeds no study
uses) says, per task (:func:`task_references`):

* ``R_ref``: its mean final return (the final-window mean, every run counted: a diverged run at
  the task's random-policy return, as the table imputes) and the spread (sample sd) around it;
  ``R_rand``: the task registry's random-policy return. They define the normalised return
  ``(R - R_rand) / (R_ref - R_rand)`` (0: random, 1: the baseline's mean);
* where the competence threshold ``T`` falls: the share of runs that reached it, the share that
  held it to the end, ``T`` as a fraction of ``R_ref``, and the share of runs whose final-window
  mean ends within ``+-NEAR_BAND`` of ``T`` (a run there is classed by evaluation noise);
* a verdict on ``T`` (:attr:`TaskReference.verdict`): ``floor`` (every run held it: a rate
  endpoint on it can only say "no failure"), ``ceiling`` (no run reached it), ``noise-sensitive``
  (at least :data:`NOISE_SHARE` of the runs end within the band), else ``usable``;
* whether the baseline **learns** the task at this budget (:attr:`TaskReference.learns`): its
  mean final return is at or above ``T`` (the task's declared competence threshold, for MinAtar
  twice the random policy's return, declared before any of these runs). A task where it does
  not is a finding, reported and dropped before registration, not studied.

The constants are declared here, before Study 6's calibration was read: a band of 5% of the
threshold (Study 4's Space Invaders had 11 of 141 runs within +-2%), and a threshold is
noise-sensitive when a tenth of the runs or more end in it.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from experiments.base.errors import ConfigError
from experiments.report.runs import diverged_return, intention_to_treat

__all__ = [
    "NEAR_BAND",
    "NOISE_SHARE",
    "TaskReference",
    "reference_runs",
    "references_of",
    "task_references",
]

NEAR_BAND = 0.05
"""A run's final-window mean within +-5% of the threshold counts as "at the threshold"."""

NOISE_SHARE = 0.1
"""A threshold is noise-sensitive when at least this share of the baseline's runs end at it."""

_PLAIN_KEYS = {"regime", "task", "variant"}


@dataclasses.dataclass(frozen=True)
class TaskReference:
    """One task's reference and threshold check (module docstring).

    Attributes:
      task: the task's name.
      n: the baseline's calibration runs counted (completed or diverged).
      r_ref: their mean final return (ITT).
      sd: its sample standard deviation per run.
      r_rand: the task's random-policy return (None where the registry has none).
      threshold: the competence threshold (None where the task has none).
      reached: runs that reached the threshold before diverging.
      held: runs that held it to the end.
      near: runs whose final-window mean ends within ``+-NEAR_BAND`` of the threshold.
      median_seconds: the median wall time of a run (None when not recorded).
    """

    task: str
    n: int
    r_ref: float
    sd: float
    r_rand: float | None
    threshold: float | None
    reached: int
    held: int
    near: int
    median_seconds: float | None

    @property
    def verdict(self) -> str:
        """``floor``, ``ceiling``, ``noise-sensitive``, ``usable``, or ``none`` (no threshold)."""
        if self.threshold is None:
            return "none"
        if self.held == self.n:
            return "floor"
        if self.reached == 0:
            return "ceiling"
        if self.near >= NOISE_SHARE * self.n:
            return "noise-sensitive"
        return "usable"

    @property
    def learns(self) -> bool:
        """The baseline's mean final return is at or above the threshold (module docstring)."""
        return self.threshold is not None and self.r_ref >= self.threshold

    @property
    def sd_normalised(self) -> float | None:
        """The sd on the normalised scale, ``sd / (R_ref - R_rand)``; None when R_ref is not
        above R_rand (no normalisation is defined)."""
        if self.r_rand is None or not self.r_ref > self.r_rand:
            return None
        return self.sd / (self.r_ref - self.r_rand)

    def line(self) -> str:
        """One line: R_ref with its spread, R_rand, and the threshold's place and verdict."""
        rand = "no random-policy return" if self.r_rand is None else f"R_rand {self.r_rand:.4g}"
        head = (
            f"{self.task}: {self.n} baseline runs, R_ref {self.r_ref:.4g} (sd {self.sd:.3g}), "
            f"{rand}"
        )
        if self.threshold is None:
            return f"{head}; no threshold"
        where = (
            f"threshold {self.threshold:.4g} = {self.threshold / self.r_ref:.0%} of R_ref"
            if self.r_ref > 0
            else f"threshold {self.threshold:.4g}"
        )
        learns = "learns" if self.learns else "does NOT learn (mean final return below it)"
        return (
            f"{head}; {where}: reached by {self.reached}/{self.n}, held by {self.held}/{self.n}, "
            f"{self.near}/{self.n} end within ±{NEAR_BAND:.0%} of it: {self.verdict}; the "
            f"baseline {learns}"
        )


def reference_runs(runs: pd.DataFrame, *, baseline: str, regime: str | None) -> pd.DataFrame:
    """The baseline's runs in ``regime`` with no other setting (a calibration ladder's rungs,
    which add settings, are left out), completed or diverged."""
    keep = runs["variant"].astype(str) == baseline
    if regime is not None and "regime" in runs:
        keep &= runs["regime"].astype(str) == regime
    plain = runs["group"].map(lambda g: {p.split("=", 1)[0] for p in str(g).split(", ")})
    keep &= plain.map(lambda keys: keys <= _PLAIN_KEYS)
    keep &= runs["status"].isin(("completed", "diverged"))
    return runs[keep]


def task_references(
    runs: pd.DataFrame, *, baseline: str = "none", regime: str | None = None, where: str = ""
) -> dict[str, TaskReference]:
    """Each task's :class:`TaskReference` from a results folder's runs (``load_results(DIR)
    .runs``: with the outcome columns).

    Raises:
      ConfigError: no baseline run in the regime.
    """
    mine = reference_runs(runs, baseline=baseline, regime=regime)
    if mine.empty:
        within = f" in regime {regime}" if regime else ""
        raise ConfigError(
            f"{where or 'the folder'} holds no {baseline} runs{within} without other settings "
            "to calibrate on"
        )
    return references_of(mine)


def references_of(runs: pd.DataFrame) -> dict[str, TaskReference]:
    """Each task's :class:`TaskReference` from runs already chosen (a rung's baseline runs, or
    :func:`reference_runs`' selection): every row counted, completed or diverged."""
    out = {}
    for task, group in runs.groupby("task", sort=True):
        values, _, _ = intention_to_treat(group, "final_return")
        threshold = pd.to_numeric(group["threshold"], errors="coerce").dropna()
        t = float(threshold.iloc[0]) if len(threshold) else None
        near = 0 if t is None else int(np.sum(np.abs(values - t) <= NEAR_BAND * abs(t)))
        seconds = pd.to_numeric(group.get("wall_time_s"), errors="coerce").dropna()
        rand = diverged_return(str(task))
        out[str(task)] = TaskReference(
            task=str(task),
            n=len(group),
            r_ref=float(np.mean(values)),
            sd=float(np.std(values, ddof=1)) if len(values) > 1 else math.nan,
            r_rand=rand,
            threshold=t,
            reached=int((group["learned"] == 1).sum()),
            held=int((group["outcome"] == "held").sum()),
            near=near,
            median_seconds=float(seconds.median()) if len(seconds) else None,
        )
    return out
