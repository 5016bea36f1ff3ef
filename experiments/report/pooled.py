"""One rate endpoint across several results folders (tasks, regimes, optimizers): a table with a
column group per folder, and each arm's contrast with the baseline pooled over the folders,
stratified by folder.

The pooled test is the Cochran-Mantel-Haenszel test of a common odds ratio of 1 (no continuity
correction), with the Mantel-Haenszel pooled odds ratio and its Robins-Breslow-Greenland 95% CI,
and the Breslow-Day test of equal odds ratios across the strata (a small p: the effect differs
between folders, and a pooled figure hides it). All from statsmodels' ``StratifiedTable``; a
stratum whose 2x2 table has an empty row contributes nothing to the test and is named. Every run
of the design counts, as in :mod:`experiments.report.tables`: a run whose endpoint is undefined
(crashed, timed out, unfinished) is left out and counted apart.

Each stratum's 2x2 table is ``[[arm events, arm non-events], [baseline events, baseline
non-events]]``, so an odds ratio below 1 means fewer events (failures) in the arm.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.errors import ConfigError

__all__ = ["PooledContrast", "Stratum", "pooled_contrast", "pooled_table", "strata_counts"]


@dataclasses.dataclass(frozen=True)
class Stratum:
    """One folder's counts for one arm against the baseline.

    Attributes:
      arm_events, arm_n: the arm's runs with the event, and its runs with a defined endpoint.
      base_events, base_n: the same for the baseline.
    """

    arm_events: int
    arm_n: int
    base_events: int
    base_n: int

    @property
    def table(self) -> np.ndarray:
        """``[[arm events, arm non-events], [baseline events, baseline non-events]]``."""
        return np.array(
            [
                [self.arm_events, self.arm_n - self.arm_events],
                [self.base_events, self.base_n - self.base_events],
            ],
            dtype=float,
        )

    @property
    def informative(self) -> bool:
        """Both rows non-empty and some run on each side of the event (else the stratum adds
        nothing to the CMH statistic)."""
        events = self.arm_events + self.base_events
        total = self.arm_n + self.base_n
        return self.arm_n > 0 and self.base_n > 0 and 0 < events < total


@dataclasses.dataclass(frozen=True)
class PooledContrast:
    """An arm against the baseline over several strata.

    Attributes:
      strata: the counts by stratum label.
      statistic: the CMH chi-square (1 degree of freedom), NaN when no stratum is informative.
      pvalue: its two-sided p (asymptotic); with one informative stratum, Fisher's exact p of
        that stratum instead (as ``gradlab table`` tests it).
      odds_ratio: the Mantel-Haenszel pooled odds ratio (arm vs baseline).
      odds_ratio_ci: its 95% CI (Robins-Breslow-Greenland).
      homogeneity_p: the Breslow-Day test of equal odds ratios across the strata, with Tarone's
        adjustment (NaN with fewer than two informative strata).
      left_out: the labels of strata that contributed nothing (an empty arm or no variation).
    """

    strata: Mapping[str, Stratum]
    statistic: float
    pvalue: float
    odds_ratio: float
    odds_ratio_ci: tuple[float, float]
    homogeneity_p: float
    left_out: tuple[str, ...]


def pooled_contrast(strata: Mapping[str, Stratum]) -> PooledContrast:
    """The CMH test, the MH odds ratio and the Breslow-Day test over ``strata``.

    Raises:
      ConfigError: no strata.
    """
    from statsmodels.stats.contingency_tables import StratifiedTable

    if not strata:
        raise ConfigError("a pooled contrast needs at least one folder with both arms")
    used = {label: s for label, s in strata.items() if s.informative}
    left_out = tuple(label for label in strata if label not in used)
    nan = float("nan")
    if not used:
        return PooledContrast(dict(strata), nan, nan, nan, (nan, nan), nan, left_out)
    tables = np.stack([s.table for s in used.values()], axis=2)  # [2, 2, k]
    stratified = StratifiedTable(tables)
    test = stratified.test_null_odds(correction=False)
    statistic, pvalue = float(test.statistic), float(test.pvalue)
    if len(used) == 1:  # one stratum: the exact test gradlab table uses, not the chi-square
        from scipy.stats import fisher_exact

        pvalue = float(fisher_exact(next(iter(used.values())).table).pvalue)
    # A zero cell makes some of these undefined (statsmodels divides by it): NaN, printed as a
    # dash, without numpy's warnings on the terminal.
    with np.errstate(divide="ignore", invalid="ignore"):
        odds = float(stratified.oddsratio_pooled)
        low, high = (float(v) for v in stratified.oddsratio_pooled_confint())
        homogeneity = nan
        if len(used) > 1:
            homogeneity = float(stratified.test_equal_odds(adjust=True).pvalue)
    return PooledContrast(
        strata=dict(strata),
        statistic=statistic,
        pvalue=pvalue,
        odds_ratio=odds,
        odds_ratio_ci=(low, high),
        homogeneity_p=homogeneity,
        left_out=left_out,
    )


def strata_counts(
    frames: Mapping[str, pd.DataFrame],
    *,
    endpoint: str,
    arm: str,
    baseline: str,
    key: str = "variant",
) -> dict[str, Stratum]:
    """Each folder's counts of ``endpoint`` (a 0/1 column) for ``arm`` and ``baseline``.

    Args:
      frames: the runs of the design by stratum label (``Results.averaged`` of each folder).
      endpoint: the rate column (``failed``, ``unstable``, ...).
      arm, baseline: values of ``key``.
      key: the compared column.

    A folder without the arm or the baseline is left out of the result.
    """
    out = {}
    for label, runs in frames.items():
        (arm_k, arm_n), (base_k, base_n) = (_count(runs, key, v, endpoint) for v in (arm, baseline))
        if arm_n and base_n:
            out[label] = Stratum(arm_k, arm_n, base_k, base_n)
    return out


def _count(runs: pd.DataFrame, key: str, value: str, endpoint: str) -> tuple[int, int]:
    """``(events, runs with a defined endpoint)`` of the runs whose ``key`` is ``value``."""
    x = pd.to_numeric(runs.loc[runs[key] == value, endpoint], errors="coerce").dropna()
    return int((x == 1).sum()), len(x)


def arms_in(frames: Mapping[str, pd.DataFrame], key: str = "variant") -> list[str]:
    """Every value of ``key`` in any folder, in first-seen order."""
    seen: dict[str, None] = {}
    for runs in frames.values():
        for value in runs[key]:
            seen.setdefault(str(value), None)
    return list(seen)


def check_key(frames: Mapping[str, pd.DataFrame], key: str) -> None:
    """Each folder must have the compared key (``variant``) as a column."""
    for label, runs in frames.items():
        if key not in runs.columns:
            raise ConfigError(
                f"folder {label!r} does not vary {key!r}; a pooled table compares arms of {key!r}"
            )


def pooled_table(
    folders: Sequence[str | Path],
    *,
    endpoint: str = "failed",
    baseline: str = "none",
    alpha: float = 0.05,
    key: str = "variant",
    primary: str | None = None,
) -> tuple[str, str]:
    """The Markdown table and its caption: a row per arm, per folder its ``k/n``, then each arm's
    contrast with ``baseline`` pooled over the folders (MH odds ratio [95% CI], CMH p Holm-adjusted
    over the arms, Breslow-Day p). Bold: the pooled p_adj < alpha, and nothing else.

    ``primary``: the arm whose pooled contrast was declared before the runs (a study's pooled
    test): tested alone (m = 1, its p unadjusted) and marked ``*``; Holm over the other arms.

    Raises:
      ConfigError: fewer than two folders, an endpoint that is not a rate, a folder without the
        compared key or without the baseline, a primary arm that no folder has.
    """
    from experiments.report.contrasts import adjust
    from experiments.report.markup import markdown_table
    from experiments.report.render import format_number, format_p
    from experiments.report.results import load_results
    from experiments.report.tables import METRICS, check_alpha, status_note

    rates = [name for name, metric in METRICS.items() if metric.rate]

    alpha = check_alpha(alpha)
    if len(folders) < 2:
        raise ConfigError("a pooled table needs at least two results folders")
    if endpoint not in rates:
        from experiments.errors import unknown_choice

        raise unknown_choice("endpoint", endpoint, rates)
    frames, excluded, seen = {}, {}, set()
    for folder in folders:
        resolved = Path(folder).resolve()
        if resolved in seen:
            raise ConfigError(f"folder '{folder}' is given twice; each folder is one stratum")
        seen.add(resolved)
        results = load_results(folder)
        label = _label(results, frames)
        frames[label] = results.averaged
        note = status_note(results.runs["status"])
        if note:
            excluded[label] = note
    check_key(frames, key)
    for label, runs in frames.items():
        if not (runs[key] == baseline).any():
            raise ConfigError(f"folder {label!r} has no run of the baseline {key}={baseline}")
    arms = [a for a in arms_in(frames, key) if a != baseline]
    if primary is not None and primary not in arms:
        from experiments.errors import unknown_choice

        raise unknown_choice("primary arm", primary, arms)
    contrasts = [
        pooled_contrast(strata_counts(frames, endpoint=endpoint, arm=a, baseline=baseline, key=key))
        for a in arms
    ]
    families = ["primary" if a == primary else "all" for a in arms]
    adjusted, sizes = adjust([c.pvalue for c in contrasts], families)
    header = [key, *frames, "pooled OR [95% CI]", "CMH p_adj", "Breslow-Day p"]
    rows, left_out = [], []
    for name in [baseline, *arms]:
        counts = [_count(runs, key, name, endpoint) for runs in frames.values()]
        cells = [f"{k}/{n}" if n else "—" for k, n in counts]
        if name == baseline:
            rows.append([name, *cells, "base", "base", "base"])
            continue
        i = arms.index(name)
        c, p_adj = contrasts[i], adjusted[i]
        bold = bool(np.isfinite(p_adj) and p_adj < alpha)
        odds = (
            f"{_ratio(c.odds_ratio, format_number)} [{_ratio(c.odds_ratio_ci[0], format_number)}, "
            f"{_ratio(c.odds_ratio_ci[1], format_number)}]"
        )
        left_out += [f"{name} in {label}" for label in c.left_out]
        rows.append(
            [
                f"**{name}**" if bold else name,
                *cells,
                odds,
                format_p(p_adj, alpha=alpha) + ("*" if name == primary else ""),
                format_p(c.homogeneity_p),
            ]
        )
    table = markdown_table(header, rows, align=["left"] + ["right"] * (len(header) - 1))
    others = [size for size, family in zip(sizes, families, strict=True) if family == "all"]
    m = int(max(others)) if others else 0
    notes = ""
    if left_out:
        notes += f" Adding nothing (all events or none in both arms): {', '.join(left_out)}."
    if excluded:
        listed = "; ".join(f"{label}: {note}" for label, note in excluded.items())
        notes += f" Not runs of the design, left out of k/n: {listed}."
    declared = "" if primary is None else f" other than {primary}"
    arms_word = "arm" if m == 1 else "arms"
    status = (
        "Exploratory unless a study declared this pooled test."
        if primary is None
        else f"*: {key}={primary} on {endpoint}, the pooled contrast declared before the runs, "
        "tested alone (m = 1); every other row is exploratory."
    )
    caption = (
        f"{endpoint}: k of n runs per folder, every completed or diverged run counted. Pooled over "
        f"the {len(frames)} folders, stratified by folder: each {key} against {key}={baseline}; "
        "Mantel-Haenszel odds ratio (below 1: fewer events than the baseline) with its "
        "Robins-Breslow-Greenland 95% CI; Cochran-Mantel-Haenszel test (asymptotic, no "
        "continuity correction; a variant with one informative folder: Fisher's exact test of "
        f"that folder, as gradlab table tests it), Holm-adjusted over the {m} {arms_word}"
        f"{declared}; Breslow-Day test of equal odds ratios across the folders with Tarone's "
        "adjustment (a small p: the effect differs between them). A folder where both arms are "
        f"all events or all non-events adds nothing to the test.{notes} {status} Bold: CMH "
        f"p_adj < alpha = {alpha:g}, and nothing else."
    )
    return table, caption


def _ratio(value: float, fmt) -> str:
    """An odds ratio or its bound: ``∞`` for an infinite one, ``fmt`` otherwise."""
    return "∞" if value == float("inf") else fmt(value)


def _label(results, seen) -> str:
    """The folder's label: its name (``study_catch_stress``), made unique."""
    label = results.root.name
    n = 2
    while label in seen:
        label, n = f"{results.root.name} ({n})", n + 1
    return label
