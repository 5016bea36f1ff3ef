"""The notebook face's functions (:mod:`gradlab`); ``gradlab table`` and ``gradlab pool`` call
:func:`table` and :func:`pool` too, so a notebook and the command line give one table."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from experiments.base.errors import ConfigError

__all__ = ["curves", "pool", "runs", "table"]

_CURVE_KEYS = ("eval/return", "grad/global_norm", "loss/total")


def _say(note: Callable[[str], None] | None, line: str) -> None:
    if note is not None:
        note(line)


def _with_normalised(results: Any, folder: Path, shown: Sequence[str], note=None) -> Any:
    """The runs with ``normalised_return`` when shown (R_ref, R_rand from the folder's study
    record; refused where it declares none); a study across tasks' folder gets a note."""
    from experiments.protocols.study import declared_family, declared_normalisation
    from experiments.report.runs import add_normalised

    family = declared_family(folder)
    if family is not None:
        _say(note, f"note: study {family.study} spans {len(family.tasks)} tasks: its "
                   f"confirmatory family is pooled (gradlab pool {folder}); every contrast here "
                   "is exploratory")  # fmt: skip
    if "normalised_return" not in shown:
        return results
    norm = declared_normalisation(folder)
    if norm is None:
        raise ConfigError(
            f"normalised_return needs each task's R_ref and R_rand, declared in a study's "
            f"record; '{folder}' holds none"
        )
    return dataclasses.replace(results, runs=add_normalised(results.runs, norm))


def runs(folder: str | Path, *, keep_duplicates: str | None = None) -> pd.DataFrame:
    """One row per run of a results folder: its settings, seed, status, outcome class and every
    endpoint (0/1 rates, final return, reached the threshold and when), ``normalised_return``
    where the folder's study record declares each task's R_ref and R_rand, and the run's
    identity and times (``started_at``, ``ended_at``, ``code``, ``config_sha256``,
    ``record_sha256``; None for runs older than them) and ``cpu``, the CPU type that made it
    (its summary's ``versions.cpu``: a run replays to the digit only on its own CPU type).

    Raises:
      ConfigError: not a results folder (one line naming it).
    """
    from experiments.jobs import read_summary
    from experiments.protocols.study import declared_normalisation
    from experiments.report.runs import add_normalised, load_results

    folder = Path(folder)
    frame = load_results(folder, keep_duplicates=keep_duplicates).runs
    norm = declared_normalisation(folder)
    if norm is not None:
        frame = add_normalised(frame, norm)
    ident = []
    for path in frame["path"]:
        s = read_summary(path)
        ident.append({
            "started_at": s.started_at if s else None, "ended_at": s.ended_at if s else None,
            "code": s.code.tree_sha256 if s and s.code else None,
            "config_sha256": s.config_sha256 if s else None,
            "record_sha256": s.record_sha256 if s else None,
            "cpu": s.versions.get("cpu") if s else None,
        })  # fmt: skip
    return pd.concat([frame.reset_index(drop=True), pd.DataFrame(ident)], axis=1)


def curves(folder: str | Path, metrics: Sequence[str] = ("eval/return",)) -> pd.DataFrame:
    """The runs' curves in long format: ``job``, ``variant``, ``task``, ``seed``, ``step``,
    ``metric``, ``value`` (every evaluation; training metrics at the committed curves' sampled
    steps), for ``metrics`` among ``eval/return``, ``grad/global_norm``, ``loss/total``.

    Raises:
      ConfigError: an unknown metric, or not a results folder.
    """
    from experiments.jobs import read_curves
    from experiments.report.runs import load_results

    unknown = [m for m in metrics if m not in _CURVE_KEYS]
    if unknown:
        raise ConfigError(
            f"unknown curve metric {unknown[0]!r}; choose from {', '.join(_CURVE_KEYS)}"
        )
    frames = []
    for run in load_results(Path(folder)).runs.itertuples(index=False):
        frame = read_curves(run.path)
        if frame.empty:
            continue
        kept = [m for m in metrics if m in frame]
        long = frame.melt(id_vars=["step"], value_vars=kept, var_name="metric")
        long = long.dropna(subset=["value"])
        long.insert(0, "job", run.job)
        long.insert(1, "variant", getattr(run, "variant", None))
        long.insert(2, "task", run.task)
        long.insert(3, "seed", run.seed)
        frames.append(long)
    if not frames:
        return pd.DataFrame(columns=["job", "variant", "task", "seed", "step", "metric", "value"])
    return pd.concat(frames, ignore_index=True)


