"""The pre-registration record: a study's design pinned in its results folder before any run.

:func:`register` writes ``<results_dir>/<ablation>/preregistration.json`` holding the study file as
written and as parsed, the text of every config file it names, each arm's resolved run config
(Hydra's composition, as :class:`~experiments.config.RunConfig`, without ``runtime`` and the seed),
the planned power, the code's identity (``code``: git commit, dirty flag, the SHA-256 of
``experiments/`` and ``conf/``; :mod:`experiments.jobs.identity`), the distribution and version of
each arm that is an installed plug-in's variant (``plugins``, only where one is), the endpoints'
definitions' version (``endpoints``: :data:`ENDPOINTS_VERSION`) and the time. It refuses a folder
that already holds a run (registration comes first), a tree with uncommitted changes in the paths
that define a run (:data:`~experiments.jobs.identity.PINNED_PATHS`; a tree without git is registered
with ``commit`` None), and never overwrites a record.

:func:`check` compares the current design with the record before any arm runs: the study file must
parse to the same design, every registered key of every arm's config must hold the same value, and
every pinned file (the study file, the ablation preset, the regime, the task, the MuZero defaults,
config.yaml) must hash as pinned; a file whose text changed but whose YAML parses to the same value
(a comment) is a note; a pinned plug-in must be installed at its pinned version. Keys added to the
config since (a new setting whose default keeps the old behaviour) are returned as notes, not
refused: the table's replication check covers them. :func:`check_jobs` refuses a job outside the
design: a seed out of its range, a variant that is none of its arms, or a setting an arm does not
register.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from collections.abc import Sequence
from pathlib import Path

import yaml

from experiments.base.errors import ConfigError
from experiments.gradients import VARIANTS
from experiments.jobs import code_identity, dirty_paths, file_sha256, flat_config
from experiments.protocols.study.design import VALUE_ENDPOINTS, Arm, Study
from experiments.protocols.study.power import equivalence_power, fisher_power
from experiments.report.runs import ENDPOINTS_VERSION

__all__ = [
    "ENDPOINTS_VERSION",
    "RECORD",
    "check",
    "check_folder",
    "check_jobs",
    "check_plugins",
    "design_seeds",
    "pinned_plugins",
    "planned_power_across",
    "read_record",
    "record_path",
    "register",
    "study_folder",
]

RECORD = "preregistration.json"


def study_folder(study: Study, results_dir: str | Path) -> Path:
    return Path(results_dir) / study.ablation


def record_path(study: Study, results_dir: str | Path) -> Path:
    return study_folder(study, results_dir) / RECORD


def _task_files(config_dir: Path, task: str) -> list[str]:
    """``task/TASK.yaml`` and the task presets it composes (``defaults: [minatar]``)."""
    names = [f"task/{task}.yaml"]
    raw = yaml.safe_load((config_dir / names[0]).read_text(encoding="utf-8")) or {}
    for item in raw.get("defaults", ()) if isinstance(raw, dict) else ():
        if (
            isinstance(item, str)
            and item != "_self_"
            and (config_dir / "task" / f"{item}.yaml").is_file()
        ):
            names.append(f"task/{item}.yaml")
    return names


def _files(study: Study, config_dir: Path) -> dict[str, str]:
    tasks: list[str] = []
    for stratum in study.strata:
        if study.across_tasks:  # single-task records pinned their task file alone
            tasks += [n for n in _task_files(config_dir, stratum.task) if n not in tasks]
        else:
            tasks.append(f"task/{stratum.task}.yaml")
    names = [
        f"study/{study.name}.yaml",
        f"ablation/{study.ablation}.yaml",
        f"regime/{study.regime}.yaml",
        *tasks,
        "muzero/default.yaml",
        "config.yaml",
    ]
    return {n: (config_dir / n).read_text(encoding="utf-8") for n in names}


def arm_configs(study: Study, config_dir: Path) -> dict[str, dict[str, object]]:
    """Each arm's resolved run config (first seed; seed and runtime left out), flat keys; in a
    study across tasks, each arm's in each task (``TASK: LABEL``)."""
    from experiments.config import register_schema, to_run_config
    from experiments.jobs import MUZERO
    from experiments.launch import compose

    register_schema(MUZERO.muzero_schema)
    out = {}
    for stratum in study.strata:
        for arm in study.arms:
            overrides = [
                f"task={stratum.task}",
                f"regime={study.regime}",
                f"variant={arm.variant}",
                *arm.overrides,
                *study.overrides,
                f"seed={stratum.seeds.start}",
            ]
            config = flat_config(to_run_config(compose(config_dir, overrides)))  # as stored
            out[study.arm_key(arm, stratum.task)] = config
    return out


