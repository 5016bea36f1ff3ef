"""The pre-registration record: a study's design pinned in its results folder before any run.

:func:`register` writes ``<results_dir>/<ablation>/preregistration.json`` holding the study file
as written and as parsed, the text of every config file it names, each arm's resolved run config
(Hydra's composition, as :class:`~experiments.config.RunConfig`, without ``runtime`` and the
seed), the planned power, the git commit and the time. It refuses a folder that already holds a
run (registration comes first) and never overwrites a record.

:func:`check` compares the current design with the record before any arm runs: the study file
must parse to the same design, and every registered key of every arm's config must hold the same
value. Keys added to the config since (a new setting whose default keeps the old behaviour) are
returned as notes, not refused: the table's replication check covers them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import subprocess
from pathlib import Path

import yaml

from experiments.errors import ConfigError
from experiments.study.design import Study
from experiments.study.power import fisher_power

__all__ = ["RECORD", "check", "read_record", "record_path", "register", "study_folder"]

RECORD = "preregistration.json"


def study_folder(study: Study, results_dir: str | Path) -> Path:
    return Path(results_dir) / study.ablation


def record_path(study: Study, results_dir: str | Path) -> Path:
    return study_folder(study, results_dir) / RECORD


def _files(study: Study, config_dir: Path) -> dict[str, str]:
    names = [
        f"study/{study.name}.yaml",
        f"ablation/{study.ablation}.yaml",
        f"regime/{study.regime}.yaml",
        f"task/{study.task}.yaml",
        "muzero/default.yaml",
        "config.yaml",
    ]
    return {n: (config_dir / n).read_text(encoding="utf-8") for n in names}


def _flatten(value: object, prefix: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: value}


def arm_configs(study: Study, config_dir: Path) -> dict[str, dict[str, object]]:
    """Each arm's resolved run config (first seed; seed and runtime left out), flat keys."""
    from experiments.config import register_schema, to_run_config
    from experiments.jobs.job import MUZERO
    from experiments.plan import compose

    register_schema(MUZERO.muzero_schema)
    out = {}
    for arm in study.arms:
        overrides = [
            f"task={study.task}",
            f"regime={study.regime}",
            f"variant={arm.variant}",
            *arm.overrides,
            *study.overrides,
            f"seed={study.seeds.start}",
        ]
        run = to_run_config(compose(config_dir, overrides))
        flat = _flatten(json.loads(json.dumps(dataclasses.asdict(run))))  # as stored
        out[arm.label] = {
            k: v
            for k, v in flat.items()
            if not k.startswith(("runtime.", "logger.")) and k != "seed"
        }
    return out


def _git(config_dir: Path) -> dict[str, object]:
    def run(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=config_dir, capture_output=True, text=True, check=False
        )
        return done.stdout.strip()

    return {"commit": run("rev-parse", "HEAD") or None, "dirty": bool(run("status", "--short"))}


def _design(study: Study) -> dict[str, object]:
    d = dataclasses.asdict(study)
    d["seeds"] = [study.seeds.start, study.seeds.stop]
    d["calibration_seeds"] = [study.calibration_seeds.start, study.calibration_seeds.stop]
    return json.loads(json.dumps(d))


def read_record(study: Study, results_dir: str | Path) -> dict | None:
    path = record_path(study, results_dir)
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        raise ConfigError(f"corrupt pre-registration record {str(path)!r}") from None


def register(study: Study, *, config_dir: str | Path, results_dir: str | Path) -> Path:
    """Writes the record; refuses a folder with runs and an existing record."""
    config_dir = Path(config_dir).resolve()
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
    plan = study.planning
    power = None
    if {"baseline_rate", "arm_rate"} <= plan.keys():
        power = fisher_power(
            float(plan["baseline_rate"]),
            float(plan["arm_rate"]),
            len(study.seeds),
            alpha=study.primary.alpha,
        )
    files = _files(study, config_dir)
    configs = arm_configs(study, config_dir)
    record = {
        "study": study.name,
        "registered_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git": _git(config_dir),
        "design": _design(study),
        "planned_power": power,
        "files": files,
        "files_sha256": {n: hashlib.sha256(t.encode()).hexdigest() for n, t in files.items()},
        "arm_configs": configs,
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
    return notes


def design_yaml(study: Study) -> str:
    return yaml.safe_dump(_design(study), sort_keys=False)


def check_folder(folder: str | Path, *, config_dir: str | Path) -> list[str]:
    """A sweep into a study's folder (one holding a record) checks the study first: its design
    and its arms' settings must still be those registered. Nothing for any other folder."""
    from experiments.study.design import load_study

    path = Path(folder) / RECORD
    if not path.is_file():
        return []
    try:
        name = json.loads(path.read_text(encoding="utf-8"))["study"]
    except (json.JSONDecodeError, KeyError):
        raise ConfigError(f"corrupt pre-registration record {str(path)!r}") from None
    study = load_study(name, config_dir)
    return check(study, config_dir=config_dir, results_dir=Path(folder).parent)
