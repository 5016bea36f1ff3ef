"""A study's registered primary analysis as a table reads it (:class:`Declared`), and the
endpoints' definitions version a record is registered with (:data:`ENDPOINTS_VERSION`).

Below the report, so that a table and a pooled table can name what a study declared; the study
protocol (:mod:`experiments.protocols.study.analysis`) reads it from a record.
"""

from __future__ import annotations

import dataclasses

__all__ = ["ENDPOINTS_VERSION", "Declared"]

ENDPOINTS_VERSION = 2
"""The endpoints' definitions a record is registered with: 2 is ``failed`` = not held
(:mod:`experiments.verdicts.outcome`); a record without the key was registered with version 1, whose
``failed`` is today's ``failed_v1`` (unstable, or never reached the threshold)."""


@dataclasses.dataclass(frozen=True)
class Declared:
    """A study's registered primary analysis.

    Attributes:
      study: the study's name.
      arm: the primary arm (a variant).
      endpoint: the endpoint's name today (``failed_v1`` for a version-1 ``failed``).
      rate_test: the declared test.
      alpha: the declared alpha.
      baseline: the baseline arm.
      analysis: the analysis (``independent``).
      registered_as: the endpoint's name in the record (equal to ``endpoint`` unless renamed).
      endpoints_version: the record's endpoints version (1 when it has none).
    """

    study: str
    arm: str
    endpoint: str
    rate_test: str
    alpha: float
    baseline: str = "none"
    analysis: str = "independent"
    registered_as: str = ""
    endpoints_version: int = ENDPOINTS_VERSION
    margin: float | None = None  # the primary endpoint's equivalence margin, if declared
    margin_reason: str | None = None

    @property
    def renamed(self) -> str | None:
        """A caption's words for a renamed endpoint, e.g. "registered as `failed` (endpoints
        version 1), today's `failed_v1`"; None when not renamed."""
        if not self.registered_as or self.registered_as == self.endpoint:
            return None
        return (
            f"registered as `{self.registered_as}` (endpoints version {self.endpoints_version}), "
            f"today's `{self.endpoint}`"
        )

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