_ACROSS_KEYS = ("tasks", "family", "normalisation", "normalisation_source", "final_window",
                "dropped")  # fmt: skip
"""Design keys of a study across tasks (and of a newer single-task one that declares a final
window); records written before them hold none."""


def _design(study: Study) -> dict[str, object]:
    d = dataclasses.asdict(study)
    d["seeds"] = [study.seeds.start, study.seeds.stop]
    d["calibration_seeds"] = [study.calibration_seeds.start, study.calibration_seeds.stop]
    d["planning"] = study.planning.to_json()  # the keys the YAML declared, as registered
    for key in ("margin", "margin_reason"):  # records written before margins existed
        if d["primary"].get(key) is None:
            d["primary"].pop(key, None)
    if not d.get("faithful"):  # records written before the claim existed
        d.pop("faithful", None)
    if study.across_tasks:
        d["tasks"] = [{"task": s.task, "seeds": [s.seeds.start, s.seeds.stop]}
                      for s in study.tasks]  # fmt: skip
        for contrast in d["family"]["pooled"]:
            for key in ("margin", "margin_reason"):
                if contrast.get(key) is None:
                    contrast.pop(key)
        for key in ("task", "seeds", "primary"):  # the family holds them, per task or pooled
            d.pop(key)
    for key in _ACROSS_KEYS:  # a key a design does not declare is not written
        if d.get(key) in (None, (), [], {}):
            d.pop(key, None)
    return json.loads(json.dumps(d))


def design_seeds(design: dict) -> dict[str, range]:
    """A record's registered seeds per task (``""`` for a single-task record that names none)."""
    if "tasks" in design:
        return {str(t["task"]): range(int(t["seeds"][0]), int(t["seeds"][1]))
                for t in design["tasks"]}  # fmt: skip
    start, stop = design["seeds"]
    return {str(design.get("task", "")): range(int(start), int(stop))}


FAITHFUL = {"muzero.network.normalisation": "minmax", "muzero.unroll_steps": 5}
"""What a study claiming MuZero's own setting (``faithful: true``) must run with: the
hidden-state min-max normalisation kept and the paper's K = 5 unroll, in every arm."""


def check_faithful(study: Study, configs: dict[str, dict[str, object]]) -> None:
    """Refuses a ``faithful`` study whose arms do not run with :data:`FAITHFUL`'s settings."""
    if not study.faithful:
        return
    for arm, config in configs.items():
        for key, want in FAITHFUL.items():
            if config.get(key) != want:
                raise ConfigError(
                    f"study {study.name!r} claims to be faithful, but arm {arm!r} runs with "
                    f"{key}={config.get(key)!r} (faithful: {want!r}); regime {study.regime!r} "
                    "is not MuZero's own setting"
                )


def check_fresh_seeds(study: Study, results_dir: str | Path) -> None:
    """Refuses seeds that any run under ``results_dir`` used, or that another registered study
    declared: a confirmatory study's seeds are fresh (runs are deterministic per seed, so a seen
    seed replays a seen result). Names the first clash."""
    root = Path(results_dir)
    wanted = {seed for stratum in study.strata for seed in stratum.seeds}
    for path in sorted(root.rglob("summary.json")):
        try:
            seed = json.loads(path.read_text(encoding="utf-8")).get("seed")
        except (OSError, ValueError):
            continue
        if isinstance(seed, int) and seed in wanted:
            raise ConfigError(
                f"seed {seed} of study {study.name!r} was used by the run "
                f"{str(path.parent)!r}; a confirmatory study uses seeds no run has used"
            )
    for path in sorted(root.rglob(RECORD)):
        try:
            other = json.loads(path.read_text(encoding="utf-8"))["design"]
            theirs = {s for seeds in design_seeds(other).values() for s in seeds}
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            continue
        clash = wanted & theirs
        if clash and other.get("name") != study.name:
            raise ConfigError(
                f"seeds {min(clash)}..{max(clash)} of study {study.name!r} are registered by "
                f"study {other.get('name')!r} ({str(path)!r}); a confirmatory study uses fresh "
                "seeds"
            )


