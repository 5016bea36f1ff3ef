"""Which folders of a results folder are runs, and that each run is counted exactly once.

A table or a pool counts runs; this module makes sure none is counted silently twice or not at
all (issue 39):

* **Job folders** (:func:`job_folders`): every sub-folder that holds a job's file (``summary.json``,
  ``config.yaml``, ``metrics.jsonl``, ``curves.csv.gz``, ``error.txt``) or is named like a job
  (``key=value__key=value__seed=N``, :func:`experiments.jobs.store.job_name`). Other folders (a
  ``figures`` folder, hidden ones) are not runs.
* **No summary** (:func:`no_summary_record`): a job folder without ``summary.json`` is a run with
  the status :data:`NO_SUMMARY`, its arm and seed read from its folder's name: counted and listed
  with the excluded runs, never averaged, never dropped.
* **Folder names** (:func:`check_folder_name`): a summary whose ``job``, ``seed``, ``variant`` or
  any other setting disagrees with its folder's name is an error naming the folder and both
  values (a copied or renamed folder, or an edited summary, would move a run to another arm).
* **Identity** (:func:`run_identities`) and **duplicates** (:func:`drop_duplicates`): a run is
  recognised by two keys, neither read from its folder's name or its arm's label: its design
  point (the seed and the config hash: the summary's ``config_sha256``, else its ``config.yaml``'s)
  and its execution (the seed, process id, wall time, start time and stability figures the
  summary recorded). Two runs that share either key are the same run, wherever they are and
  whatever their folders are named: a copy with its ``config.yaml`` deleted or edited still
  shares its execution, a re-run of the same config and seed shares its design point. Counted
  twice a run would double its weight: it is an error naming both folders, or, with
  ``keep="first"``, one is kept and the other listed (:class:`Duplicate`).
* **Missing figures** (:func:`missing_figures`): a run of the design whose summary lacks
  stability figures a shown endpoint needs (and whose folder has no ``metrics.jsonl`` to
  recompute them from) is named in the caption beside the n.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import yaml

from experiments.base.errors import ConfigError, unknown_choice
from experiments.jobs import Summary, config_fingerprint, flat_config, job_name

__all__ = [
    "AVERAGED",
    "KEEP_DUPLICATES",
    "NO_SUMMARY",
    "Duplicate",
    "check_folder_name",
    "check_keep",
    "counting_notes",
    "drop_duplicates",
    "duplicates_note",
    "job_folders",
    "missing_figures",
    "name_settings",
    "no_summary_record",
    "run_identities",
    "shared_key",
]

AVERAGED = ("completed", "diverged")
"""The statuses of the runs of the design: they enter the statistics, every one of them
(intention to treat); runs of any other status (a crash, a timeout, a run not finished) are
counted and listed, never averaged.

