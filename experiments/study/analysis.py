"""The analysis a results folder's pre-registration record declares, for ``gradlab table``.

A folder holding ``preregistration.json`` is a study's: its primary contrast (the primary arm
against the baseline on the primary endpoint) is confirmatory, tested alone (m = 1) with the
declared test and alpha; everything else in the table is exploratory. A table asked for with
another analysis, test or alpha is a sensitivity analysis: it declares nothing confirmatory.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from experiments.errors import ConfigError
from experiments.study.record import RECORD

__all__ = ["Declared", "declared_analysis"]


@dataclasses.dataclass(frozen=True)
class Declared:
    study: str
    arm: str
    endpoint: str
    rate_test: str
    alpha: float
    analysis: str = "independent"

    def matches(self, *, analysis: str, rate_test: str, alpha: float) -> bool:
        return (analysis, rate_test, alpha) == (self.analysis, self.rate_test, self.alpha)

    @property
    def confirmatory(self) -> list[tuple[dict, str, str]]:
        return [({}, self.arm, self.endpoint)]


def declared_analysis(folder: str | Path) -> Declared | None:
    """The declared primary analysis of a study's folder; None for a folder without a record."""
    path = Path(folder) / RECORD
    if not path.is_file():
        return None
    try:
        design = json.loads(path.read_text(encoding="utf-8"))["design"]
        primary = design["primary"]
        return Declared(
            study=str(design["name"]),
            arm=str(primary["arm"]),
            endpoint=str(primary["endpoint"]),
            rate_test=str(primary["test"]),
            alpha=float(primary["alpha"]),
        )
    except (json.JSONDecodeError, KeyError, TypeError):
        raise ConfigError(f"corrupt pre-registration record {str(path)!r}") from None