def check_normalisation(study: Study) -> None:
    """Refuses to register a normalised endpoint without every task's R_ref and R_rand (they are
    declared before the runs, from the calibration: ``gradlab study plan --calibration``)."""
    if not study.across_tasks or all(
        p.endpoint not in VALUE_ENDPOINTS for p in study.family.pooled
    ):
        return
    missing = [s.task for s in study.strata if s.task not in study.normalisation]
    if missing:
        raise ConfigError(
            f"study {study.name!r} declares normalised_return but no normalisation for task "
            f"{missing[0]!r}; expected normalisation: {{TASK: {{r_ref: R, r_rand: R}}}} for every "
            "task, from its calibration (gradlab study plan --calibration DIR)"
        )


def read_record(study: Study, results_dir: str | Path) -> dict | None:
    path = record_path(study, results_dir)
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        raise ConfigError(f"corrupt pre-registration record {str(path)!r}") from None


def register(
    study: Study,
    *,
    config_dir: str | Path,
    results_dir: str | Path,
    code_root: str | Path | None = None,
) -> Path:
    """Writes the record; refuses a folder with runs, an existing record and a dirty tree.

    Args:
      study: the design.
      config_dir: the config folder (``conf/``).
      results_dir: the results root; the record goes to ``results_dir/<ablation>/``.
      code_root: the folder holding ``experiments/`` and ``conf/`` whose identity is pinned;
        default the parent of ``config_dir``.
    """
    config_dir = Path(config_dir).resolve()
    root = Path(code_root) if code_root is not None else config_dir.parent
    dirty = dirty_paths(root)
    if dirty:
        shown = ", ".join(dirty[:5]) + (f" (+{len(dirty) - 5} more)" if len(dirty) > 5 else "")
        raise ConfigError(
            f"the tree {str(root)!r} has uncommitted changes in {shown}; commit them first: a "
            "study is registered from committed code"
        )
    folder = study_folder(study, results_dir)
    path = folder / RECORD
    if path.exists():
        record = read_record(study, results_dir)
        when = record.get("registered_at") if record else "?"
        raise ConfigError(
            f"study {study.name!r} is already registered ({str(path)!r}, {when}); "
            "a record is never overwritten"
        )
    if folder.is_dir() and any(folder.glob("*/summary.json")):
        raise ConfigError(
            f"{str(folder)!r} already holds runs; a study is registered before any of its runs"
        )
    rates = study.planning.rates
    power = None
    if study.across_tasks:
        power = planned_power_across(study)
    elif rates is not None and study.primary.margin is not None:
        # an equivalence design: the TOST's power, over the strata's summed counts when the
        # study is one stratum of a pooled test (planning.strata, as gradlab pool --margin)
        power = equivalence_power(
            float(rates[0]),
            float(rates[1]),
            len(study.seeds) * (study.planning.strata or 1),
            margin=study.primary.margin,
            alpha=study.primary.alpha,
        )
    elif rates is not None:
        power = fisher_power(
            float(rates[0]), float(rates[1]), len(study.seeds), alpha=study.primary.alpha
        )
    check_fresh_seeds(study, results_dir)
    home = Path(config_dir).parent / "results"  # the repository's own runs, whatever folder
    if home.is_dir() and home.resolve() != Path(results_dir).resolve():
        check_fresh_seeds(study, home)
    check_normalisation(study)
    files = _files(study, config_dir)
    configs = arm_configs(study, config_dir)
    check_faithful(study, configs)
    code = code_identity(root)
    plugins = pinned_plugins(study)
    record = {
        "study": study.name,
        "registered_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "endpoints": ENDPOINTS_VERSION,
        "git": {"commit": code.commit, "dirty": code.dirty},
        "code": code.to_json(),
        "design": _design(study),
        "planned_power": power,
        "files": files,
        "files_sha256": {n: file_sha256(t) for n, t in files.items()},
        "arm_configs": configs,
        **({"plugins": plugins} if plugins else {}),
    }
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def check(study: Study, *, config_dir: str | Path, results_dir: str | Path) -> list[str]:
    """Refuses a design that differs from its record; returns notes on keys added since."""
    record = read_record(study, results_dir)
    if record is None:
        raise ConfigError(
            f"study {study.name!r} is not registered in {str(study_folder(study, results_dir))!r}; "
            f"register it first: gradlab study register {study.name}"
        )
    if record["design"] != _design(study):
        changed = sorted(
            k for k in record["design"] if record["design"][k] != _design(study).get(k)
        )
        raise ConfigError(
            f"study {study.name!r} differs from its pre-registration record in: "
            f"{', '.join(changed)}; a registered design is not changed (declare a new study)"
        )
    notes = []
    now = arm_configs(study, Path(config_dir).resolve())
    for arm, registered in record["arm_configs"].items():
        current = now.get(arm, {})
        differ = sorted(k for k, v in registered.items() if current.get(k, object()) != v)
        if differ:
            raise ConfigError(
                f"arm {arm!r} of study {study.name!r} no longer runs as registered: "
                f"{', '.join(f'{k}={registered[k]!r} -> {current.get(k)!r}' for k in differ)}"
            )
        added = sorted(set(current) - set(registered))
        if added:
            notes.append(f"arm {arm!r}: settings added since registration: {', '.join(added)}")
    notes.extend(check_pinned(record, config_dir=Path(config_dir), where=study.name))
    check_plugins(record, where=study.name)
    return notes


