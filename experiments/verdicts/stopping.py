"""Why a run stops early: divergence and budgets, each defined once.

The runner stops a job with :class:`DivergenceCheck` (one row at a time, as the rows arrive); the
stability summary (:mod:`experiments.verdicts.stability`) decides ``diverged`` with
:func:`first_divergence` over the stored rows, which runs the very same check. So a run stopped as
``diverged`` always has ``diverged: 1`` and the same ``diverged_step`` in its summary, and a run
that was not stopped never does. Pure Python: no TensorFlow, no NumPy.

Definition (``DivergenceRule(factor, reference_steps)``): a row diverges when

* its ``nonfinite`` flag is set (>= 1), or any ``loss/*`` or ``grad/*`` value is NaN or infinite;
* or its ``loss/total`` exceeds ``factor`` times the *reference*: the mean ``loss/total`` of the
  first ``reference_steps`` rows that have one (a row is compared only once the reference is
  complete, so the first ``reference_steps`` rows can only diverge by being non-finite).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from typing import Any

from experiments.base.errors import ConfigError

__all__ = ["Budget", "DivergenceCheck", "DivergenceRule", "first_divergence"]


@dataclasses.dataclass(frozen=True)
class DivergenceRule:
    """When a run counts as diverged (see the module docstring).

    Attributes:
      factor: a loss above ``factor`` x the reference diverges; > 1.
      reference_steps: rows whose mean ``loss/total`` is the reference; >= 1.
    """

    factor: float = 100.0
    reference_steps: int = 10

    def __post_init__(self) -> None:
        if isinstance(self.factor, bool) or not (
            isinstance(self.factor, int | float) and math.isfinite(self.factor) and self.factor > 1
        ):
            raise ConfigError(
                f"divergence.factor={self.factor!r} is out of range; expected a number > 1"
            )
        if (
            isinstance(self.reference_steps, bool)
            or not isinstance(self.reference_steps, int)
            or self.reference_steps < 1
        ):
            raise ConfigError(
                f"divergence.reference_steps={self.reference_steps!r} is out of range; "
                "expected an integer >= 1"
            )


def _not_finite(value: Any) -> bool:
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and not math.isfinite(value)
    )


class DivergenceCheck:
    """Applies a :class:`DivergenceRule` to the rows of one run, in step order."""

    def __init__(self, rule: DivergenceRule) -> None:
        self.rule = rule
        self._early: list[float] = []

    @property
    def reference(self) -> float | None:
        """The mean early ``loss/total``, once ``reference_steps`` rows have given one."""
        if len(self._early) < self.rule.reference_steps:
            return None
        return sum(self._early) / len(self._early)

    def diverged(self, row: Mapping[str, Any]) -> bool:
        """Whether ``row`` (the next row of the run) diverges; updates the reference."""
        flag = row.get("nonfinite")
        if isinstance(flag, int | float) and (flag >= 1 or math.isnan(flag)):
            return True
        if any(_not_finite(v) for k, v in row.items() if k.startswith(("loss/", "grad/"))):
            return True
        loss = row.get("loss/total")
        if not isinstance(loss, int | float) or isinstance(loss, bool):
            return False
        reference = self.reference
        if reference is None:
            self._early.append(float(loss))
            return False
        return reference > 0 and loss > self.rule.factor * reference


def first_divergence(rows: Iterable[Mapping[str, Any]], rule: DivergenceRule) -> int | None:
    """The ``step`` of the first diverging row (rows in step order), or ``None``."""
    check = DivergenceCheck(rule)
    for row in rows:
        if check.diverged(row):
            return int(row["step"])
    return None


@dataclasses.dataclass(frozen=True)
class Budget:
    """Limits past which a job stops cleanly with status ``timeout`` (``None``: no limit).

    Attributes:
      max_wall_s: seconds of the training loop.
      max_steps: training steps.
    """

    max_wall_s: float | None = None
    max_steps: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_wall_s", "max_steps"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ConfigError(
                    f"budget.{name}={value!r} is out of range; expected a number > 0 or null"
                )

    def out_of_time(self, elapsed_s: float) -> bool:
        """Whether ``elapsed_s`` seconds of training use up the wall-time budget."""
        return self.max_wall_s is not None and elapsed_s >= self.max_wall_s

    def out_of_steps(self, steps: int) -> bool:
        """Whether ``steps`` training steps use up the step budget."""
        return self.max_steps is not None and steps >= self.max_steps
