"""``gradlab export`` and :func:`scores`: results folders as files other tools read
(:mod:`experiments.report.export`), each folder's declared normalisation read from its record."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from experiments.base.errors import ConfigError, unknown_choice

__all__ = ["export", "scores"]

_CURVES = ("eval/return", "grad/global_norm", "loss/total")


def _say(note: Callable[[str], None] | None, line: str) -> None:
    if note is not None:
        note(line)


def _folders(folders: Sequence[str | Path] | str | Path) -> list[Path]:
    paths = [Path(folders)] if isinstance(folders, str | Path) else [Path(f) for f in folders]
    if not paths:
        raise ConfigError("no results folder given")
    twice = [p for i, p in enumerate(paths) if p.resolve() in [q.resolve() for q in paths[:i]]]
    if twice:
        raise ConfigError(f"'{twice[0]}' given twice; pass each folder once")
    return paths


def _normalisation(paths: list[Path]) -> tuple[dict | None, dict[str, str]]:
    """The folders' declared normalisation (task -> ``(r_ref, r_rand)``) or None when none
    declares one, and per folder where it came from.

    Raises:
      ConfigError: some folders declare one and others none, or two disagree on a task.
    """
    from experiments.protocols.study import RECORD, declared_normalisation

    declared = {p: declared_normalisation(p) for p in paths}
    given = [p for p, n in declared.items() if n is not None]
    if not given:
        return None, {str(p): "no normalisation declared: raw final returns" for p in paths}
    if len(given) < len(paths):
        bare = next(p for p, n in declared.items() if n is None)
        raise ConfigError(
            f"'{given[0]}' declares a normalisation and '{bare}' none; scores on two scales "
            "cannot share a matrix: export them apart"
        )
    merged: dict[str, tuple[float, float]] = {}
    for path in given:
        for task, pair in declared[path].items():
            if merged.setdefault(task, pair) != pair:
                raise ConfigError(
                    f"'{path}' declares task {task!r}'s (R_ref, R_rand) as {pair}, another "
                    f"folder {merged[task]}; export them apart"
                )
    return merged, {str(p): f"normalisation declared in {p / RECORD}" for p in paths}


def scores(folders: Sequence[str | Path] | str | Path):
    """The score matrix rliable takes, ``{arm: array[runs, tasks]}``, of one or more results
    folders (a study's tasks in their folders):
    :class:`~experiments.report.export.scores.Scores` (``.matrices``, ``.statement()``,
    ``.iqm()``). Normalised as the folders' study records declare, else raw final returns.

    Raises:
      ConfigError: as ``gradlab export --format rliable`` (one line naming the bad value).
    """
    return _scores(_folders(folders))[0]


def _scores(paths: list[Path]):
    from experiments.report.export import score_matrix
    from experiments.report.runs import load_results

    normalisation, sources = _normalisation(paths)
    loaded = [load_results(p) for p in paths]
    keys = sorted({k for r in loaded for k in r.group_keys})
    runs = pd.concat([r.runs for r in loaded], ignore_index=True)
    for key in keys:
        runs[key] = runs[key].fillna("—") if key in runs else "—"
    return score_matrix(runs, keys=keys, normalisation=normalisation), sources


def _tidy(paths: list[Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
    from gradlab._api import curves, runs

    frames, long = [], []
    for path in paths:
        frames.append(runs(path).assign(folder=str(path)))
        long.append(curves(path, metrics=_CURVES).assign(folder=str(path)))
    first = ["folder"]
    run_frame = pd.concat(frames, ignore_index=True)
    curve_frame = pd.concat(long, ignore_index=True)
    return (run_frame[first + [c for c in run_frame if c != "folder"]],
            curve_frame[first + [c for c in curve_frame if c != "folder"]])  # fmt: skip


def export(
    folders: Sequence[str | Path] | str | Path,
    *,
    fmt: str,
    out: str | Path,
    note: Callable[[str], None] | None = None,
) -> list[Path]:
    """Writes the folders' export into the folder ``out`` (module docstring of
    :mod:`experiments.report.export.files`); nothing is written unless every file could be
    made. ``note`` receives what the CLI prints on stderr (runs left out of a score matrix).

    Returns:
      The files written.

    Raises:
      ConfigError: an unknown format, a folder without runs, or what
        :func:`~experiments.report.export.files.write_files` refuses.
    """
    from experiments.report.export import FORMATS, score_files, tidy_files, write_files

    if fmt not in FORMATS:
        raise unknown_choice("format", fmt, FORMATS)
    paths = _folders(folders)
    if fmt == "rliable":
        matrix, sources = _scores(paths)
        for arm, tasks in matrix.left_out.items():
            for task, seeds in tasks.items():
                line = (
                    f"note: arm {arm}, task {task}: {len(seeds)} run(s) left out (seeds "
                    f"{seeds[0]}-{seeds[-1]}): the arm has fewer runs on another task"
                )
                _say(note, line)
        files = score_files(matrix, sources=sources)
    else:
        files = tidy_files(*_tidy(paths), fmt=fmt)
    return write_files(Path(out), files)
