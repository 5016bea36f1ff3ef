"""Equivalence against a declared margin: two one-sided tests (TOST), and the verdict per contrast.

A contrast that is not significant says *not separated*, never *no effect*. Only a margin
declared before the data, ``±m`` around 0, and two one-sided tests that both reject say that the
difference (arm minus baseline) lies within it: H0: Δ <= -m or Δ >= +m against H1: -m < Δ < +m,
each side at level alpha; the TOST p is the larger of the two one-sided p-values. Equivalently,
the (1 - 2 alpha) confidence interval of Δ (90% at alpha 0.05) lies inside (-m, +m): the table
shows that interval, since it is what TOST compares with the margin.

* **Rates** (0/1 per run): Δ is the risk difference, tested with the Miettinen-Nurminen score
  test, the method statsmodels' ``tost_proportions_2indep(..., method="score")`` names: z =
  (Δ̂ - δ) / se, the variance at the restricted maximum-likelihood rates under Δ = δ = ±m, times
  N/(N-1). Chosen over ``wald`` and ``agresti-caffo`` because its exact size stays at or below
  alpha at the margin for rates near 0 (true rates 0 vs 0.2, n = 10: size 0 against 0.107 for
  both others, which call 0/10 vs 0/10 equivalent within ±0.2), and it is defined at 0/n and
  n/n, where Wald's variance is 0. It is computed here (:func:`score_pvalues`), not by statsmodels
  0.15, whose closed form for the restricted rates has the cubic's linear coefficient as ``(x0 δ -
  N - 2 x0) δ + C`` where Miettinen and Nurminen (1985) have ``(n0 δ - N - 2 x0) δ + C`` (reported
  upstream as statsmodels issue #10269, with its fix in pull request #10270, both open on
  2026-11-27): its "restricted" rates are then not the likelihood's maximum (5/10 vs 5/10 at δ =
  -0.3: 0.6 and 0.3 where the maximum is at 0.65 and 0.35; z 1.378 instead of 1.371), it leaves
  the feasible range at edges (1/40 vs 1/40 at δ = -0.2: a rate of -0.011) and is NaN where
  ``arccos`` gets a number outside [-1, 1]. Here: the corrected cubic; where its root is
  infeasible, the bound the (concave) log-likelihood's slope points to; else the maximum found
  numerically. The tests check the rates against the restricted likelihood maximised on a grid.
  The interval is the same score test inverted (Miettinen-Nurminen), so TOST p < alpha exactly
  when it lies inside (-m, +m).
* **Values** (e.g. final return): Δ is the difference of the means in the value's units,
  tested with statsmodels' ``ttost_ind(..., usevar="unequal")``: Welch's t, the two arms'
  variances not assumed equal; the interval is Welch's. Whatever ``--stat`` the table shows, the
  equivalence is about means.

The verdict (:func:`verdict`): ``equivalent within ±m`` when the TOST p (Holm-adjusted in the same
family as the difference test: a confirmatory contrast alone) is below alpha; otherwise
``different`` when the difference test's ``p_adj`` is below alpha, else ``not separated``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import optimize, stats

from experiments.base.errors import ConfigError

__all__ = [
    "RATE_METHOD",
    "Equivalence",
    "Margin",
    "equivalence_cells",
    "equivalence_sentences",
    "parse_margins",
    "rate_equivalence",
    "score_pvalues",
    "value_equivalence",
    "verdict",
    "with_verdicts",
]

RATE_METHOD = "score"
"""statsmodels' method for the TOST of two proportions: Miettinen-Nurminen score."""

_EDGE = 1e-6  # how close to ±1 the interval search goes


@dataclasses.dataclass(frozen=True)
class Margin:
    """A declared equivalence margin of one endpoint.

    Attributes:
      value: m > 0: equivalence means -m < Δ < +m (a risk difference for a rate, the value's
        units otherwise).
      kind: ``rate`` or ``value``.
      label: the endpoint as the table names it, e.g. ``failed``.
      source: who declared it: ``--margin`` or a study's record (its reason).
    """

    value: float
    kind: str
    label: str
    source: str = "--margin"


@dataclasses.dataclass(frozen=True)
class Equivalence:
    """TOST of one contrast (arm minus baseline).

    Attributes:
      p: the TOST p: the larger of the two one-sided p-values.
      p_lower: p of H0 Δ <= -m (against Δ > -m).
      p_upper: p of H0 Δ >= +m (against Δ < +m).
      low: the (1 - 2 alpha) interval's lower end.
      high: its upper end.
    """

    p: float
    p_lower: float
    p_upper: float
    low: float
    high: float


