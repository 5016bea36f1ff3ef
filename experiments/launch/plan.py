"""Before anything runs: the jobs a command line stands for, each validated, each with its folder
and whether it would be skipped.

:func:`plan` expands a sweep as Hydra's basic sweeper does (:func:`expand`: the ablation preset's
``hydra.sweeper.params``, then the command-line overrides, which replace a preset key or add one),
composes every job's config with Hydra's public compose API on gradlab's registered schema,
converts it into a :class:`~experiments.config.RunConfig` (so every bad name, key, type or range
is found here, as a :class:`~experiments.base.errors.ConfigError`, before a single folder is
written), and checks its folder for a finished result.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.base.errors import ConfigError
from experiments.base.private_api import warn_fallback
from experiments.config import composition_error
from experiments.jobs import (
    MUZERO,
    Job,
    ablation_dir,
    job_name,
    parse_overrides,
    read_summary,
    should_run,
)

__all__ = [
    "PlannedJob",
    "compose",
    "expand",
    "group_options",
    "plan",
    "split_hydra_overrides",
    "split_seed",
]


@dataclasses.dataclass(frozen=True)
class PlannedJob:
    """One job of a command line."""

    name: str  # the job's folder name
    overrides: tuple[str, ...]  # its key=value overrides, as Hydra passes them to the job
    job_dir: Path
    run: bool  # False: finished and would be skipped
    reason: str  # new | failed | unfinished | forced | completed | diverged | timeout
    logger_mode: str  # its typed config's logger.mode: offline | online | none

    @property
    def configuration(self) -> tuple[str, ...]:
        """Its overrides but the seed: the same for every seed of one configuration."""
        return split_seed(self.overrides)[1]


def split_seed(overrides: Sequence[str]) -> tuple[list[str], tuple[str, ...]]:
    """``(the plain seed=... overrides, the others)`` of a job's overrides, in their order."""
    seeds = [o for o in overrides if o.split("=", 1)[0] == "seed"]
    return seeds, tuple(o for o in overrides if o.split("=", 1)[0] != "seed")


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

    for item in overrides:
        parse_overrides([item])  # the key=value shape, with our message
    try:
        return OverridesParser.create().parse_overrides(list(overrides))
    except Exception as err:  # noqa: BLE001 - Hydra's parse errors, as one line
        raise composition_error(err) from None