def pinned_plugins(study: Study) -> dict[str, dict[str, str]]:
    """The plug-ins among the study's arms (:mod:`experiments.base.plugins`), pinned in its record
    as ``{variant: {"distribution", "version", "entry_point"}}``: their code is outside
    ``experiments/`` (the code identity), so the distribution's version is what pins it."""
    pinned = {}
    for variant in sorted({arm.variant for arm in study.arms}):
        plugin = VARIANTS.plugin(variant)
        if plugin is not None:
            pinned[variant] = {
                "distribution": plugin.distribution,
                "version": plugin.version,
                "entry_point": plugin.value,
            }
    return pinned


def check_plugins(record: dict, *, where: str) -> None:
    """Refuses to run a study whose record pins a plug-in that is no longer installed at the
    pinned distribution and version."""
    for variant, pin in sorted((record.get("plugins") or {}).items()):
        plugin = VARIANTS.plugin(variant)
        now = "not installed" if plugin is None else plugin.source
        if plugin is None or (plugin.distribution, plugin.version) != (
            pin.get("distribution"),
            pin.get("version"),
        ):
            raise ConfigError(
                f"plug-in variant {variant!r} of study {where!r} was registered from "
                f"{pin.get('distribution')} {pin.get('version')}; installed now: {now}; a "
                "registered study runs its pinned plug-in (install that version)"
            )


def check_pinned(record: dict, *, config_dir: Path, where: str) -> list[str]:
    """Refuses a pinned file whose text no longer hashes as its record pins it (the preset
    included), unless its YAML still parses to the same value (a comment or layout change: a
    note). Also refuses a record whose stored file texts do not hash to its pinned hashes."""
    notes = []
    check_stored(record, where=where)
    for name, sha in sorted(record["files_sha256"].items()):
        text = record["files"][name]
        path = config_dir / name
        if not path.is_file():
            raise ConfigError(f"pinned file conf/{name} of study {where!r} no longer exists")
        now = path.read_text(encoding="utf-8")
        if file_sha256(now) == sha:
            continue
        if _same_yaml(text, now):
            notes.append(f"conf/{name} differs from its pinned text in comments or layout only")
            continue
        raise ConfigError(
            f"pinned file conf/{name} of study {where!r} has changed since registration (sha256 "
            f"{sha[:12]}... registered, {file_sha256(now)[:12]}... now); a registered study runs "
            "its pinned files only"
        )
    return notes


def check_stored(record: dict, *, where: str) -> None:
    """Refuses a record whose stored file texts do not hash to its pinned hashes (an edit)."""
    pinned = record.get("files_sha256")
    texts = record.get("files")
    if not isinstance(pinned, dict) or not isinstance(texts, dict) or not pinned:
        raise ConfigError(f"pre-registration record of study {where!r} pins no files")
    for name, sha in sorted(pinned.items()):
        text = texts.get(name)
        if not isinstance(text, str) or file_sha256(text) != sha:
            raise ConfigError(
                f"pre-registration record of study {where!r}: the stored text of {name} does not "
                f"hash to its pinned sha256 {str(sha)[:12]}...: the record was edited"
            )


def _same_yaml(a: str, b: str) -> bool:
    try:
        return yaml.safe_load(a) == yaml.safe_load(b)
    except yaml.YAMLError:
        return False


def _settings(overrides: Sequence[str]) -> dict[str, str]:
    """A job's overrides as ``key -> value`` (the last of a key wins), bookkeeping keys
    (``ablation``, ``logger``, ``runtime``, ``hydra``) left out: they never change a number."""
    from experiments.jobs import is_bookkeeping

    out = {}
    for item in overrides:
        key, _, value = item.partition("=")
        if not is_bookkeeping(key):
            out[key] = value
    return out


