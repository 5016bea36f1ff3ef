"""One endpoint across tasks: a row per variant, a column group per stratum (a task, or any
results folder and the settings it varies), and each variant's contrast with the baseline pooled
over the strata (``gradlab pool``). The endpoint is a rate (``failed``: k/n, Fisher, CMH) or a
value (``final_return``: the mean, Mann-Whitney U, van Elteren's stratified rank-sum test).

A stratum is one folder, or one setting of a folder whose runs vary a key besides the variant
(``regime=stress`` of a main-job folder): arms are compared only within it. Its columns are what
``gradlab table FOLDER -m ENDPOINT`` prints there, computed by the same function
(:func:`~experiments.report.table.summarize.summarize`): ``k/n`` (a value: the mean over runs,
every run
counted as the table counts it) and the Holm-adjusted p of the table's test against the baseline
within the stratum, a study's registered primary tested alone and marked ``*``. The pooled
columns come from :func:`~experiments.report.statistics.pooled_rates.pooled_contrast` (a rate:
Cochran-Mantel-Haenszel, Mantel-Haenszel odds ratio, Breslow-Day) or
:func:`~experiments.report.statistics.pooled_ranks.van_elteren` (a value: van Elteren's test, the
pooled
``P(arm > baseline)``), Holm over the variants, or the one declared pooled contrast
(``primary``) tested alone.
:mod:`~experiments.report.pool.render` writes it as Markdown, LaTeX, CSV or JSON.

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

The table is typed (:mod:`~experiments.report.pool.table`); the pooled contrasts are
:mod:`~experiments.report.pool.pooled`'s. What a study folder declares confirmatory comes in as
a :class:`~experiments.report.pool.table.Registration` per folder (the command line reads the
study's record): the report never reads a protocol.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.base.errors import ConfigError, unknown_choice
from experiments.report.pool.pooled import check_margin, pool_arms
from experiments.report.pool.table import Across, Cell, Column, Registration
from experiments.report.runs.counting import counting_notes
from experiments.report.runs.results import Results, drop_pooled_duplicates, load_results
from experiments.report.table.design import check_alpha, design_runs, status_note
from experiments.report.table.metrics import METRICS
from experiments.report.table.summarize import Table, summarize

__all__ = ["across_table"]


@dataclasses.dataclass
class _Strata:
    """What the folders give, stratum by stratum, as :func:`across_table` reads them."""

    columns: list[Column] = dataclasses.field(default_factory=list)
    cells: dict[tuple[str, str], Cell] = dataclasses.field(default_factory=dict)
    values: dict[tuple[str, str], np.ndarray] = dataclasses.field(default_factory=dict)
    excluded: dict[str, str] = dataclasses.field(default_factory=dict)
    declared: dict[str, str] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)
    settings: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class _Ask:
    """What the pooled table is asked: the endpoint, the compared key and its baseline."""

    endpoint: str
    key: str
    baseline: str
    alpha: float
    by_name: bool
    rate: bool


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
    registrations: Sequence[Registration] | None = None,
) -> Across:
    """The cross-stratum table of ``endpoint`` (a rate or a value) over ``folders``.

    Each run counts once over all the folders: a run in two folders (a folder and a renamed copy
    of it) is an error, or with ``keep_duplicates="first"`` counted in the first folder given and
    listed with the other's excluded runs (:mod:`experiments.report.runs.counting`).

    Args:
      registrations: per folder, in order, what its study declared (None: no folder is a
        study's; the command line reads each folder's record).

    Raises:
      ConfigError: fewer than two strata, an endpoint that is neither a rate nor a value (steps
        to threshold, censored, has no pooled test here), a folder given twice,
        without the compared key or without the baseline, a stratum holding several tasks, no
        variant besides the baseline, a primary arm that no folder has; with ``by_name``, a
        stratum holding two settings of one variant, or a baseline with parameters; a run in
        two folders (without ``keep_duplicates``).
    """
    alpha = check_alpha(alpha)
    if margin is not None:
        margin = check_margin(margin, endpoint, METRICS)
    if by_name and " (" in baseline:
        raise _baseline_with_parameters(baseline)
    choices = [name for name, metric in METRICS.items() if metric.kind in ("rate", "value")]
    if endpoint not in choices:
        raise unknown_choice("endpoint", endpoint, choices)
    ask = _Ask(endpoint, key, baseline, alpha, by_name, METRICS[endpoint].rate)
    loaded = _load(folders, keep_duplicates)
    if registrations is None:
        registrations = [Registration()] * len(loaded)
    by_task = _task_labels([r for _, r in loaded])
    found, labels = _Strata(), set()
    for (folder, results), registered in zip(loaded, registrations, strict=True):
        name = by_task.get(id(results)) or _unique(results.root.name, labels)
        labels.add(name)
        _check_baseline(results, name, loaded, ask)
        _add_folder(found, folder, name, results, registered, ask)
    arms = _arms(found, ask, primary)
    if primary is not None:
        found.notes.extend(_primary_mismatch(primary, endpoint, registrations))
    settings = {  # in the strata's order, "its defaults" where the arm has no parameters
        name: {s.label: where.get(s.label, "its defaults")
               for s in found.columns if (s.label, name) in found.cells}
        for name, where in found.settings.items()
    }  # fmt: skip
    pooled = pool_arms(found.cells, found.values, found.columns, arms, baseline=baseline,
                       primary=primary, alpha=alpha, margin=margin, rate=ask.rate)  # fmt: skip
    return Across(
        endpoint=endpoint,
        key=key,
        baseline=baseline,
        alpha=alpha,
        primary=primary,
        strata=tuple(found.columns),
        variants=(baseline, *arms),
        cells=found.cells,
        pooled=pooled,
        excluded=found.excluded,
        declared=found.declared,
        notes=tuple(found.notes),
        by_name=by_name,
        settings=settings,
    )


def _load(folders: Sequence[str | Path], keep_duplicates: str | None) -> list[tuple[Path, Results]]:
    """Each folder's runs, each run counted once over all of them."""
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
    return [(folder, r) for (folder, _), r in zip(loaded, once, strict=True)]


