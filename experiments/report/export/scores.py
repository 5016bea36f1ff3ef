"""The score matrix rliable takes, ``{arm: array[runs, tasks]}``, from one row per run.

rliable (Agarwal et al., 2021; ``rliable.library.get_interval_estimates``,
``rliable.metrics.aggregate_iqm``) wants, per arm, a rectangle: one column per task, one row per
run. Our runs are rows of a frame, so three things are decided here and said in
:meth:`Scores.statement`:

* **What a cell holds**: the run's ``normalised_return`` where the caller passes each task's
  declared ``(r_ref, r_rand)`` (a study's record), else its raw ``final_return`` as ``gradlab
  table`` counts it (a diverged run, or one without a value, scores its task's random-policy
  return times its reward scale: :func:`~experiments.report.runs.results.intention_to_treat`).
  Every completed or diverged run counts; runs of other statuses (crashed, timed out) do not.
* **Which run is row i**: in each task's column, the arm's run with the i-th smallest seed. The
  rows of different tasks are different runs; pairing them by seed rank changes nothing rliable's
  stratified bootstrap computes (it resamples the runs of each task on their own).
* **Ragged arms**: an arm with more runs on one task than another keeps, on every task, its
  runs with the smallest seeds, as many as its fewest on any task; the others are listed in
  :attr:`Scores.left_out` (seeds run in ascending order, so these are the latest runs, not
  chosen by their outcome).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from experiments.base.errors import ConfigError
from experiments.report.runs.counting import AVERAGED
from experiments.report.runs.normalised import COLUMN as NORMALISED
from experiments.report.runs.normalised import add_normalised
from experiments.report.runs.results import group_label, intention_to_treat
from experiments.report.statistics.intervals import statistic

__all__ = ["Scores", "score_matrix"]

RAW = "final_return"


@dataclasses.dataclass(frozen=True)
class Scores:
    """An arm -> ``[runs, tasks]`` score matrix and how it was made.

    Attributes:
      matrices: arm -> ``[N_arm, T]`` float scores, columns in :attr:`tasks`' order.
      tasks: the ``T`` tasks, sorted.
      score: ``normalised_return`` or ``final_return``.
      normalisation: task -> ``(r_ref, r_rand)`` when :attr:`score` is normalised, else None.
      arm_keys: the settings whose values name an arm (``variant``; ``regime, variant`` ...).
      seeds: arm -> task -> ``[N_arm]`` the seeds of the column's rows, in row order.
      left_out: arm -> task -> the seeds of runs beyond the arm's fewest on a task.
      excluded: runs of a status outside the design (not completed or diverged), by status.
    """

    matrices: dict[str, np.ndarray]
    tasks: tuple[str, ...]
    score: str
    normalisation: dict[str, tuple[float, float]] | None
    arm_keys: tuple[str, ...]
    seeds: dict[str, dict[str, list[int]]]
    left_out: dict[str, dict[str, list[int]]]
    excluded: dict[str, int]

    def iqm(self) -> dict[str, float]:
        """Each arm's interquartile mean over its runs and tasks together (gradlab's ``iqm``,
        ``scipy.stats.trim_mean(x, 0.25)`` of the flattened matrix: what
        ``rliable.metrics.aggregate_iqm`` computes)."""
        return {arm: statistic(m.ravel(), stat="iqm") for arm, m in self.matrices.items()}

    def statement(self) -> dict:
        """What the matrix holds, for the JSON beside it."""
        if self.normalisation is not None:
            what = ("normalised_return: (R - R_rand) / (R_ref - R_rand), R the run's final "
                    "return (final-window mean of its evaluations) over its reward scale, "
                    "R_ref and R_rand declared per task in the study's record before the runs; "
                    "a diverged run scores 0")  # fmt: skip
            norm = {t: {"r_ref": r, "r_rand": q} for t, (r, q) in self.normalisation.items()}
        else:
            what = ("final_return, raw (no normalisation is declared for these runs): the "
                    "run's final return (final-window mean of its evaluations) as gradlab "
                    "table counts it; a diverged run scores its task's random-policy return "
                    "times its reward scale; returns of different tasks are on their own "
                    "scales")  # fmt: skip
            norm = None
        return {
            "layout": "{arm: array[runs, tasks]}, as rliable.library.get_interval_estimates "
            "takes it",
            "arms": list(self.matrices),
            "arm_keys": list(self.arm_keys),
            "tasks": list(self.tasks),
            "shape": {arm: list(m.shape) for arm, m in self.matrices.items()},
            "score": self.score,
            "score_definition": what,
            "normalisation": norm,
            "runs_counted": "every completed or diverged run (intention to treat); "
            + (", ".join(f"{n} {s}" for s, n in self.excluded.items()) or "none")
            + " left out",
            "rows": "in each task's column, row i is the arm's run with the i-th smallest seed "
            "on that task; the rows of different tasks are different runs (rliable's "
            "stratified bootstrap resamples each task's runs on their own, so this pairing "
            "changes none of its estimates); an arm with more runs on one task than another "
            "keeps, on every task, as many runs as its fewest on a task, those with the "
            "smallest seeds (left_out lists the others)",
            "seeds": self.seeds,
            "left_out": self.left_out,
            "iqm": self.iqm(),
        }


def _arm_keys(runs: pd.DataFrame, keys: Sequence[str]) -> tuple[str, ...]:
    """The settings that vary between the runs, the task and seed aside (``variant`` alone
    when none does)."""
    varying = [k for k in keys if k not in ("task", "seed") and runs[k].nunique() > 1]
    if not varying and "variant" in runs:
        varying = ["variant"]
    return tuple(varying)


def _values(runs: pd.DataFrame, normalisation) -> tuple[np.ndarray, str]:
    if normalisation is not None:
        return add_normalised(runs, normalisation)[NORMALISED].to_numpy(dtype=float), NORMALISED
    return intention_to_treat(runs, RAW)[0], RAW


def score_matrix(
    runs: pd.DataFrame,
    *,
    keys: Sequence[str],
    normalisation: Mapping[str, tuple[float, float]] | None = None,
) -> Scores:
    """The rliable score matrix of ``runs`` (module docstring).

    Args:
      runs: ``[N]`` one row per run (:func:`~experiments.report.runs.results.load_results`'
        frame, or several folders' concatenated): ``status``, ``seed``, ``task``,
        ``final_return``, ``diverged``, ``reward_scale`` and the settings in ``keys``.
      keys: the settings that define a group (each folder's ``group_keys``); those that vary,
        the task aside, name the arms.
      normalisation: task -> ``(r_ref, r_rand)`` declared before the runs, or None (raw
        final returns).

    Raises:
      ConfigError: no completed or diverged run, a run there twice (the same arm, task and
        seed), an arm without a run on one of the tasks, or a task without a declared
        normalisation.
    """
    design = runs[runs["status"].isin(AVERAGED)].reset_index(drop=True)
    excluded = runs.loc[~runs["status"].isin(AVERAGED), "status"].value_counts()
    if design.empty:
        raise ConfigError("no completed or diverged run to score: a score matrix needs one")
    arm_keys = _arm_keys(design, keys)
    values, score = _values(design, normalisation)
    arms = [group_label({k: row[k] for k in arm_keys}) for _, row in design.iterrows()]
    table = pd.DataFrame({"arm": arms, "task": design["task"].astype(str),
                          "seed": design["seed"].astype(int), "value": values})  # fmt: skip
    twice = table[table.duplicated(["arm", "task", "seed"])]
    if not twice.empty:
        arm, task, seed = twice.iloc[0][["arm", "task", "seed"]]
        raise ConfigError(
            f"arm {arm!r}, task {task!r}, seed {seed} is there twice (two folders hold the same "
            "run?); a score matrix counts each run once: pass each run's folder once"
        )
    tasks = tuple(sorted(table["task"].unique()))
    matrices, seeds, left_out = {}, {}, {}
    for arm in sorted(table["arm"].unique()):
        mine = table[table["arm"] == arm].sort_values("seed")
        columns = {t: mine[mine["task"] == t] for t in tasks}
        missing = [t for t, c in columns.items() if c.empty]
        if missing:
            raise ConfigError(
                f"arm {arm!r} has no run on task {missing[0]!r}; a score matrix needs every "
                f"arm on every task ({', '.join(tasks)}): export the folders apart"
            )
        n = min(len(c) for c in columns.values())
        matrices[arm] = np.stack([columns[t]["value"].to_numpy(float)[:n] for t in tasks], 1)
        seeds[arm] = {t: [int(s) for s in columns[t]["seed"][:n]] for t in tasks}
        extra = {t: [int(s) for s in columns[t]["seed"][n:]] for t in tasks}
        left_out[arm] = {t: s for t, s in extra.items() if s}
    return Scores(
        matrices=matrices,
        tasks=tasks,
        score=score,
        normalisation=None if normalisation is None else {t: normalisation[t] for t in tasks},
        arm_keys=arm_keys,
        seeds=seeds,
        left_out={a: v for a, v in left_out.items() if v},
        excluded={str(s): int(n) for s, n in excluded.items()},
    )