def table(
    folder: str | Path,
    *,
    metrics: Sequence[str] | None = None,
    stat: str = "mean",
    baseline: str | None = None,
    analysis: str = "independent",
    rate_test: str = "fisher",
    alpha: float = 0.05,
    diverged_return: float | None = None,
    margins: Sequence[str] = (),
    keep_duplicates: str | None = None,
    note: Callable[[str], None] | None = None,
) -> Any:
    """The table ``gradlab table FOLDER`` prints, typed
    (:class:`experiments.report.table.summarize.Table`): a study's registered primary contrast
    tested alone and starred while its audit passes; ``margins`` as ``ENDPOINT=VALUE``; the
    registered margin applied. ``note`` receives the lines the CLI prints on stderr.

    Raises:
      ConfigError: as ``gradlab table`` (one line naming the bad value).
    """
    from experiments.protocols.study import audit_note, registered_contrast
    from experiments.report.runs import load_results
    from experiments.report.statistics import (
        ANALYSES,
        RATE_TESTS,
        Margin,
        check_choice,
        parse_margins,
    )
    from experiments.report.table import DEFAULT_METRICS, METRICS
    from experiments.report.table.summarize import summarize

    folder = Path(folder)
    if diverged_return is not None and not abs(diverged_return) <= 1e12:
        raise ConfigError(
            f"--diverged-return {diverged_return:g} is not an episode return (|value| <= 1e12)"
        )
    check_choice("analysis", analysis, ANALYSES)
    check_choice("rate test", rate_test, RATE_TESTS)
    results = load_results(folder, keep_duplicates=keep_duplicates)
    shown = list(metrics) if metrics else list(DEFAULT_METRICS)
    results = _with_normalised(results, folder, shown, note)
    known = [m for m in shown if m in METRICS]
    parsed = parse_margins(
        list(margins), {m: METRICS[m].kind for m in known}, {m: METRICS[m].label for m in known}
    )
    confirmatory, declared, line = registered_contrast(
        folder, shown, analysis=analysis, rate_test=rate_test, alpha=alpha, baseline=baseline
    )
    if line:
        _say(note, line)
    if getattr(declared, "margin", None) is not None and declared.endpoint not in parsed:
        end = declared.endpoint
        reason = f"study {declared.study}'s record, {declared.margin_reason}"
        parsed[end] = Margin(declared.margin, METRICS[end].kind, METRICS[end].label, reason)
    summary = summarize(results, metrics=shown, stat=stat, baseline=baseline, analysis=analysis,
                        rate_test=rate_test, alpha=alpha, diverged_return=diverged_return,
                        confirmatory=confirmatory, margins=parsed)  # fmt: skip
    return dataclasses.replace(summary, audit=audit_note(folder))  # no *, and why


def pool(folders: Sequence[str | Path] | str | Path, **options: Any) -> Any:
    """``gradlab pool`` as a typed table (the same call as the command's,
    :func:`experiments.protocols.study.pooled.pool_folders`, so the same ``*``): for one folder
    of a study across tasks, its registered confirmatory family
    (:class:`experiments.report.pool.family.FamilyTable`); otherwise one endpoint across the
    folders (:class:`experiments.report.pool.table.Across`). Options: ``endpoint``,
    ``baseline``, ``alpha``, ``primary``, ``by_name``, ``keep_duplicates``, ``margin``, ``arm``
    (another arm of a study across tasks, tabled as its family, exploratory), and
    ``note`` (called with each line the command prints on stderr).
    """
    from experiments.protocols.study import pool_folders

    paths = [Path(folders)] if isinstance(folders, str | Path) else [Path(f) for f in folders]
    note = options.pop("note", None)
    pooled = pool_folders(paths, **options)
    for line in pooled.notes:
        _say(note, line)
    return pooled.table