def _restricted(k1: np.ndarray, n1: int, k0: np.ndarray, n0: int, delta: float) -> np.ndarray:
    """The baseline's rate p0 maximising the binomial likelihood of both arms under
    p1 = p0 + delta, found numerically (bounded Brent) per cell: the fallback where the closed
    form is 0/0 (an estimate at the edge, e.g. 0/10 against 10/10)."""
    lo, hi = max(0.0, -delta), min(1.0, 1.0 - delta)
    a, b = np.broadcast_arrays(np.asarray(k1, dtype=float), np.asarray(k0, dtype=float))
    out = np.empty(a.shape)
    for index in np.ndindex(a.shape):
        x1, x0 = a[index], b[index]

        def minus_log_likelihood(p0: float, x1: float = x1, x0: float = x0) -> float:
            p1 = p0 + delta
            terms = (x1, p1), (n1 - x1, 1 - p1), (x0, p0), (n0 - x0, 1 - p0)
            return -sum(k * math.log(p) for k, p in terms if k > 0)

        eps = 1e-12
        best = optimize.minimize_scalar(
            minus_log_likelihood, bounds=(lo + eps, hi - eps), method="bounded",
            options={"xatol": 1e-12},
        )  # fmt: skip
        out[index] = best.x
    return out


def _slope(p0: float, k1, n1: int, k0, n0: int, delta: float) -> np.ndarray:
    """d/dp0 of the log-likelihood of both arms under p1 = p0 + delta (a count of 0 adds
    nothing, so the slope is finite at a bound where only empty counts meet 0 or 1)."""
    p1 = p0 + delta
    terms = (k1, p1), (n1 - k1, -(1 - p1)), (k0, p0), (n0 - k0, -(1 - p0))
    return sum(np.where(k > 0, k / np.where(k > 0, d, 1.0), 0.0) for k, d in terms)


def _feasible(prop0, k1, n1: int, k0, n0: int, delta: float) -> np.ndarray:
    """The restricted maximum-likelihood p0: the closed form's root where it lies in the
    feasible range ``[max(0, -delta), min(1, 1 - delta)]``; else (the log-likelihood is
    concave in p0, so its maximum is then at a bound) the bound its slope points to; a cell
    where neither holds (rounding) is maximised numerically."""
    lo, hi = max(0.0, -delta), min(1.0, 1.0 - delta)
    tol = 1e-9
    inside = np.isfinite(prop0) & (prop0 >= lo - tol) & (prop0 <= hi + tol)
    at_lo = _slope(lo + 1e-12, k1, n1, k0, n0, delta) <= 0
    at_hi = _slope(hi - 1e-12, k1, n1, k0, n0, delta) >= 0
    out = np.where(inside, prop0, np.where(at_lo, lo, np.where(at_hi, hi, np.nan)))
    missing = np.isnan(out)
    if missing.any():
        a, b = np.broadcast_arrays(k1, k0)
        out[missing] = _restricted(a[missing], n1, b[missing], n0, delta)
    return np.clip(out, lo, hi)


def _score_z(k1, n1, k0, n0, delta: float) -> np.ndarray:
    """Miettinen-Nurminen score statistic of H0: p1 - p0 = delta, elementwise.

    Miettinen and Nurminen's (1985) closed form for the restricted rates (statsmodels' code,
    with the cubic's linear coefficient corrected: module docstring) and their N/(N-1) variance
    correction; the argument of ``arccos`` clipped into [-1, 1]. ``k1, k0``: arrays of counts
    (any shape); ``n1, n0``: the arms' sizes."""
    k1, k0 = np.asarray(k1, dtype=float), np.asarray(k0, dtype=float)
    n, count = n1 + n0, k1 + k0
    with np.errstate(divide="ignore", invalid="ignore"):
        if delta == 0:
            prop0 = prop1 = count / n
        else:
            c3 = n
            c2 = (n1 + 2 * n0) * delta - n - count
            c1 = (n0 * delta - n - 2 * k0) * delta + count  # statsmodels: k0 * delta
            c0 = k0 * delta * (1 - delta)
            q = (c2 / (3 * c3)) ** 3 - c1 * c2 / (6 * c3**2) + c0 / (2 * c3)
            p = np.sign(q) * np.sqrt((c2 / (3 * c3)) ** 2 - c1 / (3 * c3))
            angle = (np.pi + np.arccos(np.clip(q / p**3, -1.0, 1.0))) / 3
            prop0 = 2 * p * np.cos(angle) - c2 / (3 * c3)
            prop0 = _feasible(prop0, k1, n1, k0, n0, delta)
            prop1 = prop0 + delta
        var = (prop1 * (1 - prop1) / n1 + prop0 * (1 - prop0) / n0) * n / (n - 1)
        diff = k1 / n1 - k0 / n0 - delta
        z = diff / np.sqrt(var)
    return np.where(diff == 0, 0.0, z)


