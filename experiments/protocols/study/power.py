"""Power of the primary contrast before any run: exact, by enumeration, for Fisher's exact test.

:func:`fisher_power` sums, over every outcome ``(k1, k2)`` of two arms of ``n`` runs each, the
probability of that outcome under the planning rates times 1 if Fisher's two-sided exact test
(``scipy.stats.fisher_exact``) rejects at ``alpha``. No normal approximation: with tens of seeds
per arm and rates near 0 or 1 the approximation is poor, and the exact sum is cheap
(``(n + 1)^2`` outcomes, computed per margin in milliseconds). :func:`seeds_for_power`
finds the smallest ``n`` reaching a target power.

:func:`equivalence_power` is the same exact sum for an equivalence design: the probability that
the two one-sided tests the table runs (:mod:`experiments.report.statistics.equivalence`,
Miettinen-Nurminen
score) conclude the risk difference lies within ±margin; :func:`seeds_for_equivalence` the
smallest ``n`` reaching a target.

:func:`pooled_power` is the same exact sum for the test ``gradlab pool`` runs over several strata
(:func:`experiments.report.statistics.pooled_rates.pooled_contrast`): the Cochran-Mantel-Haenszel
test over the
informative strata, Fisher's exact test where only one is informative, no rejection where none
is. It sums over every outcome of every stratum, ``(n + 1)^(2S)`` of them for ``S`` strata, so
it is exact for the few strata of a study across tasks (three strata of 10 runs an arm: 1.8
million outcomes, a few seconds) and refuses more than it can hold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from experiments.base.errors import ConfigError

__all__ = [
    "equivalence_power",
    "fisher_p_grid",
    "fisher_power",
    "pooled_power",
    "seeds_for_equivalence",
    "seeds_for_power",
]

_MAX_OUTCOMES = 20_000_000  # joint outcomes pooled_power enumerates at most


def _check_rate(name: str, rate: float) -> float:
    if not 0.0 <= rate <= 1.0:
        raise ConfigError(f"{name}={rate} is not a rate; expected a number in [0, 1]")
    return float(rate)


def fisher_p_grid(n1: int, n2: int) -> np.ndarray:
    """Two-sided Fisher p of every outcome: ``grid[k1, k2]`` for k1/n1 against k2/n2.

    Computed per total ``K = k1 + k2`` from the hypergeometric law of ``k1`` given the margins,
    as ``scipy.stats.fisher_exact`` defines the two-sided p: the summed probability of the
    tables no more likely than the one observed (relative tolerance 1e-7). The test checks it
    against ``fisher_exact`` cell by cell; this form takes milliseconds where calling it
    ``(n + 1)^2`` times takes seconds."""
    grid = np.empty((n1 + 1, n2 + 1))
    for total in range(n1 + n2 + 1):
        lo, hi = max(0, total - n2), min(n1, total)
        k1 = np.arange(lo, hi + 1)
        pmf = stats.hypergeom.pmf(k1, n1 + n2, total, n1)
        p = (pmf[None, :] <= pmf[:, None] * (1 + 1e-7)).astype(float) @ pmf
        grid[k1, total - k1] = np.minimum(p, 1.0)
    return grid


def fisher_power(p1: float, p2: float, n: int, *, alpha: float = 0.05) -> float:
    """Probability that Fisher's two-sided exact test rejects at ``alpha`` with ``n`` runs per arm
    when the arms' true rates are ``p1`` and ``p2``."""
    p1, p2 = _check_rate("p1", p1), _check_rate("p2", p2)
    if n < 1:
        raise ConfigError(f"n={n} runs per arm; expected at least 1")
    return float(_outcome_probabilities(p1, p2, n)[fisher_p_grid(n, n) < alpha].sum())


def _outcome_probabilities(p1: float, p2: float, n: int) -> np.ndarray:
    """``[k1, k2]``: the probability that two arms of ``n`` runs at rates ``p1``, ``p2`` have
    ``k1`` and ``k2`` events."""
    k = np.arange(n + 1)
    return np.outer(stats.binom.pmf(k, n, p1), stats.binom.pmf(k, n, p2))


def seeds_for_power(
    p1: float, p2: float, *, power: float = 0.9, alpha: float = 0.05, max_n: int = 200
) -> int:
    """The smallest number of runs per arm whose exact power reaches ``power``.

    Exact power is not monotone in ``n`` (the test's discreteness makes it saw-tooth), so this is
    the first ``n`` that reaches it, found by walking up from 2."""
    _check_rate("power", power)
    for n in range(2, max_n + 1):
        if fisher_power(p1, p2, n, alpha=alpha) >= power:
            return n
    raise ConfigError(f"power {power} for rates {p1} vs {p2} needs more than {max_n} runs per arm")


def equivalence_power(p0: float, p1: float, n: int, *, margin: float, alpha: float = 0.05) -> float:
    """Exact power of the equivalence design: the probability that the TOST of the table
    (:func:`experiments.report.statistics.equivalence.score_pvalues`: Miettinen-Nurminen score,
    the arm's
    rate minus the baseline's within ±margin) rejects at ``alpha``, summed over every outcome
    ``(k1, k0)`` of two arms of ``n`` runs at true rates ``p1`` (arm) and ``p0`` (baseline).

    Raises:
      ConfigError: a rate outside [0, 1], a margin outside (0, 1), ``n`` < 2.
    """
    from experiments.report.statistics import score_pvalues

    p0, p1 = _check_rate("p0", p0), _check_rate("p1", p1)
    if not 0.0 < margin < 1.0:
        raise ConfigError(f"margin={margin} is not a risk difference; expected a number in (0, 1)")
    if n < 2:
        raise ConfigError(f"n={n} runs per arm; expected at least 2")
    k1, k0 = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    rejects = score_pvalues(k1, n, k0, n, margin=margin) < alpha
    return float(_outcome_probabilities(p1, p0, n)[rejects].sum())