def _arm_settings(study: Study, arm: Arm, task: str | None = None) -> dict[str, str]:
    """The settings of ``arm``'s jobs (in ``task``: a study across tasks' strata)."""
    return _settings(
        [f"task={study.task if task is None else task}", f"regime={study.regime}",
         f"variant={arm.variant}", *arm.overrides, *study.overrides]
    )  # fmt: skip


def planned_power_across(study: Study) -> dict[str, float] | None:
    """A study across tasks' planned powers of its first pooled contrast (a value endpoint):
    ``{"difference": ..., "equivalence": ...}`` at ``planning.effect`` and ``planning.sd`` with
    the smallest task's runs per arm; None where the planning declares no sd."""
    from experiments.protocols.study.value_power import welch_pooled_power

    plan, contrast = study.planning, study.primary
    if plan.sd is None or contrast.endpoint not in VALUE_ENDPOINTS:
        return None
    n = min(len(s.seeds) for s in study.strata)
    sds = [plan.sd] * len(study.strata)
    out = {}
    if plan.effect is not None:
        out["difference"] = welch_pooled_power(sds, n, effect=plan.effect, alpha=contrast.alpha)
    if contrast.margin is not None:
        out["equivalence"] = welch_pooled_power(
            sds, n, effect=0.0, alpha=contrast.alpha, margin=contrast.margin
        )
    return out or None


def check_jobs(study: Study, jobs: Sequence[Sequence[str]]) -> None:
    """Refuses the first job outside the study's design, in one line naming it.

    Args:
      study: the registered design.
      jobs: each job's overrides (``key=value``), as planned.

    Raises:
      ConfigError: a seed outside ``study.seeds``, a variant that is none of the arms, or a
        setting (an override that changes numbers) that the job's arm does not register.
    """
    arms = {a.variant: a for a in study.arms}
    names = [s.task for s in study.strata]
    for overrides in jobs:
        settings = _settings(overrides)
        task = settings.get("task")
        stratum = study.stratum(task) if study.across_tasks else study.strata[0]
        if stratum is None:
            raise ConfigError(
                f"task={task} is not a task of study {study.name} (tasks: {', '.join(names)}); "
                "a registered study runs its registered tasks only"
            )
        seeds = f"{stratum.seeds.start}-{stratum.seeds.stop - 1}"
        seed = settings.pop("seed", None)
        if (seed is None or not seed.isdigit() or str(int(seed)) != seed
                or int(seed) not in stratum.seeds):  # fmt: skip
            where = f" in task {stratum.task}" if study.across_tasks else ""
            raise ConfigError(
                f"seed={seed} is outside the design of study {study.name} (seeds {seeds}{where});"
                " a registered study runs its registered seeds only, each written once as an "
                "integer"
            )
        variant = settings.get("variant")
        if variant not in arms:
            raise ConfigError(
                f"variant={variant} is not an arm of study {study.name!r} (arms: "
                f"{', '.join(arms)}); a registered study runs its registered arms only"
            )
        want = _arm_settings(study, arms[variant], stratum.task)
        for key in sorted(set(settings) | set(want)):
            if settings.get(key) != want.get(key):
                got = f"{key}={settings[key]}" if key in settings else f"no {key}={want[key]}"
                expected = f"{key}={want[key]}" if key in want else f"no {key}"
                raise ConfigError(
                    f"{got} is outside the design of study {study.name} (arm "
                    f"{arms[variant].label!r} registers {expected}); a registered study runs "
                    "its registered settings only"
                )


def design_yaml(study: Study) -> str:
    return yaml.safe_dump(_design(study), sort_keys=False)


def check_folder(
    folder: str | Path, *, config_dir: str | Path, jobs: Sequence[Sequence[str]] = ()
) -> list[str]:
    """A sweep into a study's folder (one holding a record) checks the study first: its design,
    its arms' settings and its pinned files must still be those registered, and every job
    (``jobs``: each one's overrides) must be one of the design's. Nothing for any other
    folder."""
    from experiments.protocols.study.design import load_study

    path = Path(folder) / RECORD
    if not path.is_file():
        return []
    try:
        name = json.loads(path.read_text(encoding="utf-8"))["study"]
    except (json.JSONDecodeError, KeyError):
        raise ConfigError(f"corrupt pre-registration record {str(path)!r}") from None
    study = load_study(name, config_dir)
    notes = check(study, config_dir=config_dir, results_dir=Path(folder).parent)
    check_jobs(study, jobs)
    return notes