def score_pvalues(k1, n1: int, k0, n0: int, *, margin: float) -> np.ndarray:
    """TOST p of every outcome, for the risk difference within ±margin (score method).

    The Miettinen-Nurminen score TOST (what statsmodels' ``tost_proportions_2indep(...,
    method="score")`` computes, with its cubic corrected: module docstring), vectorised over
    the counts.

    Args:
      k1: the arm's event counts, any shape.
      n1: the arm's runs.
      k0: the baseline's event counts, the same shape.
      n0: the baseline's runs.
      margin: m > 0.

    Returns:
      The TOST p per outcome, the shape of ``k1``.
    """
    lower = stats.norm.sf(_score_z(k1, n1, k0, n0, -margin))
    upper = stats.norm.cdf(_score_z(k1, n1, k0, n0, margin))
    return np.maximum(lower, upper)


def _score_interval(k1: int, n1: int, k0: int, n0: int, level: float) -> tuple[float, float]:
    """The score (Miettinen-Nurminen) interval of p1 - p0 at ``level``: the deltas that neither
    one-sided score test at (1 - level) / 2 rejects."""
    tail = (1 - level) / 2
    estimate = min(max(k1 / n1 - k0 / n0, -1 + _EDGE), 1 - _EDGE)

    def lower(delta: float) -> float:  # > 0 where H0 Δ <= delta is not rejected
        return float(stats.norm.sf(_score_z(k1, n1, k0, n0, delta))) - tail

    def upper(delta: float) -> float:
        return float(stats.norm.cdf(_score_z(k1, n1, k0, n0, delta))) - tail

    low = -1.0 if lower(-1 + _EDGE) >= 0 else optimize.brentq(lower, -1 + _EDGE, estimate)
    high = 1.0 if upper(1 - _EDGE) >= 0 else optimize.brentq(upper, estimate, 1 - _EDGE)
    return float(low), float(high)


def rate_equivalence(
    k1: int, n1: int, k0: int, n0: int, *, margin: float, alpha: float = 0.05
) -> Equivalence:
    """TOST of the risk difference k1/n1 - k0/n0 within ±margin (score method).

    Args:
      k1: the arm's events; n1: its runs.
      k0: the baseline's events; n0: its runs.
      margin: m > 0.
      alpha: each one-sided test's level; the interval is at 1 - 2 alpha.
    """
    if not n1 or not n0:
        return Equivalence(*(float("nan"),) * 5)
    lower = float(stats.norm.sf(_score_z(k1, n1, k0, n0, -margin)))
    upper = float(stats.norm.cdf(_score_z(k1, n1, k0, n0, margin)))
    p = float(score_pvalues(np.array(k1), n1, np.array(k0), n0, margin=margin))
    low, high = _score_interval(k1, n1, k0, n0, 1 - 2 * alpha)
    return Equivalence(p, lower, upper, low, high)


def value_equivalence(
    x: np.ndarray, y: np.ndarray, *, margin: float, alpha: float = 0.05
) -> Equivalence:
    """TOST of mean(x) - mean(y) within ±margin, Welch's t (statsmodels ``ttost_ind``).

    Args:
      x: ``[N_x]`` the arm's values (NaN left out).
      y: ``[N_y]`` the baseline's.
      margin: m > 0, in the values' units.
      alpha: each one-sided test's level; the interval is at 1 - 2 alpha.

    Returns:
      NaN everywhere when an arm has fewer than 2 values or both arms have no spread (Welch's
      standard error is then 0 and its degrees of freedom undefined).
    """
    from statsmodels.stats.weightstats import ttost_ind

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    nan = Equivalence(*(float("nan"),) * 5)
    if len(x) < 2 or len(y) < 2:
        return nan
    v1, v0 = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    if v1 + v0 == 0:
        return nan
    p, (_, p_lower, _), (_, p_upper, _) = ttost_ind(x, y, -margin, margin, usevar="unequal")
    df = (v1 + v0) ** 2 / (v1**2 / (len(x) - 1) + v0**2 / (len(y) - 1))
    half = stats.t.ppf(1 - alpha, df) * math.sqrt(v1 + v0)
    diff = x.mean() - y.mean()
    return Equivalence(float(p), float(p_lower), float(p_upper), diff - half, diff + half)


