"""Running a registered study: which sweeps, in which order, and what a refusal or a stop does.

:func:`study_sweeps` lists the study's sweeps: one per arm (one per arm and task in a study
across tasks), the primary contrast's two arms first (the baseline, then the primary arm, task by
task), so that a study stopped part-way holds its confirmatory contrast's runs, paired within
tasks, before any exploratory arm's. :func:`run_study` runs them through a caller's ``sweep``
(the command line prints each as ``gradlab sweep`` does): a sweep refused before it ran (a
``ConfigError``) is reported and the next still runs; a stop signal's exit code ends the study
at once (the same command resumes it); otherwise the worst exit code is returned.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from experiments.base.errors import ConfigError
from experiments.protocols.study.design import Arm, Study, TaskStratum

__all__ = ["USAGE_ERROR", "StudySweep", "run_study", "study_sweeps"]

USAGE_ERROR = 2
"""The exit code of a sweep refused before it ran (as the command line's bad input)."""


@dataclasses.dataclass(frozen=True)
class StudySweep:
    """One sweep of a study: an arm (in one task) and its ``gradlab sweep`` overrides."""

    arm: Arm
    stratum: TaskStratum
    overrides: tuple[str, ...]
    header: str


def study_sweeps(study: Study, results_dir: str | Path) -> list[StudySweep]:
    """The study's sweeps in running order (module docstring)."""
    first = [study.baseline, study.primary.arm]
    groups = [
        [study.arm(v) for v in first],
        [a for a in study.arms if a.variant not in first],
    ]
    out = []
    for group in groups:
        for stratum in study.strata:
            for arm in group:
                where = f"{stratum.task}: " if study.across_tasks else ""
                out.append(StudySweep(
                    arm, stratum, tuple(study.sweep_overrides(arm, results_dir, stratum)),
                    f"== {study.name}: {where}arm {arm.label} ({len(stratum.seeds)} seeds)",
                ))  # fmt: skip
    return out


def run_study(
    study: Study,
    results_dir: str | Path,
    *,
    sweep: Callable[[tuple[str, ...]], int],
    say: Callable[[str], None],
    error: Callable[[str], None],
    stopped: frozenset[int],
) -> int:
    """Runs every sweep of :func:`study_sweeps` (module docstring) and returns the exit code.

    Args:
      sweep: runs one sweep's overrides, returns its exit code; raises ``ConfigError`` when it
        refuses before running.
      say: prints a sweep's header.
      error: prints a refusal, one line.
      stopped: exit codes of a stop signal: the study ends at once with it.
    """
    worst = 0
    for item in study_sweeps(study, results_dir):
        say(item.header)
        try:
            code = sweep(item.overrides)
        except ConfigError as err:  # this sweep refused: the next ones still run
            error(f"error: {err}")
            code = USAGE_ERROR
        if code in stopped:
            return code
        worst = max(worst, code)
    return worst
