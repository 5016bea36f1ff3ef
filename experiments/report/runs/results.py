"""Reads a results folder (``results/<ablation>/``) into pandas DataFrames.

One row per job in :attr:`Results.runs`: its status, seed, group (every swept key except the seed)
and stability figures (from ``summary.json``'s ``"stability"`` key; recomputed from
``metrics.jsonl`` when absent, or when it lacks a key of
:data:`~experiments.verdicts.stability.STABILITY_KEYS` because an older gradlab wrote it).
:func:`load_curves`
reads the per-step metrics of the averaged runs for the plots.

Two figures are derived here for the table's intention-to-treat analysis:

* the endpoint columns (:mod:`experiments.report.runs.endpoints`): the declared ``threshold``, the
  run's ``outcome`` class (held, lost, diverged after or before learning, never learned) and the
  0/1 endpoints ``learned``, ``failed`` (did not learn and hold), ``lost_after_learning``,
  ``never_learned``, and ``failed_v1`` (the definition Studies 1-3 registered).
* :func:`intention_to_treat`: a return column over every run, where a diverged run, or one without
  a value, counts as a return declared before the runs: the mean return of the task's uniformly
  random policy (:func:`diverged_return`), times the run's reward scale. Statuses are the
summary's (:data:`experiments.jobs.summary.STATUSES`), files are read with the store's readers
(:func:`experiments.jobs.store.load_summary`, :func:`experiments.jobs.store.read_metrics`). Every
problem with the folder is a :class:`~experiments.base.errors.ConfigError` naming the folder or file
and what was expected.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from experiments.base.errors import ConfigError
from experiments.jobs import Summary, job_name, load_summary, read_metrics
from experiments.report.runs.counting import (
    AVERAGED,
    NO_SUMMARY,
    Duplicate,
    check_folder_name,
    check_keep,
    drop_duplicates,
    job_folders,
    no_summary_record,
    run_identities,
    shared_key,
)
from experiments.report.runs.endpoints import add_endpoints
from experiments.verdicts import STABILITY_KEYS, stability_summary

__all__ = [
    "AVERAGED",
    "Results",
    "diverged_return",
    "drop_pooled_duplicates",
    "group_label",
    "intention_to_treat",
    "load_curves",
    "load_results",
    "registered_task",
]


@dataclasses.dataclass(frozen=True)
class Results:
    """The jobs of one results folder.

    Attributes:
      root: the folder.
      ablation: the ablation name all jobs share (None for single runs).
      group_keys: the swept keys except the seed, sorted.
      runs: one row per job, sorted by group then seed. Columns: ``job``, ``path``, ``status``,
        ``seed``, ``group`` (a label), ``task``, ``threshold``, ``reward_scale`` (None when the
        summary does not record it: 1), one column per group key (str),
        one per :data:`~experiments.verdicts.stability.STABILITY_KEYS` (float, NaN when undefined),
        and
        the endpoint columns of :func:`~experiments.report.runs.endpoints.add_endpoints`
        (``outcome``,
        ``failed``, ``failed_v1``, ...; float 0/1, NaN when undefined).
    """

    root: Path
    ablation: str | None
    group_keys: tuple[str, ...]
    runs: pd.DataFrame
    duplicates: tuple[Duplicate, ...] = ()

    @property
    def averaged(self) -> pd.DataFrame:
        """The runs that enter the statistics: status in :data:`AVERAGED`."""
        return self.runs[self.runs["status"].isin(AVERAGED)]


def group_label(group: dict[str, object]) -> str:
    """A short label: the value if one key, ``k=v, k=v`` if several, ``all`` if none."""
    if not group:
        return "all"
    if len(group) == 1:
        return str(next(iter(group.values())))
    return ", ".join(f"{k}={group[k]}" for k in sorted(group))


def _job_folders(root: Path) -> list[Path]:
    """Every job folder of ``root``, with or without its summary
    (:func:`~experiments.report.runs.counting.job_folders`)."""
    if not root.exists():
        raise ConfigError(f"results folder '{root}' does not exist")
    if not root.is_dir():
        raise ConfigError(f"results folder '{root}' is not a folder")
    folders = job_folders(root)
    if folders:
        return folders
    nested = sorted({p.parent.parent.name for p in root.glob("*/*/summary.json")})
    if nested:
        raise ConfigError(
            f"'{root}' holds several ablation folders ({', '.join(nested)}); "
            f"pass one of them, e.g. '{root / nested[0]}'"
        )
    raise ConfigError(f"no runs in '{root}': no job folder with a summary.json")


def _stability(summary: Summary, job_dir: Path) -> dict:
    """The stored figures; recomputed from ``metrics.jsonl`` when they are absent or incomplete
    (written before a key existed), with the summary's ``training_steps`` and ``return_range``
    when it records them and the default divergence rule."""
    stored = summary.stability
    if stored and all(key in stored for key in STABILITY_KEYS):
        return stored
    metrics = job_dir / "metrics.jsonl"
    if summary.status in AVERAGED and metrics.exists():
        return stability_summary(
            read_metrics(metrics),
            threshold=summary.threshold,
            wall_time_s=summary.wall_time_s,
            training_steps=summary.training_steps,
            return_range=summary.return_range,
        )
    return stored


def registered_task(summary: Summary, job_dir: Path) -> str | None:
    """The run's task as the task registry names it: a MinAtar run's summary says ``minatar``,
    its game (the registry's name, with its own random-policy return) is in its config."""
    task = summary.task
    if task == "minatar":
        return config_task_id(job_dir / "config.yaml") or task
    return task


def _fold_variant_parameters(records: list[dict]) -> None:
    """Where the runs compare variants, a variant's own parameters (``variant.clipnorm=0.6``) are
    part of its arm, not a stratum: ``clipnorm`` at 0.6 is the arm ``clipnorm (clipnorm=0.6)``,
    contrasted with ``none`` like every other arm. (As separate keys they would split the table
    into strata, the parameterised arms in one without a baseline.) Where ``variant`` does not
    vary (``ablation=scale_value``), the parameter is what is compared and stays a key."""
    if len({r["_group"].get("variant") for r in records}) < 2:
        return
    for r in records:
        group = r["_group"]
        params = {k: group.pop(k) for k in sorted(group) if k.startswith("variant.")}
        if params and "variant" in group:
            shown = ", ".join(f"{k.removeprefix('variant.')}={v}" for k, v in params.items())
            group["variant"] = f"{group['variant']} ({shown})"
        else:
            group.update(params)
        r["group"] = group_label(group)


def _resolve_named(records: list[dict]) -> None:
    """A folder without a summary has its settings from its name, where a job's name writes
    unsafe characters differently (``regime=calibrated/breakout_harsh`` is the folder
    ``regime=calibrated-breakout_harsh``): each named value is replaced by the runs' value it
    names (:func:`~experiments.jobs.store.job_name`), so the run falls in its arm instead of a
    phantom one. A value no run has is kept as named."""
    values: dict[str, set[str]] = {}
    for r in records:
        if r["status"] != NO_SUMMARY:
            for key, value in r["_group"].items():
                values.setdefault(key, set()).add(value)
    for r in records:
        if r["status"] != NO_SUMMARY:
            continue
        for key, named in list(r["_group"].items()):
            if named in values.get(key, ()):
                continue
            spelled = [v for v in values.get(key, ()) if job_name({key: v}) == f"{key}={named}"]
            if len(spelled) == 1:
                r["_group"][key] = spelled[0]


def _check_unnamed(records: list[dict]) -> None:
    """A folder without a summary is placed by its name's keys: they must be the runs' keys."""
    known = {k for r in records if r["status"] != NO_SUMMARY for k in r["_group"]}
    for r in records:
        extra = set(r["_group"]) - known
        if r["status"] == NO_SUMMARY and known and extra:
            raise ConfigError(
                f"job folder '{r['path']}' has no summary.json and its name sets "
                f"{', '.join(sorted(extra))}, which no run of the folder sets, so it belongs to "
                "no arm; restore its summary.json or move the folder out of the results folder"
            )


def load_results(path: str | Path, *, keep_duplicates: str | None = None) -> Results:
    """Reads every job folder of ``path`` (its ``summary.json``), each run once.

    A job folder without a summary is a run of status
    :data:`~experiments.report.runs.counting.NO_SUMMARY`, counted and listed, never averaged; two
    folders holding the same run are an error, or with ``keep_duplicates="first"`` one is kept
    and the other listed in :attr:`Results.duplicates` (:mod:`experiments.report.runs.counting`).

    Args:
      path: an ablation's results folder (``results/<ablation>``) or ``results/runs``.
      keep_duplicates: None, or ``first``.

    Returns:
      The :class:`Results`.

    Raises:
      ConfigError: the folder is missing, empty, holds ablation folders instead of jobs, holds jobs
        of several ablations, a summary file is corrupt or disagrees with its folder's name, a
        run is there twice (without ``keep_duplicates``), or a folder without a summary has no
        job's name.
    """
    root = Path(path)
    keep = check_keep(keep_duplicates)
    records, ablations, identities = [], set(), []
    for folder in _job_folders(root):
        if not (folder / "summary.json").exists():
            record = no_summary_record(folder)
            record.update(
                {key: None for key in STABILITY_KEYS}, figures_missing="", identity=None,
                identities=(),
            )  # fmt: skip
            records.append(record)
            identities.append(())
            continue
        summary_path = folder / "summary.json"
        summary = load_summary(summary_path.parent)
        ablations.add(summary.ablation)
        group = {str(k): str(v) for k, v in summary.group.items()}
        stability = _stability(summary, summary_path.parent)
        record = {
            "job": summary.job or summary_path.parent.name,
            "path": str(summary_path.parent),
            "status": summary.status,
            "seed": summary.seed,
            "group": group_label(group),
            "task": registered_task(summary, summary_path.parent),
            "threshold": summary.threshold,
            "reward_scale": summary.reward_scale,
            "_group": group,
        }
        record.update({key: stability.get(key) for key in STABILITY_KEYS})
        record["figures_missing"] = ",".join(k for k in STABILITY_KEYS if k not in stability)
        record["_summary"] = summary
        record["identities"] = run_identities(summary, folder)
        record["identity"] = record["identities"][0] if record["identities"] else None
        identities.append(record["identities"])
        records.append(record)
    if len(ablations) > 1:
        names = ", ".join(sorted(str(a) for a in ablations))
        raise ConfigError(
            f"mixed ablations in '{root}': {names}; a table compares the runs of one ablation, "
            "so pass one ablation's folder"
        )
    records, duplicates = drop_duplicates(records, identities, keep=keep)
    for r in records:
        summary = r.pop("_summary", None)
        if summary is not None:
            check_folder_name(summary, Path(r["path"]))
    _resolve_named(records)
    _check_unnamed(records)
    _fold_variant_parameters(records)
    group_keys = tuple(sorted({k for r in records for k in r["_group"]}))
    for r in records:
        group = r.pop("_group")
        r.update({k: group.get(k, "—") for k in group_keys})
    runs = pd.DataFrame.from_records(records)
    for key in STABILITY_KEYS:
        runs[key] = pd.to_numeric(runs[key], errors="coerce").astype(float)
    runs = add_endpoints(runs)
    runs = runs.sort_values([*group_keys, "seed"], key=_natural_key, kind="stable")
    return Results(
        root=root,
        ablation=ablations.pop() if ablations else None,
        group_keys=group_keys,
        runs=runs.reset_index(drop=True),
        duplicates=tuple(duplicates),
    )


def config_task_id(path: Path) -> str | None:
    """The ``task.id`` of a job's ``config.yaml`` (a MinAtar game's name); None without one."""
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    task = config.get("task") if isinstance(config, dict) else None
    game = task.get("id") if isinstance(task, dict) else None
    return str(game) if game else None


def diverged_return(task: str | None, *, override: float | None = None) -> float | None:
    """The episode return a diverged run counts as, declared before the runs, unscaled.

    Args:
      task: the task's name.
      override: a value given by the caller (``gradlab table --diverged-return``): used as is.

    Returns:
      ``override`` when given; else the mean episode return of the task's uniformly random policy
      from the task registry (``experiments.tasks.registry.task_facts(task).random_return``);
      None when the registry does not know the task.
    """
    if override is not None:
        return float(override)
    if task is None:
        return None
    try:
        from experiments.tasks import task_facts

        value = task_facts(task).random_return
    except (ImportError, ConfigError, KeyError, AttributeError):
        return None
    return None if value is None else float(value)


def intention_to_treat(
    runs: pd.DataFrame, column: str, *, override: float | None = None
) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """A return column over every run: a diverged run, or one without a value, gets its task's
    declared return (:func:`diverged_return`) times the run's ``reward_scale`` (returns are
    logged scaled).

    Args:
      runs: ``[N]`` rows with ``column``, ``diverged``, ``task`` and ``reward_scale``.
      column: e.g. ``final_return``.
      override: the declared (unscaled) return for every task; None: the registry's, per task.

    Returns:
      ``(values [N], imputed [N] bool, declared)``: ``declared`` maps each task that needed a
      value (``task`` or ``task×scale`` when its scale is not 1) to the value used.

    Raises:
      ConfigError: a run needs a value and none is declared for its task.
    """
    values = runs[column].to_numpy(dtype=float).copy()
    diverged = pd.to_numeric(runs["diverged"], errors="coerce").to_numpy(dtype=float) >= 0.5
    imputed = diverged | ~np.isfinite(values)
    scales = pd.to_numeric(runs["reward_scale"], errors="coerce").fillna(1.0).to_numpy(dtype=float)
    tasks = runs["task"].to_numpy(dtype=object)
    declared: dict[str, float] = {}
    for i in np.flatnonzero(imputed):
        task, scale = tasks[i], scales[i]
        value = diverged_return(task, override=override)
        if value is None:
            count = int((imputed & (tasks == task)).sum())
            raise ConfigError(
                f"{column} counts every run (intention to treat): {count} run(s) of task "
                f"{task!r} diverged or have no {column}, and no random-policy return is declared "
                f"for {task!r}; pass --diverged-return VALUE or leave {column} out of --metrics"
            )
        values[i] = value * scale
        declared[str(task) if scale == 1.0 else f"{task}×{scale:g}"] = value * scale
    return values, imputed, declared


def _natural_key(column: pd.Series) -> pd.Series:
    """Sorts numbers numerically and the rest as strings (``2 < 10``, ``0.25 < 1.0``)."""
    numeric = pd.to_numeric(column, errors="coerce")
    if numeric.notna().all():
        return numeric
    return column.astype(str)


def load_curves(results: Results, keys: Sequence[str] | None = None) -> pd.DataFrame:
    """The per-step metrics of the averaged runs, one row per (run, step).

    Args:
      results: from :func:`load_results`.
      keys: the metric keys wanted (absent ones give NaN columns); None: every key found.

    Returns:
      Columns ``job``, ``group``, ``seed``, ``step`` and one per key (float).
    """
    frames = []
    for run in results.averaged.itertuples():
        frame = pd.DataFrame.from_records(read_metrics(Path(run.path) / "metrics.jsonl"))
        if frame.empty or "step" not in frame:
            continue
        if keys is not None:
            frame = frame.reindex(columns=["step", *keys])
        frame.insert(0, "job", run.job)
        frame.insert(1, "group", run.group)
        frame.insert(2, "seed", run.seed)
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["job", "group", "seed", "step", *(keys or [])])
    curves = pd.concat(frames, ignore_index=True)
    values = [c for c in curves.columns if c not in ("job", "group", "seed", "step")]
    curves[values] = curves[values].apply(pd.to_numeric, errors="coerce").astype(float)
    return curves