def equivalence_cells(
    name: str, arm: np.ndarray, base: np.ndarray, margin: Margin, *, alpha: float
) -> dict[str, float]:
    """The row's equivalence columns of one metric: ``_margin``, ``_tost_p``, ``_equiv_low``,
    ``_equiv_high`` (the 1 - 2 alpha interval of Δ).

    Args:
      name: the metric.
      arm: ``[N_x]`` the arm's per-run values (0/1 for a rate; NaN: left out).
      base: ``[N_y]`` the baseline's.
      margin: the metric's margin.
      alpha: the table's alpha.
    """
    if margin.kind == "rate":
        counts = []
        for x in (np.asarray(arm, dtype=float), np.asarray(base, dtype=float)):
            defined = x[np.isfinite(x)]
            counts += [int((defined >= 0.5).sum()), len(defined)]
        k1, n1, k0, n0 = counts
        got = rate_equivalence(k1, n1, k0, n0, margin=margin.value, alpha=alpha)
    else:
        got = value_equivalence(arm, base, margin=margin.value, alpha=alpha)
    return {f"{name}_margin": margin.value, f"{name}_tost_p": got.p,
            f"{name}_equiv_low": got.low, f"{name}_equiv_high": got.high}  # fmt: skip


def verdict(tost_p: float, p_adjusted: float, *, alpha: float, margin: float) -> str:
    """``equivalent within ±m`` (TOST p < alpha), else ``different`` (the difference test's
    p_adj < alpha), else ``not separated``; ``—`` where neither test has a p."""
    if math.isfinite(tost_p) and tost_p < alpha:
        return f"equivalent within ±{margin:g}"
    if math.isfinite(p_adjusted) and p_adjusted < alpha:
        return "different"
    if not math.isfinite(p_adjusted) and not math.isfinite(tost_p):
        return "—"
    return "not separated"


def with_verdicts(
    table: pd.DataFrame, margins: Mapping[str, Margin], *, alpha: float
) -> pd.DataFrame:
    """Adds ``_tost_p_adjusted`` (Holm, in the difference test's families: per stratum, a
    confirmatory contrast alone) and ``_verdict`` for every metric with a margin.

    Args:
      table: :func:`~experiments.report.table.summarize.summarize`'s rows, with ``_tost_p``,
        ``_p_adjusted``, ``_confirmatory`` and ``stratum`` columns.
      margins: metric -> its margin.
      alpha: the table's alpha.
    """
    from experiments.report.statistics.contrasts import adjust

    for name, margin in margins.items():
        if f"{name}_tost_p" not in table:
            for suffix in ("margin", "tost_p", "equiv_low", "equiv_high"):
                table[f"{name}_{suffix}"] = np.nan
        sure = table[f"{name}_confirmatory"].to_numpy(dtype=bool)
        families = [("confirmatory", i) if sure[i] else ("stratum", s)
                    for i, s in enumerate(table["stratum"])]  # fmt: skip
        adjusted, _ = adjust(table[f"{name}_tost_p"].to_numpy(dtype=float), families)
        table[f"{name}_tost_p_adjusted"] = adjusted
        table[f"{name}_verdict"] = [
            "base" if base else verdict(tp, p, alpha=alpha, margin=margin.value)
            for base, tp, p in zip(
                table["is_baseline"], adjusted, table[f"{name}_p_adjusted"], strict=True
            )
        ]
    return table


