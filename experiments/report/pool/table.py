"""The pooled table's typed result (:class:`Across`) and its parts: a variant's cell in one
stratum, a stratum's column, a variant's pooled contrast and its equivalence test, and what a
folder's pre-registration declares (:class:`Registration`).

Built by :func:`~experiments.report.pool.across.across_table`; written out by
:mod:`~experiments.report.pool.render`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from experiments.report.statistics.pooled_ranks import RankContrast
from experiments.report.statistics.pooled_rates import PooledContrast
from experiments.report.table.metrics import METRICS

if TYPE_CHECKING:
    from experiments.report.runs.declared import Declared
    from experiments.report.statistics.contrasts import Confirmatory

__all__ = ["Across", "Cell", "Column", "Pooled", "PooledEquivalence", "Registration"]


@dataclasses.dataclass(frozen=True)
class Cell:
    """One variant in one stratum: its ``k/n`` (or mean) and its contrast with the stratum's
    baseline.

    Attributes:
      k, n: runs with the event (None for a value endpoint), runs with a defined endpoint.
      p_adjusted: Holm-adjusted within the stratum (NaN: the baseline, or no test).
      m: the size of its family (1 for a registered primary).
      confirmatory: a study's registered primary contrast (``*``).
      bold: ``p_adjusted < alpha``.
      value, low, high: a value endpoint's mean over the runs and its 95% bootstrap CI, as
        ``gradlab table`` gives them (NaN for a rate).
      imputed: a final return's runs counted as the declared return (diverged, or no value);
        None for a rate, or a value without that rule (a gradient norm).
    """

    k: int | None
    n: int
    p_adjusted: float = math.nan
    m: int = 0
    confirmatory: bool = False
    bold: bool = False
    value: float = math.nan
    low: float = math.nan
    high: float = math.nan
    imputed: int | None = None


@dataclasses.dataclass(frozen=True)
class Pooled:
    """A variant against the baseline over every stratum that has both.

    Attributes:
      contrast: a rate's CMH test, MH odds ratio and Breslow-Day test; a value's van Elteren
        test and pooled ``P(arm > baseline)``.
      p_adjusted: the CMH (van Elteren) p, Holm-adjusted over the variants (alone for the
        primary).
      m: its family's size.
      primary: the pooled contrast declared before the runs.
      bold: ``p_adjusted < alpha``.
      exact_p_adjusted: the exact conditional test's p, adjusted in the same family: a
        small-sample check beside the CMH p, never what bold or ``*`` stand for (NaN for a
        value endpoint).
      equivalence: with a margin (a rate): the pooled risk difference's TOST
        (:func:`pooled_equivalence`), its p Holm-adjusted in the same family as the CMH p.
    """

    contrast: PooledContrast | RankContrast
    p_adjusted: float
    m: int
    primary: bool
    bold: bool
    exact_p_adjusted: float = math.nan
    equivalence: PooledEquivalence | None = None


@dataclasses.dataclass(frozen=True)
class PooledEquivalence:
    """A rate's pooled risk difference against a declared margin.

    Attributes:
      arm_events, arm_n, base_events, base_n: the counts summed over the strata where both arms
        have runs with a defined endpoint.
      difference: ``arm_events / arm_n - base_events / base_n``.
      low, high: its ``1 - 2 alpha`` score interval (90% at alpha 0.05).
      p: the TOST p (the larger one-sided p, Miettinen-Nurminen score test).
      p_adjusted: ``p`` Holm-adjusted in the pooled family (alone for the primary).
      margin: m.
      verdict: ``equivalent within ±m``, ``different`` (the CMH p_adj < alpha) or
        ``not separated``.
    """

    arm_events: int
    arm_n: int
    base_events: int
    base_n: int
    difference: float
    low: float
    high: float
    p: float
    p_adjusted: float
    margin: float
    verdict: str


@dataclasses.dataclass(frozen=True)
class Column:
    """A stratum's column group: its label, folder, task, and its threshold for the caption."""

    label: str
    folder: str
    task: str
    threshold: str


@dataclasses.dataclass(frozen=True)
class Across:
    """The table: ``cells[(stratum label, variant)]``, ``pooled[variant]`` and what they mean."""

    endpoint: str
    key: str
    baseline: str
    alpha: float
    primary: str | None
    strata: tuple[Column, ...]
    variants: tuple[str, ...]  # the baseline first
    cells: dict[tuple[str, str], Cell]
    pooled: dict[str, Pooled]
    excluded: dict[str, str]  # folder label -> "1 failed, 2 running"
    declared: dict[str, str]  # stratum label -> the study whose primary is marked there
    notes: tuple[str, ...] = ()  # a study folder tabled with another analysis than registered
    by_name: bool = False  # arms matched across strata by the variant's name alone
    settings: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    # by_name: variant -> {stratum label: its parameters there, "clipnorm=113" or "its defaults"}

    @property
    def rate(self) -> bool:
        """The endpoint is a rate (k/n, CMH); else a value (mean, van Elteren)."""
        return METRICS[self.endpoint].rate


@dataclasses.dataclass(frozen=True)
class Registration:
    """A folder's pre-registration as the pooled table uses it, read by the caller (the command
    line reads a study's record: :mod:`experiments.protocols.study.analysis`); the default is a
    folder of no study.

    Attributes:
      confirmatory: the contrasts the folder's table of this endpoint may call confirmatory (its
        study's registered primary, when the endpoint, analysis, test, alpha and baseline are the
        registered ones, and then ``declared``'s primary); None: every contrast is exploratory.
      note: a line for stderr (a study's folder tabled with another analysis, or whose audit
        fails), or None.
      declared: the folder's declared primary analysis whatever the table asks; None: no study.
    """

    confirmatory: Sequence[Confirmatory] | None = None
    note: str | None = None
    declared: Declared | None = None