def _check_baseline(
    results: Results, name: str, loaded: list[tuple[Path, Results]], ask: _Ask
) -> None:
    """The folder varies the compared key and has a run of the baseline; else one ConfigError."""
    key, baseline, runs = ask.key, ask.baseline, results.averaged
    if key not in results.runs.columns or key not in results.group_keys:
        raise ConfigError(
            f"folder {name!r} does not vary {key!r}; a pooled table compares arms of {key!r}"
        )
    if (runs[key] == baseline).any():
        return
    if ask.by_name and runs[key].astype(str).str.startswith(f"{baseline} (").any():
        raise _baseline_with_parameters(baseline, f" in folder {name!r}")
    lacking = [f"'{f}'" for f, r in loaded
               if key in r.runs and not (r.averaged[key] == baseline).any()]  # fmt: skip
    nor = f" (nor do {', '.join(lacking[1:])})" if len(lacking) > 1 else ""
    raise ConfigError(
        f"folder {lacking[0]} has no run of the baseline {key}={baseline}{nor}; {key} "
        f"there: {', '.join(sorted({str(v) for v in runs[key]}))}"
    )


def _add_folder(
    found: _Strata, folder: Path, name: str, results: Results, registered: Registration,
    ask: _Ask,
) -> None:  # fmt: skip
    """The folder's strata (its table of the endpoint, one stratum per setting it varies besides
    the compared key) into ``found``."""
    listed = counting_notes(results.runs, [ask.endpoint], results.duplicates)
    note = "; ".join(n for n in [status_note(results.runs["status"]), *listed] if n)
    if note:
        found.excluded[name] = note
    if registered.note:
        found.notes.append(registered.note)
    summary = summarize(
        results,
        metrics=[ask.endpoint],
        baseline=f"{ask.key}={ask.baseline}",  # as gradlab table and a study record take it
        alpha=ask.alpha,
        confirmatory=registered.confirmatory,
    )
    design = None if ask.rate else design_runs(results, [ask.endpoint])
    for stratum_label, rows in summary.rows.groupby("stratum_label", sort=False):
        label = name if not summary.strata_keys else f"{name}, {stratum_label}"
        members = _stratum_runs(results, summary, rows.iloc[0])
        tasks = sorted({str(t) for t in members["task"].dropna()})
        if len(tasks) > 1:
            raise ConfigError(
                f"stratum {label!r} holds runs of several tasks ({', '.join(tasks)}); a "
                "stratum is one task: give one folder per task"
            )
        task = tasks[0] if tasks else ""
        threshold = _threshold_words(members, ask.endpoint)
        found.columns.append(Column(label, str(folder), task, threshold))
        for _, row in rows.iterrows():
            _add_cell(found, label, row, design, registered, ask)


