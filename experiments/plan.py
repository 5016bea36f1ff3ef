"""Before anything runs: the jobs a command line stands for, each validated, each with its folder
and whether it would be skipped.

:func:`plan` expands a sweep exactly as Hydra's basic sweeper does (the ablation preset's
``hydra.sweeper.params``, then the command-line overrides, which replace a preset key or add one),
composes every job's config with Hydra's compose API, converts it into a
:class:`~experiments.config.RunConfig` (so every bad name, key, type or range is found here, as a
:class:`~experiments.errors.ConfigError`, before a single folder is written), and checks its folder
for a finished result.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments import store
from experiments.errors import ConfigError, unknown_choice

__all__ = ["PlannedJob", "group_options", "plan", "split_hydra_overrides"]

_GROUPS = ("ablation", "logger", "muzero", "task", "variant")


@dataclasses.dataclass(frozen=True)
class PlannedJob:
    """One job of a command line."""

    name: str  # the job's folder name
    overrides: tuple[str, ...]  # its key=value overrides, as Hydra passes them to the job
    job_dir: Path
    run: bool  # False: finished and would be skipped
    reason: str  # new | failed | unfinished | forced | completed | diverged | timeout


def group_options(config_dir: str | Path, group: str) -> list[str]:
    """The option names of a config group (the ``*.yaml`` files of ``conf/<group>/``)."""
    return sorted(p.stem for p in Path(config_dir, group).glob("*.yaml"))


def split_hydra_overrides(overrides: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(task overrides, hydra overrides)``: ``hydra/...`` and ``hydra....`` keys are Hydra's."""
    task, hyd = [], []
    for item in overrides:
        key = item.lstrip("+~").split("=", 1)[0]
        (hyd if key.split("/", 1)[0].split(".", 1)[0] == "hydra" else task).append(item)
    return task, hyd


def _parse(overrides: Sequence[str]) -> list[Any]:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    for item in overrides:
        store.parse_overrides([item])  # the key=value shape, with our message
    try:
        return OverridesParser.create().parse_overrides(list(overrides))
    except OverrideParseException as err:
        raise ConfigError(f"cannot parse override: {str(err).splitlines()[0]}") from None


def _check_groups(config_dir: Path, parsed: list[Any]) -> None:
    for override in parsed:
        key = override.get_key_element().lstrip("+~")
        if key not in _GROUPS or override.is_delete():
            continue
        values = (
            list(override.sweep_string_iterator())
            if override.is_sweep_override()
            else [override.get_value_element_as_str()]
        )
        options = group_options(config_dir, key)
        for value in values:
            if value not in options:
                raise unknown_choice(key, value, options)


def _compose(config_dir: Path, overrides: list[str], *, hydra_cfg: bool) -> Any:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
            return compose("config", overrides=overrides, return_hydra_config=hydra_cfg)
    except (HydraException, OmegaConfBaseException) as err:
        raise _composition_error(config_dir, overrides, err) from None
    finally:
        GlobalHydra.instance().clear()


def _composition_error(config_dir: Path, overrides: list[str], err: Exception) -> ConfigError:
    """Hydra's multi-line composition error as one line naming the key and the valid ones."""
    from omegaconf import OmegaConf

    text = str(err)
    match = re.search(r"Could not override '([^']+)'", text)
    if match:
        key = match.group(1)
        parent, _, leaf = key.rpartition(".")
        rest = [o for o in overrides if o.lstrip("+~").split("=", 1)[0] != key]
        try:
            base = _compose(config_dir, rest, hydra_cfg=False)
            node = OmegaConf.select(base, parent) if parent else base
            valid = ", ".join(str(k) for k in node.keys()) if node is not None else "?"
        except ConfigError:
            valid = "?"
        where = parent or "the top level"
        return ConfigError(f"unknown key {key!r} ({leaf!r} is not under {where}; valid: {valid})")
    first = next((line.strip() for line in text.splitlines() if line.strip()), repr(err))
    return ConfigError(f"bad config: {first}")


