"""One outcome per run: did it learn the task, and did it keep what it learned?

A run's evaluation returns are read against its task's **competence threshold** ``T`` (the task
registry's ``threshold``, declared per task with its source before any study; times the run's
reward scale). The classes, one per run, mutually exclusive (issue 37; docs/statistics.md):

* ``learned``: some evaluation reached ``T`` before the run diverged (a threshold first crossed
  after the diverging step does not count: the run had stopped). Then:

  * ``held``: it did not diverge and its final-window mean return (the evaluations after 0.9 of
    the planned steps, :mod:`experiments.verdicts.stability`) is still >= ``T``;
  * ``lost``: it did not diverge and its final-window mean fell back below ``T``. Measured from
    the learned peak (the crossing), never from the first evaluation: a run whose first
    evaluation is its best has nothing to lose unless that evaluation reached ``T``;
  * ``diverged_after_learning``: it diverged after reaching ``T``.

* not learned:

  * ``diverged_before_learning``: it diverged before reaching ``T``;
  * ``never_learned``: it ran to its end without reaching ``T``.

The endpoints a table, a pool, a study or a plan can name (0/1 per run, every run of the design
in the denominator) are unions of classes (:data:`ENDPOINT_CLASSES`): ``failed`` (did not learn
and hold: every class but ``held``), ``lost_after_learning`` (instability proper: ``lost`` or
``diverged_after_learning``), ``never_learned`` (never reached ``T``, diverged or not) and
``learned``. ``failed`` = ``never_learned`` + ``lost_after_learning``, a disjoint union.

A run of a task without a threshold, or one without the figures a class needs (no final window
for a learned run that did not diverge: e.g. a run stopped early), has no outcome (``None``):
every endpoint is undefined for it, never guessed.

The figures come from the run's stability summary
(:func:`experiments.verdicts.stability.stability_summary`):
``reached_threshold``, ``steps_to_threshold``, ``diverged``, ``diverged_step``, ``final_return``.
Pure Python: no NumPy, no TensorFlow.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from experiments.base.errors import ConfigError, unknown_choice

__all__ = [
    "CLASSES",
    "ENDPOINT_CLASSES",
    "endpoint_value",
    "learned_step",
    "run_outcome",
]

CLASSES = (
    "held",
    "lost",
    "diverged_after_learning",
    "diverged_before_learning",
    "never_learned",
)
"""The outcome classes, from best to worst-informed order used by tables and figures."""

ENDPOINT_CLASSES: Mapping[str, frozenset[str]] = {
    "learned": frozenset({"held", "lost", "diverged_after_learning"}),
    "failed": frozenset(CLASSES) - {"held"},
    "lost_after_learning": frozenset({"lost", "diverged_after_learning"}),
    "never_learned": frozenset({"never_learned", "diverged_before_learning"}),
}
"""Each outcome endpoint: the classes that count as an event (1); every other class is 0."""

_ROUNDING = 1e-9  # relative tolerance of the final-window comparison with the threshold


def _number(value: object) -> float | None:
    """A finite float, or None (None, NaN and non-numbers are "not recorded")."""
    if value is None or isinstance(value, bool):
        return None
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def learned_step(
    *, steps_to_threshold: object, diverged: object, diverged_step: object
) -> float | None:
    """The step the run reached its threshold, if it did so before diverging; else None.

    Args:
      steps_to_threshold: the first evaluation step with a return >= the threshold (None: never).
      diverged: 0/1.
      diverged_step: the diverging step (None if it did not diverge).
    """
    at = _number(steps_to_threshold)
    if at is None:
        return None
    bad = _number(diverged_step)
    if (_number(diverged) or 0.0) >= 0.5 and bad is not None and at > bad:
        return None
    return at


def run_outcome(
    *,
    threshold: float | None,
    steps_to_threshold: object,
    diverged: object,
    diverged_step: object,
    final_return: object,
) -> str | None:
    """The outcome class of one run (module docstring).

    Args:
      threshold: the task's competence threshold in the run's reward units (already times its
        reward scale); None: the task declares none (the outcome is undefined).
      steps_to_threshold: the first evaluation step whose return >= ``threshold`` (None: never).
      diverged: 0/1 (None: not recorded).
      diverged_step: the diverging step.
      final_return: the final-window mean evaluation return (None: no final window).

    Returns:
      One of :data:`CLASSES`, or None where undefined.
    """
    t = _number(threshold)
    div = _number(diverged)
    if t is None or div is None:
        return None
    learned = learned_step(
        steps_to_threshold=steps_to_threshold, diverged=diverged, diverged_step=diverged_step
    )
    if div >= 0.5:
        return "diverged_after_learning" if learned is not None else "diverged_before_learning"
    if learned is None:
        return "never_learned"
    final = _number(final_return)
    if final is None:
        return None
    held = final >= t - _ROUNDING * max(1.0, abs(t))
    return "held" if held else "lost"


def endpoint_value(endpoint: str, outcome: str | None) -> float:
    """An outcome endpoint of one run: 1.0 (event), 0.0, or NaN (no outcome).

    Raises:
      ConfigError: ``endpoint`` is not one of :data:`ENDPOINT_CLASSES`, or ``outcome`` is not a
        class.
    """
    if endpoint not in ENDPOINT_CLASSES:
        raise unknown_choice("outcome endpoint", endpoint, ENDPOINT_CLASSES)
    if outcome is None:
        return math.nan
    if outcome not in CLASSES:
        raise ConfigError(f"outcome {outcome!r} is not a class; expected one of {CLASSES}")
    return 1.0 if outcome in ENDPOINT_CLASSES[endpoint] else 0.0
