"""How many jobs a parallel sweep deals to a launcher worker at a time (joblib's ``batch_size``).

A launcher worker keeps what a job built (MuZero's compiled agent, :class:`JobHost
<experiments.jobs.process.hosting.JobHost>`) for the next job of the same configuration, which
then only restarts it for its seed. Dealt one job at a time from Hydra's launch order (seeds varying
fastest), every worker takes a job of every configuration and builds each one: with 2 workers,
every configuration is built twice. Dealt ``b`` consecutive jobs at a time, a run of seeds of one
configuration stays in one worker and is built once, at the price of a coarser share of the
work (the last worker to finish may be one deal behind).

:func:`deal_size` picks ``b`` among the divisors of the configurations' run length, so that deals
never straddle two configurations, by a simple model of the sweep's length in units of one job:
a worker's share ``ceil(deals / workers) * b`` jobs, plus ``build_cost`` for each configuration
it builds (at most one per deal, at most all of them). Ties go to the smaller deal (finer
sharing). The choice changes only which worker runs a job, never its numbers: a restarted agent
gives the same numbers as a new one (``tests/muzero/test_train.py``).

joblib (``Parallel(batch_size=b, pre_dispatch="all")``, as ``gradlab sweep`` sets it) cuts its
queue ``b * n_jobs`` jobs at a time into ``n_jobs`` deals, so deals start on a configuration's
first seed when the sweep's length is a multiple of ``b * n_jobs``; a shorter last cut is shared
out in smaller deals (one more build, nothing worse).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence

__all__ = ["BUILD_COST", "deal_size", "run_lengths"]

BUILD_COST = 0.5
"""A build's extra cost, in runs: a first job of a configuration against a restarted one, measured
on the main job (docs/performance.md, "Figures moved from the code"); 0.5 is the low end of the
measured range, which favours the finer deal when in doubt."""


def _runs(keys: Sequence[Hashable]) -> list[tuple[Hashable, int]]:
    """``(key, length)`` of each run of equal consecutive keys."""
    return [(key, sum(1 for _ in run)) for key, run in itertools.groupby(keys)]


def run_lengths(keys: Sequence[Hashable]) -> list[int]:
    """Lengths of the runs of equal consecutive keys: ``[a, a, b, a]`` -> ``[2, 1, 1]``."""
    return [length for _, length in _runs(keys)]


def _length(groups: int, run: int, workers: int, deal: int, build_cost: float) -> float:
    deals_each = math.ceil(groups * run / deal / workers)
    return deals_each * deal + build_cost * min(groups, deals_each)


def deal_size(keys: Sequence[Hashable], workers: int, *, build_cost: float = BUILD_COST) -> int:
    """Jobs to deal to a worker at a time.

    Args:
      keys: each job's configuration (everything but its seed), in launch order.
      workers: jobs run at once.
      build_cost: a build's extra cost in units of one job (>= 0).

    Returns:
      1 (one job at a time) unless every configuration is one run of the same length ``L`` and
      the model (module docstring) finds a divisor of ``L`` that shortens the sweep.
    """
    if build_cost < 0:
        raise ValueError(f"build_cost={build_cost} is negative")
    runs = _runs(keys)
    lengths = {length for _, length in runs}
    if workers < 2 or len(lengths) != 1 or len(runs) != len({key for key, _ in runs}):
        return 1  # nothing to share, runs of unequal length, or a configuration in two runs
    groups, run = len(runs), lengths.pop()
    divisors = [b for b in range(1, run + 1) if run % b == 0]
    return min(divisors, key=lambda b: (_length(groups, run, workers, b, build_cost), b))
