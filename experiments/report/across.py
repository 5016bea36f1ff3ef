"""One endpoint across tasks: a row per variant, a column group per stratum (a task, or any
results folder and the settings it varies), and each variant's contrast with the baseline pooled
over the strata (``gradlab pool``). The endpoint is a rate (``failed``: k/n, Fisher, CMH) or a
value (``final_return``: the mean, Mann-Whitney U, van Elteren's stratified rank-sum test).

A stratum is one folder, or one setting of a folder whose runs vary a key besides the variant
(``regime=stress`` of a main-job folder): arms are compared only within it. Its columns are what
``gradlab table FOLDER -m ENDPOINT`` prints there, computed by the same function
(:func:`~experiments.report.tables.summarize`): ``k/n`` (a value: the mean over runs, every run
counted as the table counts it) and the Holm-adjusted p of the table's test against the baseline
within the stratum, a study's registered primary tested alone and marked ``*``. The pooled
columns come from :func:`~experiments.report.pooled.pooled_contrast` (a rate:
Cochran-Mantel-Haenszel, Mantel-Haenszel odds ratio, Breslow-Day) or
:func:`~experiments.report.pooled_ranks.van_elteren` (a value: van Elteren's test, the pooled
``P(arm > baseline)``), Holm over the variants, or the one declared pooled contrast
(``primary``) tested alone.
:mod:`~experiments.report.across_render` writes it as Markdown, LaTeX, CSV or JSON.

A stratum is labelled by its task when every folder holds one task and no two share one
(``catch``, ``breakout``), else by its folder's name; a setting within a folder is added
(``catch, stress``; ``hidden_scale, stress``). A stratum is always one task: a folder whose runs
mix tasks without sweeping ``task`` is refused rather than lumped.

An arm is a variant with its own parameters (``clipnorm (clipnorm=113)``), so arms with other
settings in two strata are two rows. With ``by_name`` an arm is the variant's name alone: a
design whose setting is derived per task by one rule (Study 3's clip threshold, each task's
calibration runs' median gradient norm) pools as one row, and each stratum's setting is kept
(``Across.settings``; ``its defaults`` where the arm has none there) for the caption; a stratum
holding two settings of one variant, or a baseline with parameters, is refused.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.base.errors import ConfigError, unknown_choice
from experiments.report.pooled import PooledContrast, Stratum, pooled_contrast
from experiments.report.pooled_ranks import RankContrast, Sample, van_elteren

__all__ = ["Across", "Cell", "Column", "Pooled", "across_table"]


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
    from experiments.report.equivalence import rate_equivalence

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
        from experiments.report.tables import METRICS

        return METRICS[self.endpoint].rate


def _threshold_words(runs: pd.DataFrame, endpoint: str) -> str:
    """A stratum's threshold for the caption: ``475``, or none. ``failed_v1`` reads the threshold
    the runs recorded (none on MinAtar before 2026-11-27: failed = unstable); every other endpoint
    the declared one (:mod:`experiments.report.endpoints`)."""
    column = "threshold_recorded" if endpoint == "failed_v1" else "threshold"
    values = sorted({float(v) for v in runs[column].dropna()})
    if not values:
        return "no threshold: failed = unstable" if endpoint == "failed_v1" else "no threshold"
    return ", ".join(f"{v:g}" for v in values)


def _stratum_runs(results, summary: pd.DataFrame, row: pd.Series) -> pd.DataFrame:
    """The folder's runs of the stratum ``row`` belongs to (every status)."""
    runs = results.runs
    for k in summary.attrs["strata_keys"]:
        runs = runs[runs[k].astype(str) == str(row[k])]
    return runs


