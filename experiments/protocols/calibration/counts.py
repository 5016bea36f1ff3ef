"""A calibration rung's counts and its rule: what
:mod:`experiments.protocols.calibration.calibrate` decides with.

The verdicts are the runs' own (``summary.json``'s ``stability``, defined in
:mod:`experiments.verdicts.stability` before any calibration): *unstable* = diverged or collapsed;
*never learned* = never reached the task's threshold (``None`` for a task without one). Each run's
outcome class (:func:`experiments.verdicts.outcome.run_outcome`) gives *learned* and *lost after
learning* (reached the threshold, then fell back below it by the end or diverged).

The rule counts one endpoint (:data:`ENDPOINTS`): ``unstable`` (the default, the only one before
2026-11-27) or ``lost_after_learning`` (issue 38's Study 5). The record these counts go into:
:mod:`experiments.protocols.calibration.record`.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from experiments.base.errors import ConfigError
from experiments.jobs import FINISHED, Summary

__all__ = [
    "DEFAULT_ENDPOINT",
    "ENDPOINTS",
    "RungCounts",
    "cannot_meet",
    "check_endpoint",
    "check_rule",
    "count_rung",
    "decide_after",
    "meets_rule",
    "run_class",
]

ENDPOINTS = ("unstable", "lost_after_learning")
"""What a rung's rule counts: unstable runs (diverged or collapsed), or runs that lost what they
learned (outcome ``lost`` or ``diverged_after_learning``)."""
DEFAULT_ENDPOINT = "unstable"


@dataclasses.dataclass(frozen=True)
class RungCounts:
    """Verdicts of one rung's runs.

    Attributes:
      runs: seeds planned (the rule's denominator).
      finished: runs with a finished summary (completed, diverged or timeout).
      unstable: diverged or collapsed.
      diverged: diverged.
      collapsed: collapsed and not diverged (so ``unstable = diverged + collapsed``).
      never_learned: never reached the threshold; ``None`` for a task without one.
      undetermined: finished runs without a collapse verdict (no evaluation) that did not diverge.
      grad_norm_median: the median over the finished runs of each run's median global gradient
        norm (``stability.grad_norm_median``): Study 1's rule for a clip arm's threshold, derived
        from the baseline alone (docs/studies.md); ``None`` where no run has one.
      grad_norm_median_not_diverged: the same median over the finished runs that did not
        diverge: Study 3's rule from amendment (e), for a rung whose diverged runs' norms (the
        scale of an exploding run) would set a threshold that never clips; ``None`` likewise.
      learned: finished runs that reached the threshold before diverging (outcome ``held``,
        ``lost`` or ``diverged_after_learning``); ``None`` for a task without a threshold, or
        where not counted (the endpoint ``unstable``).
      lost_after_learning: finished runs whose outcome is ``lost`` or
        ``diverged_after_learning``; ``None`` likewise.
      no_outcome: finished runs without an outcome class (e.g. no final window); ``None``
        likewise. Counted in neither of the two above.
    """

    runs: int
    finished: int
    unstable: int
    diverged: int
    collapsed: int
    never_learned: int | None
    undetermined: int
    grad_norm_median: float | None = None
    grad_norm_median_not_diverged: float | None = None
    learned: int | None = None
    lost_after_learning: int | None = None
    no_outcome: int | None = None

    def events(self, endpoint: str) -> int:
        """The runs the rule counts under ``endpoint`` (:data:`ENDPOINTS`).

        Raises:
          ConfigError: an unknown endpoint, or ``lost_after_learning`` not counted (no threshold).
        """
        if check_endpoint(endpoint) == "unstable":
            return self.unstable
        if self.lost_after_learning is None:
            raise ConfigError(
                "lost_after_learning is not counted for a task without a competence threshold"
            )
        return self.lost_after_learning


def check_endpoint(endpoint: str) -> str:
    """``endpoint`` if it is one of :data:`ENDPOINTS`; else a one-line ConfigError."""
    if endpoint not in ENDPOINTS:
        raise ConfigError(f"unknown --endpoint {endpoint!r}; choose one of: {', '.join(ENDPOINTS)}")
    return endpoint


def run_class(summary: Summary) -> str | None:
    """A finished run's outcome class (:func:`experiments.verdicts.outcome.run_outcome`), or None.

    The threshold is the one the summary recorded, else the task registry's times the run's
    reward scale (:func:`experiments.report.runs.endpoints.declared_threshold`). The stability
    figures (``reached_threshold``, ``steps_to_threshold``) must be measured against that
    threshold: a run that recorded none has them re-measured from its evaluations by the
    calibration before it is counted; ``reached_threshold`` None (not measured) gives None.
    """
    from experiments.report.runs import declared_threshold
    from experiments.verdicts import run_outcome

    v = summary.stability
    if v.get("reached_threshold") is None:
        return None
    threshold = summary.threshold
    if threshold is None or not math.isfinite(float(threshold)):
        threshold = declared_threshold(summary.task, summary.reward_scale)
    return run_outcome(
        threshold=threshold,
        steps_to_threshold=v.get("steps_to_threshold"),
        diverged=v.get("diverged"),
        diverged_step=v.get("diverged_step"),
        final_return=v.get("final_return"),
    )


def _median_norm(stability: Sequence[Mapping[str, Any]]) -> float | None:
    """The median of the runs' finite ``grad_norm_median`` (``None`` where none has one)."""
    norms = [v.get("grad_norm_median") for v in stability]
    norms = [float(x) for x in norms if x is not None and math.isfinite(float(x))]
    return float(statistics.median(norms)) if norms else None


def count_rung(
    summaries: Sequence[Summary | None], *, has_threshold: bool, endpoint: str = DEFAULT_ENDPOINT
) -> RungCounts:
    """Counts the verdicts of a rung's runs (``None``: a run without a summary); the outcome
    counts (``learned``, ``lost_after_learning``, ``no_outcome``) for the endpoint
    ``lost_after_learning`` on a task with a threshold only (else ``None``: an ``unstable``
    record does not hold them)."""
    done = [s for s in summaries if s is not None and s.status in FINISHED]
    stability = [s.stability for s in done]
    diverged = sum(1 for v in stability if v.get("diverged") == 1)
    collapsed = sum(1 for v in stability if v.get("diverged") != 1 and v.get("collapsed") == 1)
    undetermined = sum(1 for v in stability if v.get("diverged") != 1 and v.get("unstable") is None)
    never = sum(1 for v in stability if v.get("reached_threshold") != 1)
    from experiments.verdicts import ENDPOINT_CLASSES

    outcomes = has_threshold and check_endpoint(endpoint) != DEFAULT_ENDPOINT
    classes = [run_class(s) for s in done] if outcomes else []
    learned = sum(1 for c in classes if c in ENDPOINT_CLASSES["learned"])
    lost = sum(1 for c in classes if c in ENDPOINT_CLASSES["lost_after_learning"])
    no_outcome = sum(1 for c in classes if c is None)
    return RungCounts(
        runs=len(summaries),
        finished=len(done),
        unstable=diverged + collapsed,
        diverged=diverged,
        collapsed=collapsed,
        never_learned=never if has_threshold else None,
        undetermined=undetermined,
        grad_norm_median=_median_norm(stability),
        grad_norm_median_not_diverged=_median_norm(
            [v for v in stability if v.get("diverged") != 1]
        ),
        learned=learned if outcomes else None,
        lost_after_learning=lost if outcomes else None,
        no_outcome=no_outcome if outcomes else None,
    )


def check_rule(rule: float | str) -> float:
    """The rule's fraction (a number, or its text), refused outside [0, 1] or not a number."""
    if isinstance(rule, str):
        try:
            rule = float(rule)
        except ValueError:
            raise ConfigError(
                f"--rule {rule!r} is not a number; expected a fraction in [0, 1]"
            ) from None
    if isinstance(rule, bool) or not isinstance(rule, int | float) or not 0.0 <= rule <= 1.0:
        raise ConfigError(f"--rule {rule!r} is out of range; expected a fraction in [0, 1]")
    return float(rule)


def meets_rule(counts: RungCounts, rule: float, endpoint: str = DEFAULT_ENDPOINT) -> bool:
    """Whether ``events / runs >= rule``, exactly (``Fraction``: 3/10 meets 0.3, which
    ``3 >= 0.3 * 10`` in floating point would not, 0.3 * 10 being 3.0000000000000004); the
    events are the ``endpoint``'s (:meth:`RungCounts.events`: unstable runs by default)."""
    if counts.runs == 0:
        return False
    return Fraction(counts.events(endpoint), counts.runs) >= _fraction(rule)


def _fraction(rule: float) -> Fraction:
    """The rule as written (``0.3`` is 3/10, not the float nearest it)."""
    return Fraction(repr(float(rule)))


def cannot_meet(counts: RungCounts, rule: float, endpoint: str = DEFAULT_ENDPOINT) -> bool:
    """Whether the rung can no longer meet the rule: even if every run not finished yet were an
    event (unstable, or lost after learning: ``endpoint``), ``(events + not finished) / runs <
    rule`` (exact, as :func:`meets_rule`)."""
    if counts.runs == 0:
        return False
    best = counts.events(endpoint) + counts.runs - counts.finished
    return Fraction(best, counts.runs) < _fraction(rule)


def decide_after(runs: int, rule: float, batch: int) -> int:
    """How many of a rung's ``runs`` seeds to run before asking :func:`cannot_meet`: the fewest
    whose all being stable already rules the rung out (``runs - need + 1``, ``need`` the unstable
    runs the rule asks for), rounded up to whole batches of ``batch`` runs at once, so that the
    question costs no extra wave of runs; ``runs`` (ask nothing early) when that leaves no seed
    to save."""
    need = math.ceil(_fraction(rule) * runs)  # the fewest unstable runs meeting the rule
    if need == 0:
        return runs  # rule 0: every rung meets it
    first = runs - need + 1
    first = -(-first // batch) * batch
    return min(first, runs)