def _add_cell(
    found: _Strata, label: str, row: pd.Series, design: pd.DataFrame | None,
    registered: Registration, ask: _Ask,
) -> None:  # fmt: skip
    """One arm's cell of a stratum (with a value endpoint's runs) into ``found``."""
    key, endpoint = ask.key, ask.endpoint
    arm = _arm(str(row[key]), label, found.settings) if ask.by_name else str(row[key])
    if row["is_baseline"] and arm != str(row[key]):
        raise _baseline_with_parameters(str(row[key]))
    if (label, arm) in found.cells:
        raise ConfigError(
            f"stratum {label!r} holds two settings of {key} {arm!r}; matching arms "
            "by name needs one setting per stratum: give the folders without it"
        )
    found.cells[(label, arm)] = _cell(row, endpoint, ask.rate)
    if design is not None:
        runs_of_cell = design[design["group"] == row["group"]]
        found.values[(label, arm)] = runs_of_cell[endpoint].to_numpy(dtype=float)
    if row[f"{endpoint}_confirmatory"] and registered.declared is not None:
        found.declared[label] = registered.declared.study


def _arms(found: _Strata, ask: _Ask, primary: str | None) -> list[str]:
    """The variants besides the baseline, in the strata's order; the checks on them."""
    if len(found.columns) < 2:
        raise ConfigError(
            "a pooled table needs at least two strata: two or more results folders, or a "
            "folder whose runs vary a setting besides the variant"
        )
    order = list(dict.fromkeys(arm for _, arm in found.cells))
    arms = [a for a in order if a != ask.baseline]
    if not arms:
        raise ConfigError(
            f"no {ask.key} besides the baseline {ask.key}={ask.baseline} in any folder: nothing "
            "to compare"
        )
    if primary is not None and primary not in arms:
        raise unknown_choice("primary arm", primary, arms)
    return arms


def _stratum_runs(results: Results, summary: Table, row: pd.Series) -> pd.DataFrame:
    """The folder's runs of the stratum ``row`` belongs to (every status)."""
    runs = results.runs
    for k in summary.strata_keys:
        runs = runs[runs[k].astype(str) == str(row[k])]
    return runs


def _primary_mismatch(
    primary: str, endpoint: str, registrations: Sequence[Registration]
) -> list[str]:
    """A note for each study folder whose registered primary is not ``primary`` on
    ``endpoint``: the pooled ``*`` then marks a contrast those studies did not declare."""
    notes = []
    for registration in registrations:
        declared = registration.declared
        if declared is not None and (declared.arm, declared.endpoint) != (primary, endpoint):
            notes.append(
                f"note: --primary {primary} on {endpoint}, but study {declared.study} "
                f"registered {declared.arm} on {declared.endpoint}: the pooled * is your "
                "declaration, not that study's"
            )
    return notes


def _threshold_words(runs: pd.DataFrame, endpoint: str) -> str:
    """A stratum's threshold for the caption: ``475``, or none. ``failed_v1`` reads the threshold
    the runs recorded (none on MinAtar before 2026-11-27: failed = unstable); every other endpoint
    the declared one (:mod:`experiments.report.runs.endpoints`)."""
    column = "threshold_recorded" if endpoint == "failed_v1" else "threshold"
    values = sorted({float(v) for v in runs[column].dropna()})
    if not values:
        return "no threshold: failed = unstable" if endpoint == "failed_v1" else "no threshold"
    return ", ".join(f"{v:g}" for v in values)


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