def seeds_for_equivalence(
    p0: float,
    p1: float,
    *,
    margin: float,
    power: float = 0.8,
    alpha: float = 0.05,
    max_n: int = 400,
    strata: int = 1,
) -> int:
    """The smallest runs per arm (per stratum, with ``strata`` > 1) whose exact equivalence power
    reaches ``power`` (the first such n walking up from 2 runs per arm in all: exact power is
    saw-toothed in n). With S strata the test is the one on the strata's summed counts
    (``gradlab pool --margin``): S x n runs per arm at rates equal across the strata.

    Raises:
      ConfigError: not reached by ``max_n`` runs per arm (per stratum) (e.g. true rates as far
        apart as the margin).
    """
    _check_rate("power", power)
    for n in range(-(-2 // strata), max_n + 1):
        if equivalence_power(p0, p1, strata * n, margin=margin, alpha=alpha) >= power:
            return n
    per = " per stratum" if strata > 1 else ""
    raise ConfigError(
        f"equivalence power {power} within ±{margin} at rates {p0} vs {p1} needs more than "
        f"{max_n} runs per arm{per}"
    )


def _stratum_terms(n: int) -> dict[str, np.ndarray]:
    """Per outcome ``(k1, k2)`` of one stratum (arm k1/n, baseline k2/n), flattened: the arm's
    events minus their null expectation given the margins, their hypergeometric variance (both
    exactly 0 where the stratum is not informative, so they add nothing to the CMH sums), whether
    the stratum is informative (some run on each side of the event), and Fisher's p."""
    k1, k2 = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    events, total = (k1 + k2).astype(float), 2.0 * n
    variance = n * n * events * (total - events) / (total * total * (total - 1))
    return {
        "diff": (k1 - n * events / total).ravel(),
        "var": variance.ravel(),
        "informative": ((events > 0) & (events < total)).ravel(),
        "fisher": fisher_p_grid(n, n).ravel(),
    }


def pooled_power(rates: Sequence[tuple[float, float]], n: int, *, alpha: float = 0.05) -> float:
    """Probability that the pooled test of ``gradlab pool`` rejects at ``alpha``.

    Args:
      rates: per stratum, the true event rates ``(arm, baseline)``; a stratum whose rates are
        both 0 or both 1 never varies and adds nothing, as in the pooled table.
      n: runs per arm in every stratum.
      alpha: the test's level.

    The test: the CMH chi-square without continuity correction, ``(sum of (events - E))^2 /
    (sum of V)`` over the informative strata (E, V: the arm's events' hypergeometric mean and
    variance given the stratum's margins), against chi-square with 1 degree of freedom; with one
    informative stratum, that stratum's two-sided Fisher p; with none, no rejection.

    Raises:
      ConfigError: a rate outside [0, 1], ``n`` < 1, no strata, or more joint outcomes than
        it enumerates (``(n + 1)^(2S)`` above 20 million).
    """
    if n < 1:
        raise ConfigError(f"n={n} runs per arm; expected at least 1")
    if not rates:
        raise ConfigError("pooled power needs at least one stratum's rates")
    probs = []
    for i, (arm, base) in enumerate(rates):
        arm, base = (
            _check_rate(f"stratum {i} arm rate", arm),
            _check_rate(f"stratum {i} baseline rate", base),
        )
        probs.append(_outcome_probabilities(arm, base, n).ravel())
    if (n + 1) ** (2 * len(rates)) > _MAX_OUTCOMES:
        most = int(math.log(_MAX_OUTCOMES) // (2 * math.log(n + 1)))
        raise ConfigError(
            f"strata={len(rates)} with {n} runs per arm: {(n + 1) ** (2 * len(rates)):,} joint "
            f"outcomes, more than the exact power enumerates ({_MAX_OUTCOMES:,}); at most "
            f"{most} strata at {n} runs per arm"
        )
    terms = _stratum_terms(n)
    inf = terms["informative"]
    prob, diff, var = np.ones(1), np.zeros(1), np.zeros(1)
    count, fisher = np.zeros(1, dtype=int), np.ones(1)
    for p in probs:  # the joint outcomes, one stratum at a time (an outer product, flattened)
        prob = (prob[:, None] * p[None, :]).ravel()
        diff = (diff[:, None] + terms["diff"][None, :]).ravel()
        var = (var[:, None] + terms["var"][None, :]).ravel()
        # Fisher's p of the one informative stratum, kept while it is the only one
        fisher = np.where(inf[None, :], terms["fisher"][None, :], fisher[:, None]).ravel()
        count = (count[:, None] + inf[None, :]).ravel()
    with np.errstate(divide="ignore", invalid="ignore"):
        cmh = stats.chi2.sf(diff * diff / var, df=1)
    pvalue = np.where(count == 1, fisher, np.where(count > 1, cmh, 1.0))
    return float(prob[pvalue < alpha].sum())