def expand(overrides: Sequence[str]) -> list[list[str]]:
    """The jobs of a sweep: the cartesian product of its sweep overrides, in Hydra's order.

    As Hydra's basic sweeper does it: a key given twice keeps its last value but its first place
    (so a command-line override replaces an ablation preset's key), a discrete sweep
    (``a=1,2``, ``range(3)``, ``choice(...)``) becomes one ``key=value`` per value, the first key
    varying slowest.
    """
    by_key: dict[str, list[str]] = {}
    for override in _parse(overrides):
        key = override.get_key_element()
        if override.is_sweep_override():
            if not override.is_discrete_sweep():
                raise ConfigError(
                    f"{override.input_line!r} is an interval sweep, which needs an optimising "
                    "sweeper; list the values (a,b,c) or use range(...)"
                )
            by_key[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            by_key[key] = [f"{key}={override.get_value_element_as_str()}"]
    return [list(job) for job in itertools.product(*by_key.values())]


def compose(config_dir: str | Path, overrides: Sequence[str]) -> Any:
    """The config ``overrides`` compose to in ``config_dir`` (Hydra's public compose API, the
    ``hydra`` node included); Hydra's and OmegaConf's errors as one-line ConfigErrors. The one
    composition outside a plan (a study's record, a calibration ladder's base values); the
    caller registers the schema it composes on."""
    return _compose(Path(config_dir), list(overrides))


def _compose(config_dir: Path, overrides: list[str]) -> Any:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
            return compose("config", overrides=overrides, return_hydra_config=True)
    except ConfigError:
        raise
    except Exception as err:  # noqa: BLE001 - Hydra's and OmegaConf's errors, as one line
        raise composition_error(err) from None
    finally:
        GlobalHydra.instance().clear()


def _private_apply_overrides(overrides: list[Any], cfg: Any) -> None:
    """Hydra's own application of parsed value overrides to a composed config, in place: the
    private ``ConfigLoaderImpl._apply_overrides_to_config`` (its one use; see
    :class:`_Compositions`)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    ConfigLoaderImpl._apply_overrides_to_config(overrides, cfg)  # noqa: SLF001


class _Compositions:
    """The Hydra compositions of one plan.

    Jobs that differ only in a plain ``seed=`` override share one composition, which then takes
    the job's seed as Hydra applies a value override (:func:`_private_apply_overrides`: the same
    checks and errors). Hydra's compose is most of a plan's time (docs/performance_private.md);
    the seed names no config group, so nothing else of the config depends on it. The shared
    config is changed in place: use it before composing the next job.

    If the private call fails, the job is composed from its own overrides, Hydra's public compose.
    That composition decides the outcome: it gives the job's config or its error. When it succeeds
    where the private call failed, the private API is broken. After one
    :class:`~experiments.base.private_api.PrivateAPIWarning`, every later job is composed whole (the
    same configs, one composition per job).

    Args:
      config_dir: the config folder.
      hyd: Hydra's own overrides, added to every job's.
      apply_overrides: the private call (a stand-in in tests).
    """

    def __init__(
        self,
        config_dir: Path,
        hyd: Sequence[str],
        *,
        apply_overrides: Any = _private_apply_overrides,
    ) -> None:
        self._config_dir = config_dir
        self._hyd = list(hyd)
        self._apply = apply_overrides  # None once it has failed: whole compositions from then on
        self.shared: dict[tuple[str, ...], Any] = {}

    def job(self, overrides: list[str]) -> Any:
        """A job's config, as :func:`_compose` of its overrides (and Hydra's) gives it."""
        seeds, rest = split_seed(overrides)
        if len(seeds) != 1 or self._apply is None:
            return _compose(self._config_dir, [*overrides, *self._hyd])
        if rest not in self.shared:
            self.shared[rest] = _compose(self._config_dir, [*rest, *self._hyd])
        cfg = self.shared[rest]
        parsed = _parse(seeds)
        try:
            self._apply(parsed, cfg)
            return cfg
        except Exception as err:  # noqa: BLE001 - the job's own composition decides, below
            failure = err
        del self.shared[rest]  # half-applied, perhaps
        cfg = _compose(self._config_dir, [*overrides, *self._hyd])  # a bad seed raises here
        self._apply = None
        warn_fallback(
            "Hydra's ConfigLoaderImpl._apply_overrides_to_config",
            "a whole Hydra composition per job",
            "one composition per job instead of one per configuration",
            failure,
        )
        return cfg


def _compose_job(config_dir: Path, overrides: list[str], hyd: list[str], compositions: Any) -> Any:
    """A job's config: ``compositions.job(overrides)`` (:class:`_Compositions`, built on the same
    ``config_dir`` and ``hyd``). ``benchmarks/plan_cost.py`` swaps this function for one that
    composes every job whole (the public fallback's cost) to time the two side by side."""
    del config_dir, hyd
    return compositions.job(overrides)


_LAUNCHER_PACKAGES = {"ray": ("hydra_plugins.hydra_ray_launcher", "pip install -e '.[ray]'")}


def _check_launcher(cfg: Any) -> None:
    """A launcher whose plugin is not installed: refused before anything runs."""
    launcher = cfg.hydra.runtime.choices.get("hydra/launcher")
    if launcher in _LAUNCHER_PACKAGES:
        module, install = _LAUNCHER_PACKAGES[launcher]
        if not _importable(module):
            raise ConfigError(
                f"hydra/launcher={launcher} needs its Hydra plugin, which is not installed; "
                f"install it with: {install}"
            )


def _importable(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _nearest_folder(path: Path) -> Path:
    """``path``'s nearest existing self or parent, refused when it is not a folder (a file named
    as the results folder, or a file where one of its folders would go): a dry run says so too."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"results folder '{probe}' is not a folder; choose runtime.results_dir")
    return probe


def _check_writable(path: Path) -> None:
    """Refuses a results folder (or its nearest existing parent) that cannot or must not be
    written: no write permission, or no write bit at all (``chmod a-w``), which is honoured even
    for root, who could write anyway, since it is how a user protects finished results."""
    probe = _nearest_folder(path)
    if not os.access(probe, os.W_OK | os.X_OK) or probe.stat().st_mode & 0o222 == 0:
        raise ConfigError(
            f"results folder '{probe}' is read-only; make it writable (chmod u+w) or choose "
            "another runtime.results_dir"
        )


def _hydra_dir(overrides: Sequence[str], key: str) -> Path | None:
    """The folder a ``hydra.run.dir=`` (one run) or ``hydra.sweep.dir=`` (a sweep) override
    names, where the job really writes; None when not given."""
    for item in overrides:
        name, _, value = item.partition("=")
        if name.lstrip("+~") == key and value:
            return Path(value)
    return None


def _refuse_study_folder(job_dir: Path, ablation: str | None) -> None:
    """A job outside a study's own sweep never writes into a registered study's folder: a single
    run (or another ablation) whose folder lies inside one is refused; the study's runs come
    from ``gradlab study run`` (its sweep, checked against the record)."""
    for folder in job_dir.resolve().parents:
        record = folder / "preregistration.json"
        if record.is_file() and (ablation is None or folder.name != ablation):
            raise ConfigError(
                f"'{job_dir}' lies inside the registered study folder '{folder}'; its runs come "
                "from gradlab study run only: choose another folder"
            )


def _check_results(jobs: list[PlannedJob], *, ablation: str | None, writable: bool) -> None:
    """The folders of the jobs that would run must be writable (when ``writable``), and every
    job folder must hold a job of this ablation (a copied or renamed folder of another ablation
    would otherwise be skipped as finished, wrongly)."""
    checked: set[Path] = set()
    for job in jobs:
        if job.run and not writable and job.job_dir.parent not in checked:
            checked.add(job.job_dir.parent)
            _nearest_folder(job.job_dir.parent)  # a dry run checks the folder is one, not its bits
        for folder in (job.job_dir.parent.parent, job.job_dir.parent, job.job_dir):
            if not (writable and job.run) or folder in checked:
                continue
            if folder.exists() or folder == job.job_dir.parent:
                checked.add(folder)
                _check_writable(folder)
        summary = read_summary(job.job_dir)
        if summary is not None and summary.ablation != ablation:
            theirs = summary.ablation or "none (a single run)"
            raise ConfigError(
                f"'{job.job_dir}' holds a job of ablation {theirs!r}, not {ablation!r}; "
                "a results folder holds one ablation: choose another runtime.results_dir"
            )


def plan(
    overrides: Sequence[str],
    *,
    multirun: bool,
    config_dir: str | Path,
    job: Job = MUZERO,
    force: bool = False,
    check_writable: bool = True,
) -> list[PlannedJob]:
    """Expands, validates and locates the jobs of a command line; writes nothing.

    Args:
      overrides: the command line's overrides: ``ablation=...``, ``seed=0``, ... and Hydra's own
        (``hydra/launcher=...``), which are validated too but name no job.
      multirun: a sweep (the ablation preset's params plus the overrides) or one run.
      config_dir: the config folder.
      job: the job whose settings schema the ``muzero`` section is checked against.
      force: plan finished jobs to run again.
      check_writable: refuse a read-only results folder when a job would run (off for a dry run).

    Returns:
      The jobs, in Hydra's launch order.

    Raises:
      ConfigError: an unknown ablation, variant, placement, task, launcher or key, a wrong type,
        an out-of-range value, in any job; a read-only results folder; a job folder holding a
        job of another ablation.
    """
    from experiments.config import register_schema, to_run_config

    register_schema(job.muzero_schema)
    config_dir = Path(config_dir).resolve()
    task, hyd = split_hydra_overrides(overrides)
    parsed = _parse(task)
    if multirun:
        presets = [o for o in task if o.split("=", 1)[0] == "ablation"]
        base = _compose(config_dir, [*presets, *hyd])
        params = base.hydra.sweeper.params or {}
        jobs = expand([f"{k}={v}" for k, v in params.items()] + list(task))
    else:
        sweeps = [o for o in parsed if o.is_sweep_override()]
        if sweeps:
            raise ConfigError(
                f"{sweeps[0].input_line!r} is a sweep; a single run takes one value "
                "(use gradlab sweep for several)"
            )
        jobs = [list(task)]

    planned: list[PlannedJob] = []
    seen: dict[str, list[str]] = {}
    compositions = _Compositions(config_dir, hyd)
    ablation = None
    for job_overrides in jobs:
        cfg = _compose_job(config_dir, job_overrides, hyd, compositions)
        choices = cfg.hydra.runtime.choices
        _check_launcher(cfg)
        ablation = choices.get("ablation") if multirun else None
        if not multirun and choices.get("ablation"):
            raise ConfigError(
                f"ablation={choices.get('ablation')!r} is a sweep preset; "
                f"use: gradlab sweep ablation={choices.get('ablation')}"
            )
        run = to_run_config(cfg)
        job.validate(run)
        name = job_name(list(job_overrides))
        if name in seen:
            raise ConfigError(
                f"two jobs share the folder {name!r} ({seen[name]} and {list(job_overrides)}); "
                "give each a distinct value"
            )
        seen[name] = list(job_overrides)
        job_dir = ablation_dir(run.runtime.results_dir, ablation) / name
        given = _hydra_dir(hyd, "hydra.sweep.dir" if multirun else "hydra.run.dir")
        if given is not None:
            job_dir = given / name if multirun else given
        _refuse_study_folder(job_dir, ablation)
        go, reason = should_run(job_dir, force=force)
        planned.append(PlannedJob(name, tuple(job_overrides), job_dir, go, reason, run.logger.mode))
    _check_results(planned, ablation=ablation, writable=check_writable)
    return planned