def across_table(
    folders: Sequence[str | Path],
    *,
    endpoint: str = "failed",
    baseline: str = "none",
    alpha: float = 0.05,
    key: str = "variant",
    primary: str | None = None,
    by_name: bool = False,
    keep_duplicates: str | None = None,
    margin: float | None = None,
) -> Across:
    """The cross-stratum table of ``endpoint`` (a rate or a value) over ``folders``.

    Each run counts once over all the folders: a run in two folders (a folder and a renamed copy
    of it) is an error, or with ``keep_duplicates="first"`` counted in the first folder given and
    listed with the other's excluded runs (:mod:`experiments.report.counting`).

    Raises:
      ConfigError: fewer than two strata, an endpoint that is neither a rate nor a value (steps
        to threshold, censored, has no pooled test here), a folder given twice,
        without the compared key or without the baseline, a stratum holding several tasks, no
        variant besides the baseline, a primary arm that no folder has; with ``by_name``, a
        stratum holding two settings of one variant, or a baseline with parameters; a run in
        two folders (without ``keep_duplicates``).
    """
    from experiments.protocols.study.analysis import registered_contrast
    from experiments.report.contrasts import adjust
    from experiments.report.counting import counting_notes, drop_pooled_duplicates
    from experiments.report.results import load_results
    from experiments.report.tables import (
        METRICS,
        check_alpha,
        design_runs,
        status_note,
        summarize,
    )

    alpha = check_alpha(alpha)
    if margin is not None:
        margin = _check_margin(margin, endpoint, METRICS)
    if by_name and " (" in baseline:
        raise _baseline_with_parameters(baseline)
    choices = [name for name, metric in METRICS.items() if metric.kind in ("rate", "value")]
    if endpoint not in choices:
        raise unknown_choice("endpoint", endpoint, choices)
    rate = METRICS[endpoint].rate
    if not folders:
        raise ConfigError("a pooled table needs at least two results folders")
    loaded, seen = [], set()
    for folder in folders:
        resolved = Path(folder).resolve()
        if resolved in seen:
            raise ConfigError(f"folder '{folder}' is given twice; each folder is one stratum")
        seen.add(resolved)
        loaded.append((Path(folder), load_results(folder, keep_duplicates=keep_duplicates)))
    once = drop_pooled_duplicates([r for _, r in loaded], keep=keep_duplicates)
    loaded = [(folder, r) for (folder, _), r in zip(loaded, once, strict=True)]
    by_task = _task_labels([r for _, r in loaded])
    compared = f"{key}={baseline}"  # the baseline as gradlab table and a study record take it
    strata, cells, excluded, declared, notes, labels = [], {}, {}, {}, [], set()
    settings: dict[str, dict[str, str]] = {}
    values: dict[tuple[str, str], np.ndarray] = {}  # a value endpoint's runs per cell
    for folder, results in loaded:
        name = by_task.get(id(results)) or _unique(results.root.name, labels)
        labels.add(name)
        runs = results.averaged
        if key not in results.runs.columns or key not in results.group_keys:
            raise ConfigError(
                f"folder {name!r} does not vary {key!r}; a pooled table compares arms of {key!r}"
            )
        if not (runs[key] == baseline).any():
            if by_name and runs[key].astype(str).str.startswith(f"{baseline} (").any():
                raise _baseline_with_parameters(baseline, f" in folder {name!r}")
            lacking = [f"'{f}'" for f, r in loaded
                       if key in r.runs and not (r.averaged[key] == baseline).any()]  # fmt: skip
            nor = f" (nor do {', '.join(lacking[1:])})" if len(lacking) > 1 else ""
            raise ConfigError(
                f"folder {lacking[0]} has no run of the baseline {key}={baseline}{nor}; {key} "
                f"there: {', '.join(sorted({str(v) for v in runs[key]}))}"
            )
        listed = counting_notes(results.runs, [endpoint], results.duplicates)
        note = "; ".join(n for n in [status_note(results.runs["status"]), *listed] if n)
        if note:
            excluded[name] = note
        confirm, study, sensitivity = registered_contrast(
            folder,
            [endpoint],
            analysis="independent",
            rate_test="fisher",
            alpha=alpha,
            baseline=compared,
        )
        if sensitivity:
            notes.append(sensitivity)
        summary = summarize(
            results, metrics=[endpoint], baseline=compared, alpha=alpha, confirmatory=confirm
        )
        design = None if rate else design_runs(results, [endpoint])
        for stratum_label, rows in summary.groupby("stratum_label", sort=False):
            label = name if not summary.attrs["strata_keys"] else f"{name}, {stratum_label}"
            members = _stratum_runs(results, summary, rows.iloc[0])
            tasks = sorted({str(t) for t in members["task"].dropna()})
            if len(tasks) > 1:
                raise ConfigError(
                    f"stratum {label!r} holds runs of several tasks ({', '.join(tasks)}); a "
                    "stratum is one task: give one folder per task"
                )
            task = tasks[0] if tasks else ""
            strata.append(Column(label, str(folder), task, _threshold_words(members, endpoint)))
            for _, row in rows.iterrows():
                arm = _arm(str(row[key]), label, settings) if by_name else str(row[key])
                if row["is_baseline"] and arm != str(row[key]):
                    raise _baseline_with_parameters(str(row[key]))
                if (label, arm) in cells:
                    raise ConfigError(
                        f"stratum {label!r} holds two settings of {key} {arm!r}; matching arms "
                        "by name needs one setting per stratum: give the folders without it"
                    )
                cells[(label, arm)] = _cell(row, endpoint, rate)
                if design is not None:
                    runs_of_cell = design[design["group"] == row["group"]]
                    values[(label, arm)] = runs_of_cell[endpoint].to_numpy(dtype=float)
                if row[f"{endpoint}_confirmatory"] and study is not None:
                    declared[label] = study.study
    if len(strata) < 2:
        raise ConfigError(
            "a pooled table needs at least two strata: two or more results folders, or a "
            "folder whose runs vary a setting besides the variant"
        )
    order = list(dict.fromkeys(arm for _, arm in cells))
    arms = [a for a in order if a != baseline]
    if not arms:
        raise ConfigError(
            f"no {key} besides the baseline {key}={baseline} in any folder: nothing to compare"
        )
    if primary is not None and primary not in arms:
        raise unknown_choice("primary arm", primary, arms)
    if primary is not None:
        notes.extend(_primary_mismatch(primary, endpoint, [folder for folder, _ in loaded]))
    settings = {  # in the strata's order, "its defaults" where the arm has no parameters
        name: {
            s.label: where.get(s.label, "its defaults") for s in strata if (s.label, name) in cells
        }
        for name, where in settings.items()
    }
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
    pooled = {
        arm: Pooled(
            c, float(p), int(m), arm == primary, bool(np.isfinite(p) and p < alpha), float(e),
            _with_verdict(q, float(p), alpha),
        )
        for arm, c, p, m, e, q in zip(
            arms, contrasts, adjusted, sizes, exact, equivalences, strict=True
        )
    }  # fmt: skip
    return Across(
        endpoint=endpoint,
        key=key,
        baseline=baseline,
        alpha=alpha,
        primary=primary,
        strata=tuple(strata),
        variants=(baseline, *arms),
        cells=cells,
        pooled=pooled,
        excluded=excluded,
        declared=declared,
        notes=tuple(notes),
        by_name=by_name,
        settings=settings,
    )


