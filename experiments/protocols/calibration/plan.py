"""A calibration checked and planned, before anything runs: :func:`prepare` and the
:class:`Calibration` it returns (the protocol that runs it:
:mod:`experiments.protocols.calibration.calibrate`).

Everything is checked before anything runs or is written: the task (a registered one), the
ladder, the base regime, the seeds (never a study's), the rule, the endpoint, and every rung's
jobs as ``gradlab sweep`` would plan them. A calibration's name (:attr:`Calibration.name`)
gives its folder, record and preset: ``TASK`` on the default base regime, ladder and endpoint,
with ``_BASE``, ``_LADDER`` and ``_lost_after_learning`` added where those differ.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.base.errors import ConfigError, unknown_choice
from experiments.jobs import MUZERO, Job, ablation_dir
from experiments.launch import PlannedJob, group_options
from experiments.launch.plan import plan
from experiments.protocols.calibration.counts import DEFAULT_ENDPOINT, check_endpoint, check_rule
from experiments.protocols.calibration.ladder import (
    Ladder,
    base_values,
    load_ladder,
    rung_settings,
    times_keys,
)
from experiments.protocols.seeds import check_disjoint, parse_seeds, preset_seeds
from experiments.tasks import TaskFacts, task_facts

__all__ = [
    "ABLATION",
    "DEFAULT_SEEDS",
    "Calibration",
    "check_endpoint_task",
    "prepare",
]

ABLATION = "calibration"
"""The sweep preset every rung runs under (``conf/ablation/calibration.yaml``)."""
DEFAULT_SEEDS = "100-109"
PRESET_GROUP = "calibrated"
DEFAULT_BASE = "tuned"
"""Chosen regimes go to ``conf/regime/calibrated/TASK.yaml``."""
DEFAULT_LADDER = "default"
_OWN_KEYS = ("task", "ladder", "regime")


@dataclasses.dataclass(frozen=True)
class Calibration:
    """A checked calibration, ready to run.

    Attributes:
      task: the registered task.
      ladder: the ladder.
      seeds: the calibration seeds.
      rule: the fraction of seeds a rung's unstable runs must reach.
      base_regime: the regime the ladder's rungs add to.
      extra: the other overrides, given to every run (``logger=none``, ``muzero.training_steps=``).
      results_dir: R, ``runtime.results_dir``.
      config_dir: the config folder.
      settings: each rung's overrides (``key -> value``), rungs before it included.
      jobs: each rung's planned jobs.
      base_settings: the base regime's own settings (its YAML), which a chosen preset repeats.
      endpoint: what the rule counts: ``unstable`` (diverged or collapsed) or
        ``lost_after_learning`` (:data:`~experiments.protocols.calibration.record.ENDPOINTS`).
    """

    task: str
    ladder: Ladder
    seeds: tuple[int, ...]
    rule: float
    base_regime: str
    extra: tuple[str, ...]
    results_dir: Path
    config_dir: Path
    settings: tuple[dict[str, str], ...]
    jobs: tuple[tuple[PlannedJob, ...], ...]
    base_settings: dict[str, Any]
    endpoint: str = DEFAULT_ENDPOINT

    @property
    def name(self) -> str:
        """``TASK`` on the default base regime (``tuned``), ladder (``default``) and endpoint
        (``unstable``); a base regime other than ``tuned`` adds ``_BASE`` (``catch_pseudocode``),
        a ladder other than ``default`` adds ``_LADDER`` (``breakout_harsh``) and the endpoint
        ``lost_after_learning`` adds ``_lost_after_learning``: two calibrations of one task never
        share a folder, a record or a preset."""
        parts = [self.task]
        if self.base_regime != DEFAULT_BASE:
            parts.append(self.base_regime.replace("/", "_"))
        if self.ladder.name != DEFAULT_LADDER:
            parts.append(self.ladder.name)
        if self.endpoint != DEFAULT_ENDPOINT:
            parts.append(self.endpoint)
        return "_".join(parts)

    @property
    def folder(self) -> Path:
        """The runs' and the record's folder, ``R/NAME/calibration`` (:attr:`name`)."""
        return ablation_dir(self.results_dir / self.name, ABLATION)

    @property
    def regime(self) -> str:
        """The chosen regime's name, ``calibrated/NAME`` (:attr:`name`)."""
        return f"{PRESET_GROUP}/{self.name}"

    @property
    def preset_path(self) -> Path:
        return self.config_dir / "regime" / PRESET_GROUP / f"{self.name}.yaml"

    def sweep_overrides(self, index: int, seeds: Sequence[int] | None = None) -> list[str]:
        """``gradlab sweep``'s overrides for rung ``index`` (0-based), on ``seeds`` (default:
        all the calibration's seeds)."""
        return _rung_overrides(self, self.settings[index], self.seeds if seeds is None else seeds)

    def command(self) -> str:
        """The command line that runs this calibration."""
        seeds = f"{self.seeds[0]}-{self.seeds[-1]}"
        if self.seeds != tuple(range(self.seeds[0], self.seeds[-1] + 1)):
            seeds = ",".join(map(str, self.seeds))
        words = [
            "gradlab", "calibrate", f"task={self.task}", f"ladder={self.ladder.name}",
            f"regime={self.base_regime}", *self.extra, f"runtime.results_dir={self.results_dir}",
            "--seeds", seeds, "--rule", f"{self.rule:g}",
        ]  # fmt: skip
        if self.endpoint != DEFAULT_ENDPOINT:  # unstable's command reads as before
            words += ["--endpoint", self.endpoint]
        from experiments.launch import CONF_DIR

        if self.config_dir != Path(CONF_DIR).resolve():
            words += ["--config-dir", str(self.config_dir)]
        return shlex.join(words)