def parse_margins(
    texts: Iterable[str], kinds: Mapping[str, str], labels: Mapping[str, str]
) -> dict[str, Margin]:
    """``["failed=0.2", "final_return=0.1"]`` -> metric -> :class:`Margin`.

    Args:
      texts: ``ENDPOINT=VALUE`` items (``--margin``, repeated).
      kinds: the table's metrics -> ``rate`` | ``value`` | ``time``.
      labels: the table's metrics -> their labels.

    Raises:
      ConfigError: one line naming the bad item and the valid choices: no ``=`` or no value, a
        value that is not a finite number, zero or negative, a rate's margin of 1 or more, an
        endpoint not in the table (or steps to threshold, which has no difference), an endpoint
        given twice.
    """
    choices = [m for m, kind in kinds.items() if kind != "time"]
    valid = ", ".join(choices) or "(none: the table shows no rate or value endpoint)"
    out: dict[str, Margin] = {}
    for text in texts:
        name, sep, value = (s.strip() for s in text.partition("="))
        if not sep or not value:
            raise ConfigError(
                f"--margin {text!r} has no value; expected ENDPOINT=VALUE with ENDPOINT one "
                f"of: {valid} (e.g. failed=0.2)"
            )
        if name not in choices:
            raise ConfigError(
                f"--margin {text!r}: endpoint {name!r} is not a rate or value column of this "
                f"table; choose one of: {valid}"
            )
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        rate = kinds[name] == "rate"
        if not math.isfinite(number) or number <= 0 or (rate and number >= 1):
            expected = "a risk difference in (0, 1), e.g. 0.2" if rate else "a number > 0"
            raise ConfigError(f"--margin {text!r}: {value!r} is not valid; expected {expected}")
        if name in out:
            raise ConfigError(f"--margin for {name!r} is given twice")
        out[name] = Margin(number, kinds[name], labels[name])
    return out


def parse_pool_margin(text: str | None, endpoint: str | None) -> tuple[str | None, float | None]:
    """``gradlab pool --margin ENDPOINT=VALUE`` (the syntax of ``gradlab table --margin``) ->
    ``(the endpoint, the margin)``; ``(endpoint, None)`` without one.

    Args:
      text: the option's text, or None.
      endpoint: the pooled endpoint given with ``-e`` (None: not given; the margin's endpoint is
        then the pooled one).

    Raises:
      ConfigError: one line: a bare number (the old form, naming the new one), no value, a
        value that is not a finite number, or an endpoint other than ``-e``'s. The range is
        checked where the endpoint's kind is known (a rate's margin is in (0, 1)).
    """
    if text is None:
        return endpoint, None
    name, sep, value = (s.strip() for s in text.partition("="))
    if not sep:
        example = f"{endpoint or 'failed'}={text.strip()}"
        raise ConfigError(
            f"--margin {text!r}: give ENDPOINT=VALUE, as gradlab table takes it (e.g. "
            f"--margin {example})"
        )
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not name or not math.isfinite(number):
        raise ConfigError(
            f"--margin {text!r}: expected ENDPOINT=VALUE with VALUE a number (e.g. failed=0.1)"
        )
    if endpoint is not None and name != endpoint:
        raise ConfigError(
            f"--margin {text!r} is for {name!r}, but the pooled endpoint is {endpoint!r} (-e); "
            f"give --margin {endpoint}=VALUE"
        )
    return name, number


def equivalence_sentences(margins: Sequence[Margin], *, alpha: float) -> list[str]:
    """The caption's sentences on the margins and the method (none without a margin)."""
    if not margins:
        return []
    level = f"{round(100 * (1 - 2 * alpha))}%"
    parts = []
    for m in margins:
        what = "risk difference" if m.kind == "rate" else "difference of means, in its units"
        source = "given with --margin" if m.source == "--margin" else f"declared: {m.source}"
        parts.append(f"Equivalence margin for {m.label}: ±{m.value:g} ({what}; {source}).")
    methods = []
    if any(m.kind == "rate" for m in margins):
        methods.append("Miettinen–Nurminen score z for rates")
    if any(m.kind == "value" for m in margins):
        methods.append("Welch t for values (statsmodels ttost_ind, unequal variances)")
    parts.append(
        "Equivalence column: two one-sided tests (TOST) of H0 |Δ| ≥ margin, "
        + " and ".join(methods)
        + f"; p: the larger one-sided p, Holm-adjusted as p_adj; {level} CI of Δ (1 − 2α, "
        "per contrast), which lies inside ±margin when the unadjusted TOST p < α. Verdict: "
        f"equivalent within ±margin when the TOST p_adj < α = {alpha:g}; otherwise different when "
        "p_adj < α, else not separated (a null that does not rule out the margin)."
    )
    return parts