def drop_pooled_duplicates(loaded: Sequence[Results], *, keep: str | None) -> list[Results]:
    """The folders of a pool with each run once over all of them.

    A run (:func:`run_identities`, the ``identities`` column) found in an earlier folder is an error
    naming both folders, or with ``keep="first"`` left out of the later folder and added to its
    :attr:`~experiments.report.runs.results.Results.duplicates`.

    Args:
      loaded: the folders' results, in the order given.
      keep: None or ``first``.

    Raises:
      ConfigError: a run in two folders and ``keep`` is None.
    """
    check_keep(keep)
    first: dict[str, pd.Series] = {}
    out = []
    for results in loaded:
        runs = results.runs
        dropped, duplicates = [], list(results.duplicates)
        for index, run in runs.iterrows():
            keys = run.get("identities")
            keys = tuple(keys) if isinstance(keys, tuple | list) else ()
            other = next((first[k] for k in keys if k in first), None)
            if other is None:
                first.update(dict.fromkeys(keys, run))
                continue
            what = f"{run['group']}, seed {run['seed']}"
            if keep is None:
                raise ConfigError(
                    f"the same run ({what}, {shared_key(keys, first)}) is in two pooled folders: "
                    f"'{other['path']}' and '{run['path']}'; a run counts once: give each run's "
                    "folder once, or pass --keep-duplicates first to count the first and list "
                    "the other"
                )
            dropped.append(index)
            duplicates.append(Duplicate(kept=other["path"], dropped=run["path"], what=what))
        if dropped and len(dropped) == len(runs):
            raise ConfigError(
                f"every run of '{results.root}' is also in an earlier folder (e.g. "
                f"'{duplicates[-1].kept}'): the same folder under two names; give it once"
            )
        if dropped:
            results = dataclasses.replace(
                results,
                runs=runs.drop(index=dropped).reset_index(drop=True),
                duplicates=tuple(duplicates),
            )
        out.append(results)
    return out