def _rung_overrides(cal: Calibration, settings: dict[str, str], seeds: Sequence[int]) -> list[str]:
    return [
        f"ablation={ABLATION}",
        f"task={cal.task}",
        f"regime={cal.base_regime}",
        *cal.extra,
        *(f"{k}={v}" for k, v in settings.items()),
        "variant=none",
        f"seed={','.join(map(str, seeds))}",
        f"runtime.results_dir={cal.results_dir / cal.name}",
    ]


def _split(overrides: Sequence[str]) -> tuple[dict[str, str], list[str], Path]:
    """``(task/ladder/regime choices, the other overrides, runtime.results_dir)``."""
    own: dict[str, str] = {}
    extra: list[str] = []
    results_dir = Path("results")
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"override {item!r} is not of the form key=value (e.g. task=catch)")
        if key in _OWN_KEYS:
            own[key] = value
        elif key == "runtime.results_dir":
            results_dir = Path(value)
        elif key in ("variant", "seed", "ablation") or key.startswith("variant."):
            raise ConfigError(
                f"{item!r} cannot be given: a calibration runs variant=none on its own seeds "
                "(--seeds) under ablation=calibration"
            )
        else:
            extra.append(item)
    return own, extra, results_dir


def check_endpoint_task(endpoint: str, facts: TaskFacts) -> str:
    """``endpoint`` (:data:`~experiments.protocols.calibration.record.ENDPOINTS`), refused in one
    line for ``lost_after_learning`` on a task without a competence threshold (nothing is learned or
    lost without one)."""
    check_endpoint(endpoint)
    if endpoint == "lost_after_learning" and facts.threshold is None:
        raise ConfigError(
            f"--endpoint lost_after_learning needs a competence threshold, and task "
            f"{facts.name!r} declares none (experiments/tasks/registry.py); use --endpoint "
            "unstable"
        )
    return endpoint


def prepare(
    overrides: Sequence[str],
    *,
    seeds: str = DEFAULT_SEEDS,
    study_seeds: str | None = None,
    rule: float | str = 0.4,
    endpoint: str = DEFAULT_ENDPOINT,
    config_dir: str | Path,
    job: Job = MUZERO,
) -> Calibration:
    """Checks a calibration's inputs and plans every rung's jobs; writes nothing.

    Args:
      overrides: ``task=NAME`` (required), ``ladder=NAME`` (default ``default``), ``regime=NAME``
        (the base, default ``tuned``), ``runtime.results_dir=R``, and any other override, given
        to every run.
      seeds: the calibration seeds (``100-109``, ``100,101``, ``range(100,110)``).
      study_seeds: seeds of a study the calibration must not share, besides those of
        ``conf/study/`` and ``conf/ablation/`` presets.
      rule: the fraction of seeds, in [0, 1].
      endpoint: what the rule counts, ``unstable`` or ``lost_after_learning``.
      config_dir: the config folder.
      job: the job (a stand-in in tests).

    Raises:
      ConfigError: an unregistered task, unknown ladder or regime, seeds shared with a study, a
        rule outside [0, 1], an unknown endpoint (or ``lost_after_learning`` on a task without a
        threshold), or any rung's bad override.
    """
    config_dir = Path(config_dir).resolve()
    own, extra, results_dir = _split(overrides)
    if "task" not in own:
        from experiments.tasks import task_names

        raise ConfigError(
            f"gradlab calibrate needs task=NAME; choose one of: {', '.join(task_names())}"
        )
    facts = task_facts(own["task"])
    task = facts.name
    endpoint = check_endpoint_task(endpoint, facts)
    ladder = load_ladder(config_dir, own.get("ladder", DEFAULT_LADDER))
    base_regime = own.get("regime", DEFAULT_BASE)
    regimes = group_options(config_dir, "regime")
    if base_regime not in regimes:
        raise unknown_choice("regime", base_regime, regimes)
    rule = check_rule(rule)
    calibration_seeds = parse_seeds(seeds, what="--seeds")
    studies = dict(preset_seeds(config_dir, skip=[ABLATION]))
    if study_seeds is not None:
        studies["--study-seeds"] = parse_seeds(study_seeds, what="--study-seeds")
    check_disjoint(calibration_seeds, studies)

    from omegaconf import OmegaConf

    base_yaml = OmegaConf.load(config_dir / "regime" / f"{base_regime}.yaml")
    cal = Calibration(
        task=task,
        ladder=ladder,
        seeds=calibration_seeds,
        rule=rule,
        base_regime=base_regime,
        extra=tuple(extra),
        results_dir=results_dir,
        config_dir=config_dir,
        settings=(),
        jobs=(),
        base_settings=dict(OmegaConf.to_container(base_yaml) or {}),
        endpoint=endpoint,
    )
    base = base_values(
        config_dir, [f"task={task}", f"regime={base_regime}", *extra], times_keys(ladder), job
    )
    settings = tuple(rung_settings(ladder, i, base) for i in range(len(ladder.rungs)))
    jobs = tuple(
        tuple(
            plan(_rung_overrides(cal, s, cal.seeds), multirun=True, config_dir=config_dir, job=job)
        )
        for s in settings
    )
    return dataclasses.replace(cal, settings=settings, jobs=jobs)