def _check_writable(path: Path) -> None:
    """Refuses a results folder (or its nearest existing parent) that cannot or must not be
    written: no write permission, or no write bit at all (``chmod a-w``), which is honoured even
    for root, who could write anyway, since it is how a user protects finished results."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"results folder '{probe}' is not a folder; choose runtime.results_dir")
    if not os.access(probe, os.W_OK | os.X_OK) or probe.stat().st_mode & 0o222 == 0:
        raise ConfigError(
            f"results folder '{probe}' is read-only; make it writable (chmod u+w) or choose "
            "another runtime.results_dir"
        )


def _check_results(jobs: list[PlannedJob], *, ablation: str | None, writable: bool) -> None:
    """The folders of the jobs that would run must be writable (when ``writable``), and every
    job folder must hold a job of this ablation (a copied or renamed folder of another ablation
    would otherwise be skipped as finished, wrongly)."""
    checked: set[Path] = set()
    for job in jobs:
        for folder in (job.job_dir.parent.parent, job.job_dir.parent, job.job_dir):
            if not (writable and job.run) or folder in checked:
                continue
            if folder.exists() or folder == job.job_dir.parent:
                checked.add(folder)
                _check_writable(folder)
        summary = store.read_summary(job.job_dir)
        if summary is not None and "ablation" in summary and summary["ablation"] != ablation:
            theirs = summary["ablation"] or "none (a single run)"
            raise ConfigError(
                f"'{job.job_dir}' holds a job of ablation {theirs!r}, not {ablation!r}; "
                "a results folder holds one ablation: choose another runtime.results_dir"
            )


def plan(
    overrides: Sequence[str],
    *,
    multirun: bool,
    config_dir: str | Path,
    force: bool = False,
    check_writable: bool = True,
    task_cls: type | None = None,
    muzero_cls: type | None = None,
) -> list[PlannedJob]:
    """Expands, validates and locates the jobs of a command line; writes nothing.

    Args:
      overrides: task overrides (``ablation=...``, ``seed=0``, ...); Hydra's own overrides
        (``hydra/launcher=...``) are ignored here.
      multirun: a sweep (the ablation preset's params plus the overrides) or one run.
      config_dir: the config folder.
      force: plan finished jobs to run again.
      check_writable: refuse a read-only results folder when a job would run (off for a dry run).
      task_cls: the task config class (default ``experiments.tasks.TaskConfig``).
      muzero_cls: the MuZero config class (default ``experiments.muzero.config.MuZeroConfig``).

    Returns:
      The jobs, in Hydra's launch order.

    Raises:
      ConfigError: an unknown ablation, variant, placement, task or key, a wrong type, an
        out-of-range value, in any job; a read-only results folder; a job folder holding a job
        of another ablation.
    """
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from omegaconf import OmegaConf

    from experiments.config import build_run_config

    config_dir = Path(config_dir).resolve()
    overrides, _ = split_hydra_overrides(overrides)
    parsed = _parse(overrides)
    _check_groups(config_dir, parsed)
    if multirun:
        presets = [o for o in overrides if o.split("=", 1)[0] == "ablation"]
        base = _compose(config_dir, presets, hydra_cfg=True)
        params = base.hydra.sweeper.params or {}
        sweep = [f"{k}={v}" for k, v in params.items()] + list(overrides)
        sweep_parsed = _parse(sweep)
        _check_groups(config_dir, sweep_parsed)
        try:
            jobs = BasicSweeper.split_arguments(sweep_parsed, None)[0]
        except Exception as err:  # noqa: BLE001 - Hydra's sweep errors, as one line
            raise ConfigError(f"cannot expand the sweep: {str(err).splitlines()[0]}") from None
    else:
        sweeps = [o for o in parsed if o.is_sweep_override()]
        if sweeps:
            raise ConfigError(
                f"{sweeps[0].input_line!r} is a sweep; a single run takes one value "
                "(use gradlab sweep for several)"
            )
        jobs = [list(overrides)]

    planned: list[PlannedJob] = []
    seen: dict[str, list[str]] = {}
    for job_overrides in jobs:
        cfg = _compose(config_dir, list(job_overrides), hydra_cfg=True)
        choices = cfg.hydra.runtime.choices
        plain = OmegaConf.to_container(cfg, resolve=False)
        plain.pop("hydra", None)
        plain = OmegaConf.to_container(OmegaConf.create(plain), resolve=True)
        ablation = choices.get("ablation") if multirun else None
        if not multirun and choices.get("ablation"):
            raise ConfigError(
                f"ablation={choices.get('ablation')!r} is a sweep preset; "
                f"use: gradlab sweep ablation={choices.get('ablation')}"
            )
        build_run_config(
            plain,
            task_name=str(choices.get("task")),
            ablation=ablation,
            task_cls=task_cls,
            muzero_cls=muzero_cls,
        )
        name = store.job_name(list(job_overrides))
        if name in seen:
            raise ConfigError(
                f"two jobs share the folder {name!r} ({seen[name]} and {list(job_overrides)}); "
                "give each a distinct value"
            )
        seen[name] = list(job_overrides)
        job_dir = store.ablation_dir(plain["runtime"]["results_dir"], ablation) / name
        go, reason = store.should_run(job_dir, force=force)
        planned.append(PlannedJob(name, tuple(job_overrides), job_dir, go, reason))
    _check_results(planned, ablation=ablation if planned else None, writable=check_writable)
    return planned
