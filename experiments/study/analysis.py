"""The analysis a results folder's pre-registration record declares, for ``gradlab table``.

A folder holding ``preregistration.json`` is a study's: its primary contrast (the primary arm
against the baseline on the primary endpoint) is confirmatory, tested alone (m = 1) with the
declared test and alpha; everything else in the table is exploratory. A table asked for with
another analysis, test, alpha or baseline is a sensitivity analysis: it declares nothing
confirmatory.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

from experiments.errors import ConfigError
from experiments.study.record import RECORD

__all__ = ["Declared", "declared_analysis", "registered_contrast"]


@dataclasses.dataclass(frozen=True)
class Declared:
    study: str
    arm: str
    endpoint: str
    rate_test: str
    alpha: float
    baseline: str = "none"
    analysis: str = "independent"

    def matches(
        self, *, analysis: str, rate_test: str, alpha: float, baseline: str | None = None
    ) -> bool:
        """The table is the registered analysis: the same analysis, test, alpha and baseline
        (``None``, ``NAME`` or ``variant=NAME``; ``None`` is gradlab table's default,
        ``variant=none``)."""
        asked = "none" if baseline is None else baseline.removeprefix("variant=").strip()
        return (analysis, rate_test, alpha, asked) == (
            self.analysis,
            self.rate_test,
            self.alpha,
            self.baseline,
        )

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
            baseline=str(design.get("baseline", "none")),
        )
    except (json.JSONDecodeError, KeyError, TypeError):
        raise ConfigError(f"corrupt pre-registration record {str(path)!r}") from None


def registered_contrast(
    folder: str | Path,
    endpoints: Sequence[str],
    *,
    analysis: str,
    rate_test: str,
    alpha: float,
    baseline: str | None,
) -> tuple[list | None, Declared | None, str | None]:
    """What a table of ``folder`` on ``endpoints`` may call confirmatory.

    Returns:
      ``(confirmatory contrasts, the declaration, note)``: the registered primary when the
      folder is a study's, the table shows its endpoint, and the analysis, test, alpha and
      baseline are the registered ones; else ``None``, with a note (for stderr) when the table
      is a sensitivity analysis of a study's folder.
    """
    declared = declared_analysis(folder)
    if declared is None or declared.endpoint not in endpoints:
        return None, None, None
    if declared.matches(analysis=analysis, rate_test=rate_test, alpha=alpha, baseline=baseline):
        return declared.confirmatory, declared, None
    note = (
        f"note: not study {declared.study}'s registered analysis ({declared.analysis}, "
        f"{declared.rate_test}, alpha {declared.alpha}, baseline {declared.baseline}): every "
        "contrast is exploratory"
    )
    return None, None, note