This differs from :data:`experiments.jobs.store.FINISHED` (the jobs a re-run skips), which also
holds ``timeout``: a timed-out job is done, but it stopped at a wall-time or step budget before its
planned training steps, so its final window is not the others' (its returns come from earlier in
training) and its "not diverged" says nothing about the steps it never ran. Averaging it with
full-length runs would mix unlike things. A diverged run did run to its end, by the rule that
defines it, and belongs in the statistics: leaving it out would hide exactly the instability the
table measures."""

NO_SUMMARY = "without summary"
"""The status of a job folder without a ``summary.json``: counted and listed, never averaged."""

KEEP_DUPLICATES = ("first",)
"""``--keep-duplicates`` choices: ``first`` keeps the run found first (folders in the order
given; within one folder, a run whose folder is named after its own job before a copy) and lists
the other; without it, a duplicate is an error."""

_JOB_FILES = ("summary.json", "config.yaml", "metrics.jsonl", "curves.csv.gz", "error.txt")
_SEED = re.compile(r"^\d+$")


@dataclasses.dataclass(frozen=True)
class Duplicate:
    """A run left out because another folder holds the same run.

    Attributes:
      kept: the folder counted.
      dropped: the folder left out.
      what: the run, e.g. ``variant=none, seed 0``.
    """

    kept: str
    dropped: str
    what: str


def job_folders(root: Path) -> list[Path]:
    """The job folders of ``root`` (module docstring), sorted by name."""
    out = []
    for child in sorted(root.iterdir()):
        if not child.is_dir() or child.name.startswith("."):
            continue
        if "=" in child.name or any((child / f).exists() for f in _JOB_FILES):
            out.append(child)
    return out


def name_settings(name: str) -> dict[str, str] | None:
    """``key=value`` pairs of a job folder's name (``seed`` among them); None when a part is not
    ``key=value`` (not a job's name, or a long name ending in a hash)."""
    parts = name.split("__")
    if not all("=" in part for part in parts):
        return None
    return dict(part.split("=", 1) for part in parts)


def no_summary_record(folder: Path) -> dict:
    """The record of a job folder without ``summary.json``: its arm and seed from its name.

    Raises:
      ConfigError: the folder's name is not a job's, so the run cannot be placed in an arm.
    """
    settings = name_settings(folder.name)
    if settings is None:
        raise ConfigError(
            f"job folder '{folder}' has no summary.json and its name is not a job's "
            "(key=value__...__seed=N), so its run cannot be counted in an arm; restore its "
            "summary.json or move the folder out of the results folder"
        )
    seed = settings.pop("seed", None)
    return {
        "job": folder.name,
        "path": str(folder),
        "status": NO_SUMMARY,
        "seed": int(seed) if seed is not None and _SEED.match(seed) else seed,
        "task": None,
        "threshold": None,
        "reward_scale": None,
        "_group": settings,
    }


def check_folder_name(summary: Summary, folder: Path) -> None:
    """Refuses a summary that disagrees with its folder's name.

    The summary's ``job`` must be the folder's name. Where the name is a job's
    (``key=value__...__seed=N``, :func:`~experiments.jobs.store.job_name`), its seed must be the
    summary's ``seed``, its ``variant`` the summary's ``variant``, and every other ``key=value``
    the summary's setting (``group``, else ``overrides``), with no setting of the summary's
    ``group`` missing from the name.

    Raises:
      ConfigError: naming the folder, the setting and both values.
    """
    name = folder.name
    if summary.job is not None and summary.job != name:
        raise _disagrees(folder, "job", name, summary.job, "job")
    named = name_settings(name)
    if named is None or "seed" not in named:
        return
    group = {str(k): str(v) for k, v in summary.group.items()}
    recorded = {**{str(k): str(v) for k, v in summary.overrides.items()}, **group}
    for key, value in (("seed", summary.seed), ("variant", summary.variant)):
        if value is not None and key in named and not _same(key, value, named[key]):
            raise _disagrees(folder, key, named[key], value, key)
    for key in sorted((set(named) | set(group)) - {"seed"}):
        if key not in named or key not in recorded or not _same(key, recorded[key], named[key]):
            raise _disagrees(folder, key, named.get(key), recorded.get(key), "group")


def _same(key: str, value: object, named: str) -> bool:
    """Whether ``key=value`` gives the name part ``key=named`` (names replace unsafe
    characters)."""
    return job_name({key: str(value)}) == f"{key}={named}"


def _disagrees(folder: Path, key: str, named: object, recorded: object, field: str) -> ConfigError:
    named = "(none)" if named is None else named
    recorded = "(none)" if recorded is None else recorded
    return ConfigError(
        f"run folder '{folder}': its name says {key}={named} but its summary.json's {field} "
        f"says {key}={recorded}; a copied, renamed or edited run would be counted in the wrong "
        "arm: restore the folder's name or its summary, or move it out of the results folder"
    )


def run_identities(summary: Summary, folder: Path) -> tuple[str, ...]:
    """The keys that recognise a run (module docstring): ``seed=S|config=HASH`` (the summary's
    ``config_sha256`` (schema 3), else the hash of the folder's ``config.yaml`` as
    :func:`~experiments.jobs.identity.config_fingerprint` takes it: without ``runtime``,
    ``logger`` and the seed) and ``seed=S|run=...`` (process id, wall time, start time and
    stability figures as the summary recorded them). A key whose parts are missing is left out:
    a summary without a config, a process id or a wall time (written by hand) has none and is
    compared with none.

    Args:
      summary: the run's summary.
      folder: its job folder.
    """
    keys = []
    config = getattr(summary, "config_sha256", None) or _config_hash(folder / "config.yaml")
    if config is not None:
        keys.append(f"seed={summary.seed}|config={config}")
    if summary.pid is not None or summary.wall_time_s is not None:
        stability = json.dumps(summary.stability, sort_keys=True, default=str)
        keys.append(
            f"seed={summary.seed}|run=pid={summary.pid}/wall={summary.wall_time_s}/"
            f"started={getattr(summary, 'started_at', None)}/{stability}"
        )
    return tuple(keys)


def _config_hash(path: Path) -> str | None:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return config_fingerprint(flat_config(data)) if isinstance(data, dict) else None


def check_keep(keep: str | None) -> str | None:
    """``keep`` when None or in :data:`KEEP_DUPLICATES`; else one ConfigError naming them."""
    if keep is not None and keep not in KEEP_DUPLICATES:
        raise unknown_choice("--keep-duplicates", keep, KEEP_DUPLICATES)
    return keep


def drop_duplicates(
    records: Sequence[dict], identities: Sequence[Sequence[str]], *, keep: str | None
) -> tuple[list[dict], list[Duplicate]]:
    """The records with each run once.

    Args:
      records: ``[N]`` run records (``path``, ``job``, ``group``, ``seed``), in the order found.
      identities: ``[N]`` their :func:`run_identities` (empty for a run without a summary).
      keep: None (a duplicate is an error) or ``first`` (:data:`KEEP_DUPLICATES`).

    Returns:
      ``(records kept, duplicates left out)``.

    Raises:
      ConfigError: two records share a key and ``keep`` is None, naming both folders.
    """
    check_keep(keep)
    first: dict[str, dict] = {}
    dropped = []
    # a run whose folder is named after its own job comes before a copy under another name
    order = sorted(range(len(records)), key=lambda i: _is_copy(records[i]))
    keep_index = set()
    for i in order:
        keys = tuple(identities[i] or ())
        other = next((first[k] for k in keys if k in first), None)
        if other is None:
            first.update(dict.fromkeys(keys, records[i]))
            keep_index.add(i)
            continue
        this = records[i]
        what = f"{this['group']}, seed {this['seed']}"
        if keep is None:
            raise ConfigError(
                f"the same run ({what}, {shared_key(keys, first)}) is in two folders: "
                f"'{other['path']}' and '{this['path']}'; a run counts once: remove the copy, or "
                "pass --keep-duplicates first to count the first and list the other"
            )
        dropped.append(Duplicate(kept=other["path"], dropped=this["path"], what=what))
    kept = [records[i] for i in range(len(records)) if i in keep_index]
    return kept, dropped


def shared_key(keys: Sequence[str], seen: dict) -> str:
    """What two runs share, in words (their seed is said beside it): the same config, or the same
    execution."""
    key = next(k for k in keys if k in seen)
    return "same config" if "|config=" in key else "same execution: a copy"


def _is_copy(record: dict) -> bool:
    return Path(record["path"]).name != record["job"]


def duplicates_note(duplicates: Sequence[Duplicate]) -> str:
    """The caption's sentence on the runs left out as duplicates ('' when none)."""
    if not duplicates:
        return ""
    listed = "; ".join(f"'{d.dropped}' ({d.what}, same run as '{d.kept}')" for d in duplicates)
    return f"{len(duplicates)} duplicate run(s) left out (--keep-duplicates first): {listed}."


def missing_figures(runs: pd.DataFrame, metrics: Sequence[str]) -> str:
    """The caption's sentence on the runs of the design without a figure the table shows.

    Args:
      runs: the design's runs, with ``path``, ``figures_missing`` (the stability keys their
        summary lacked, comma-separated, '' when none) and the metrics' columns.
      metrics: the shown metrics.

    Returns:
      e.g. ``"1 run without stability figures (no 'stability' in its summary.json, no
      metrics.jsonl to recompute them), left out of n where it has no value: 'A'."``; '' when
      none.
    """
    if "figures_missing" not in runs or runs.empty:
        return ""
    lacking = runs["figures_missing"].fillna("").astype(str) != ""
    shown = [m for m in metrics if m in runs.columns]
    if not shown:
        return ""
    no_value = runs[shown].apply(pd.to_numeric, errors="coerce").isna().any(axis=1)
    paths = runs.loc[lacking & no_value, "path"].astype(str).tolist()
    if not paths:
        return ""
    listed = ", ".join(f"'{p}'" for p in paths)
    return (
        f"{len(paths)} run(s) without stability figures (their summary.json lacks them and no "
        f"metrics.jsonl is left to recompute them from), counted out of n where a column has no "
        f"value: {listed}."
    )


def no_summary_note(runs: pd.DataFrame) -> str:
    """The caption's sentence naming the job folders without a summary ('' when none)."""
    paths = runs.loc[runs["status"] == NO_SUMMARY, "path"].astype(str).tolist()
    if not paths:
        return ""
    listed = ", ".join(f"'{p}'" for p in paths)
    return (
        f"{len(paths)} job folder(s) without a summary.json, counted with the excluded runs "
        f"(no figure to average): {listed}."
    )


def counting_notes(
    runs: pd.DataFrame, metrics: Sequence[str], duplicates: Sequence[Duplicate] = ()
) -> list[str]:
    """The caption's sentences on runs not counted as the others: job folders without a summary,
    runs of the design without the figures a shown column needs, duplicates left out.

    Args:
      runs: every run of the table (:attr:`~experiments.report.runs.results.Results.runs`).
      metrics: the shown metrics.
      duplicates: the runs left out as duplicates.
    """
    design = runs[runs["status"].isin(AVERAGED)]
    notes = [no_summary_note(runs), missing_figures(design, metrics), duplicates_note(duplicates)]
    return [n for n in notes if n]
