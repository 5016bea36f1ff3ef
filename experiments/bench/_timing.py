"""Interleaved timing: every case timed once per round, rounds alternating order (private).

Machines are shared and noisy, so the cases of one comparison are timed side by side: after a
warm-up call of each (compilation, caches), round ``r`` times every case once, in list order on
even rounds and reversed on odd ones, so a slow drift of the machine hits both sides alike. A case
is a block of work with a known size; its rate in a round is ``work / seconds``, and the figure
kept is the median over rounds.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Sequence

__all__ = ["Case", "interleaved_rates", "median"]


@dataclasses.dataclass(frozen=True)
class Case:
    """One timed block of work.

    Attributes:
      name: key of the case's rates.
      run: does the block once, returning only when the work is done (results synchronised).
      work: units of work in one block (samples, simulations, FLOPs, ...).
      warm: what the warm-up calls instead of ``run`` (a cheaper block that still compiles and
        fills the caches), ``None`` for ``run`` itself.
    """

    name: str
    run: Callable[[], object]
    work: float
    warm: Callable[[], object] | None = None


def interleaved_rates(
    cases: Sequence[Case],
    *,
    repeats: int,
    warmup: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Times ``cases`` side by side.

    Args:
      cases: the blocks to compare; names must be distinct.
      repeats: rounds, >= 1.
      warmup: untimed calls of every case before the first round.
      clock: seconds; injectable for tests.

    Returns:
      ``{name: [rate of round 0, ..., rate of round repeats-1]}``, rate = work / seconds.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    names = [case.name for case in cases]
    if len(set(names)) != len(names):
        raise ValueError(f"case names must be distinct, got {names}")
    for case in cases:
        for _ in range(warmup):
            (case.warm or case.run)()
    rates: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(repeats):
        order = cases if round_index % 2 == 0 else list(reversed(cases))
        for case in order:
            start = clock()
            case.run()
            seconds = clock() - start
            rates[case.name].append(case.work / max(seconds, 1e-12))
    return rates


def median(values: Sequence[float]) -> float:
    """The median of a non-empty sequence."""
    return float(statistics.median(values))
