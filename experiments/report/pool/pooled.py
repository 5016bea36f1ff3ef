"""Each variant against the baseline pooled over the strata: a rate's Cochran-Mantel-Haenszel
test (with the exact conditional test and, with a margin, the pooled risk difference's TOST), a
value's van Elteren test; Holm over the variants, or the declared primary alone.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from experiments.base.errors import ConfigError
from experiments.report.pool.table import Cell, Column, Pooled, PooledEquivalence
from experiments.report.statistics.contrasts import adjust
from experiments.report.statistics.equivalence import rate_equivalence, verdict
from experiments.report.statistics.pooled_ranks import Sample, van_elteren
from experiments.report.statistics.pooled_rates import Stratum, pooled_contrast

__all__ = ["check_margin", "pool_arms", "pooled_equivalence"]


def pool_arms(
    cells: dict[tuple[str, str], Cell], values: dict[tuple[str, str], np.ndarray],
    strata: Sequence[Column], arms: Sequence[str], *, baseline: str, primary: str | None,
    alpha: float, margin: float | None, rate: bool,
) -> dict[str, Pooled]:  # fmt: skip
    """Each arm's :class:`Pooled` contrast with ``baseline`` over the strata that have both: a
    rate from the cells' counts, a value from its runs' values (``values``)."""
    if rate:
        contrasts = [pooled_contrast(_paired(cells, strata, arm, baseline, _counts))
                     for arm in arms]  # fmt: skip
        exact_ps = [c.exact_p for c in contrasts]
    else:
        contrasts = [van_elteren(_paired(values, strata, arm, baseline, Sample.of))
                     for arm in arms]  # fmt: skip
        exact_ps = [math.nan] * len(contrasts)  # no exact test beside van Elteren's
    families = ["primary" if a == primary else "all" for a in arms]
    adjusted, sizes = adjust([c.pvalue for c in contrasts], families)
    exact, _ = adjust(exact_ps, families)
    equivalences = [None] * len(arms)
    if margin is not None:
        equivalences = _equivalences(cells, strata, arms, baseline, margin, alpha, families)
    return {
        arm: Pooled(
            c, float(p), int(m), arm == primary, bool(np.isfinite(p) and p < alpha), float(e),
            _with_verdict(q, float(p), alpha),
        )
        for arm, c, p, m, e, q in zip(
            arms, contrasts, adjusted, sizes, exact, equivalences, strict=True
        )
    }  # fmt: skip


def pooled_equivalence(strata: dict, *, margin: float, alpha: float) -> tuple:
    """The pooled risk difference's TOST over ``strata`` (label -> :class:`Stratum` counts).

    The counts are summed over the strata: with the same runs per arm in every stratum (a
    study's design; anything else is refused, naming the stratum), the summed difference is the
    mean of the strata's differences, and the score test's variance at the pooled rates is at
    least the stratified one (a mixture's p(1 - p) is at least the mean of its strata's), so the
    test is conservative: it never calls equivalent more often than alpha at the margin.

    Returns:
      ``(counts (k1, n1, k0, n0), Equivalence)``.

    Raises:
      ConfigError: a stratum whose arms have different numbers of runs with a defined endpoint.
    """
    for label, c in strata.items():
        if c.arm_n != c.base_n:
            raise ConfigError(
                f"a pooled margin needs the same runs per arm in every stratum; {label!r} has "
                f"{c.arm_n} against the baseline's {c.base_n} (with a defined endpoint)"
            )
    k1 = sum(c.arm_events for c in strata.values())
    n1 = sum(c.arm_n for c in strata.values())
    k0 = sum(c.base_events for c in strata.values())
    n0 = sum(c.base_n for c in strata.values())
    return (k1, n1, k0, n0), rate_equivalence(k1, n1, k0, n0, margin=margin, alpha=alpha)


def check_margin(margin: object, endpoint: str, metrics) -> float:
    """A pooled margin: a number in (0, 1) for a rate endpoint; one line naming it otherwise."""
    if not metrics[endpoint].rate:
        raise ConfigError(
            f"--margin is a risk difference for a rate endpoint; {endpoint!r} is a value "
            "(use gradlab table --margin per task)"
        )
    ok = isinstance(margin, int | float) and not isinstance(margin, bool)
    if not ok or not 0.0 < float(margin) < 1.0 or not math.isfinite(float(margin)):
        raise ConfigError(
            f"--margin {margin!r} is out of range; expected a risk difference in (0, 1)"
        )
    return float(margin)


def _equivalences(cells, strata, arms, baseline, margin, alpha, families) -> list:
    """Each arm's :class:`PooledEquivalence` (verdict left blank), TOST p Holm-adjusted in the
    pooled families."""
    raw = [pooled_equivalence(_paired(cells, strata, arm, baseline, _counts), margin=margin,
                              alpha=alpha) for arm in arms]  # fmt: skip
    adjusted, _ = adjust([e.p for _, e in raw], families)
    return [
        PooledEquivalence(k1, n1, k0, n0, (k1 / n1 - k0 / n0) if n1 and n0 else math.nan,
                          e.low, e.high, e.p, float(q), margin, "")
        for ((k1, n1, k0, n0), e), q in zip(raw, adjusted, strict=True)
    ]  # fmt: skip


def _with_verdict(q: PooledEquivalence | None, p_adjusted: float, alpha: float):
    if q is None:
        return None
    words = verdict(q.p_adjusted, p_adjusted, alpha=alpha, margin=q.margin)
    return dataclasses.replace(q, verdict=words)


def _paired(by_cell, strata, arm: str, baseline: str, make) -> dict:
    """Per stratum where both ``arm`` and ``baseline`` have a cell: ``make(arm's, baseline's)``
    of their entries in ``by_cell`` (a rate: 2x2 counts; a value: per-run values). A stratum
    where either has no run with a defined endpoint is kept, adds nothing and is named; one
    where either has no run at all is not one of the arm's strata."""
    out = {}
    for s in strata:
        a, b = by_cell.get((s.label, arm)), by_cell.get((s.label, baseline))
        if a is not None and b is not None:
            out[s.label] = make(a, b)
    return out


def _counts(a: Cell, b: Cell) -> Stratum:
    return Stratum(a.k, a.n, b.k, b.n)