def _check_margin(margin: object, endpoint: str, metrics) -> float:
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
    from experiments.report.contrasts import adjust

    raw = [pooled_equivalence(_paired(cells, strata, arm, baseline, _counts), margin=margin,
                              alpha=alpha) for arm in arms]  # fmt: skip
    adjusted, _ = adjust([e.p for _, e in raw], families)
    return [
        PooledEquivalence(k1, n1, k0, n0, (k1 / n1 - k0 / n0) if n1 and n0 else math.nan,
                          e.low, e.high, e.p, float(q), margin, "")
        for ((k1, n1, k0, n0), e), q in zip(raw, adjusted, strict=True)
    ]  # fmt: skip


def _with_verdict(q: PooledEquivalence | None, p_adjusted: float, alpha: float):
    from experiments.report.equivalence import verdict

    if q is None:
        return None
    words = verdict(q.p_adjusted, p_adjusted, alpha=alpha, margin=q.margin)
    return dataclasses.replace(q, verdict=words)


def _primary_mismatch(primary: str, endpoint: str, folders: Sequence[Path]) -> list[str]:
    """A note for each study folder whose registered primary is not ``primary`` on
    ``endpoint``: the pooled ``*`` then marks a contrast those studies did not declare."""
    from experiments.protocols.study.analysis import declared_analysis

    notes = []
    for folder in folders:
        declared = declared_analysis(folder)
        if declared is not None and (declared.arm, declared.endpoint) != (primary, endpoint):
            notes.append(
                f"note: --primary {primary} on {endpoint}, but study {declared.study} "
                f"registered {declared.arm} on {declared.endpoint}: the pooled * is your "
                "declaration, not that study's"
            )
    return notes


def _baseline_with_parameters(baseline: str, where: str = "") -> ConfigError:
    return ConfigError(
        f"baseline {baseline!r} has parameters{where}; matching arms by name needs a baseline "
        "without any: pool without --by-name"
    )


def _arm(label: str, stratum: str, settings: dict[str, dict[str, str]]) -> str:
    """A variant's name alone (``clipnorm (clipnorm=113)`` -> ``clipnorm``), its parameters
    recorded in ``settings[name][stratum]``."""
    name, _, shown = label.partition(" (")
    if shown:
        settings.setdefault(name, {})[stratum] = shown.removesuffix(")")
    return name


def _cell(row: pd.Series, endpoint: str, rate: bool) -> Cell:
    n = int(row[f"{endpoint}_n"])
    k = int(row[f"{endpoint}_k"]) if rate else None
    mean = {}
    if not rate:
        low, high = row[f"{endpoint}_ci_low"], row[f"{endpoint}_ci_high"]
        mean = {"value": float(row[endpoint]), "low": float(low), "high": float(high)}
        if f"{endpoint}_imputed" in row:
            mean["imputed"] = int(row[f"{endpoint}_imputed"])
    if row["is_baseline"]:
        return Cell(k, n, **mean)
    return Cell(
        k,
        n,
        p_adjusted=float(row[f"{endpoint}_p_adjusted"]),
        m=int(row[f"{endpoint}_m"]),
        confirmatory=bool(row[f"{endpoint}_confirmatory"]),
        bold=bool(row[f"{endpoint}_bold"]),
        **mean,
    )


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


def _task_labels(results: Sequence) -> dict[int, str]:
    """``id(results) -> task`` when every folder holds one task and no two share one; else {}."""
    tasks = []
    for r in results:
        names = {str(t) for t in r.runs["task"].dropna()}
        if len(names) != 1:
            return {}
        tasks.append(names.pop())
    if len(set(tasks)) < len(tasks):
        return {}
    return {id(r): t for r, t in zip(results, tasks, strict=True)}


def _unique(name: str, seen: set[str]) -> str:
    label, n = name, 2
    while label in seen:
        label, n = f"{name} ({n})", n + 1
    return label
