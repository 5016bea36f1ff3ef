"""``gradlab calibrate``: the calibration protocol of ``docs/stress_calibration.md`` as a command.

The baseline alone (``variant=none``) runs on calibration seeds, rung by rung up a ladder of
settings (:mod:`experiments.ladder`), each rung one sweep through the project's sweep machinery
(the caller hands it in as ``run_sweep``: ``gradlab sweep``'s own function), until the first rung
whose runs are unstable in at least ``rule`` of the seeds (or, with ``endpoint``
``lost_after_learning``, lost what they learned: outcome ``lost`` or ``diverged_after_learning``,
:mod:`experiments.outcome`). The record of every rung's counts
(:mod:`experiments.calibration_record`) is written after each rung; the chosen rung becomes a
regime preset, ``conf/regime/calibrated/TASK.yaml`` (``regime=calibrated/TASK`` in any sweep),
with a copy beside the record. On a base regime other than ``tuned``, ``TASK`` reads
``TASK_BASE`` here and below (``catch_pseudocode``), and on a ladder other than ``default``
``TASK_LADDER`` (``breakout_harsh``), and with the endpoint ``lost_after_learning``
``TASK..._lost_after_learning`` (``catch_faithful_lost_after_learning``), so two calibrations
never share a folder or preset.

Layout under ``runtime.results_dir`` (R): the runs of every rung in ``R/TASK/calibration/`` (one
sweep folder, ablation ``calibration``; each rung's runs differ by their overrides, so
``gradlab table R/TASK/calibration`` shows every rung) and the record beside them
(``calibration.json``, ``calibration.md``, ``regime.yaml``). Running the same command again skips
finished runs, so a calibration resumes as a sweep does.

Everything is checked before anything runs or is written (:func:`prepare`): the task (a
registered one), the ladder, the base regime, the seeds (never a study's), the rule, and every
rung's jobs as ``gradlab sweep`` would plan them.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from experiments import plan as planning
from experiments.calibration_record import (
    DEFAULT_ENDPOINT,
    cannot_meet,
    check_endpoint,
    check_rule,
    count_rung,
    counts_record,
    decide_after,
    meets_rule,
    preset_text,
    record_version,
    write_record,
)
from experiments.errors import ConfigError, unknown_choice
from experiments.jobs import store
from experiments.jobs.job import MUZERO, Job
from experiments.ladder import Ladder, base_values, load_ladder, rung_settings, times_keys
from experiments.seeds import check_disjoint, parse_seeds, preset_seeds
from experiments.tasks.registry import TaskFacts, task_facts

__all__ = [
    "ABLATION",
    "DEFAULT_SEEDS",
    "Calibration",
    "Outcome",
    "check_endpoint_task",
    "prepare",
    "run_calibration",
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
        ``lost_after_learning`` (:data:`~experiments.calibration_record.ENDPOINTS`).
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
    jobs: tuple[tuple[planning.PlannedJob, ...], ...]
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
        return store.ablation_dir(self.results_dir / self.name, ABLATION)

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
        from experiments.hydra_app import CONF_DIR

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
    """``endpoint`` (:data:`~experiments.calibration_record.ENDPOINTS`), refused in one line for
    ``lost_after_learning`` on a task without a competence threshold (nothing is learned or
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
        from experiments.tasks.registry import task_names

        raise ConfigError(
            f"gradlab calibrate needs task=NAME; choose one of: {', '.join(task_names())}"
        )
    facts = task_facts(own["task"])
    task = facts.name
    endpoint = check_endpoint_task(endpoint, facts)
    ladder = load_ladder(config_dir, own.get("ladder", DEFAULT_LADDER))
    base_regime = own.get("regime", DEFAULT_BASE)
    regimes = planning.group_options(config_dir, "regime")
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
            planning.plan(
                _rung_overrides(cal, s, cal.seeds), multirun=True, config_dir=config_dir, job=job
            )
        )
        for s in settings
    )
    return dataclasses.replace(cal, settings=settings, jobs=jobs)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What a calibration ended with.

    Attributes:
      status: ``chosen``, ``exhausted`` (no rung met the rule) or ``incomplete`` (a rung's runs
        did not all finish).
      record: the record written (``calibration.json``).
      preset_kept: a different ``conf/regime/calibrated/TASK.yaml`` was there and was kept (the
        new preset is only beside the record).
    """

    status: str
    record: dict[str, Any]
    preset_kept: bool = False


def _summaries(cal: Calibration, index: int) -> list[Any]:
    """Rung ``index``'s runs' summaries as they are now (``None``: not run); for the endpoint
    ``lost_after_learning``, a finished run that recorded no threshold is re-measured against
    the declared one (:func:`_remeasured`)."""
    found = [(j.job_dir, store.read_summary(j.job_dir)) for j in cal.jobs[index]]
    if cal.endpoint == DEFAULT_ENDPOINT:
        return [s for _, s in found]
    return [
        _remeasured(s, path)
        if s is not None and s.status in store.FINISHED and s.threshold is None
        else s
        for path, s in found
    ]


def _remeasured(summary: Any, job_dir: Path) -> Any:
    """A summary that recorded no threshold (a run written before its task declared one), with
    the declared threshold (registry x reward scale) and ``reached_threshold`` /
    ``steps_to_threshold`` re-measured from its evaluations (``metrics.jsonl``, else
    ``curves.csv.gz``), crossings after the diverging step left out, as
    :mod:`experiments.report.endpoints` does; ``reached_threshold`` None (no outcome) where the
    job kept no evaluations. The file is not changed."""
    import math

    from experiments.jobs.curves import read_curves
    from experiments.report.endpoints import declared_threshold

    threshold = declared_threshold(summary.task, summary.reward_scale)
    if threshold is None:
        return summary
    curves = read_curves(job_dir)
    stability = dict(summary.stability)
    if curves.empty:
        stability.update(reached_threshold=None, steps_to_threshold=None)
    else:
        bad = stability.get("diverged_step")
        limit = math.inf if bad is None else float(bad)
        hits = [
            int(step)
            for step, value in zip(curves["step"], curves["eval/return"], strict=True)
            if math.isfinite(float(value)) and float(value) >= threshold and step <= limit
        ]
        stability.update(
            reached_threshold=1 if hits else 0, steps_to_threshold=hits[0] if hits else None
        )
    return dataclasses.replace(summary, threshold=threshold, stability=stability)


def _rung_record(
    cal: Calibration, index: int, counts: Any, meets: bool, *, stopped: bool = False
) -> dict[str, Any]:
    record = {
        "name": cal.ladder.rungs[index].name,
        "settings": cal.settings[index],
        "counts": counts_record(counts, cal.endpoint),
        "meets_rule": meets,
        "jobs": [j.name for j in cal.jobs[index]],
    }
    if stopped:
        record["stopped_early"] = True  # the seeds run could rule it out (cannot_meet)
    return record


def _preset_header(cal: Calibration, index: int, counts: Any) -> list[str]:
    rung = cal.ladder.rungs[index]
    seeds = f"{cal.seeds[0]}-{cal.seeds[-1]}"
    verdict = (
        f"variant none unstable in {counts.unstable}/{counts.runs} of seeds {seeds} "
        f"({counts.diverged} diverged, {counts.collapsed} collapsed); rule >= {cal.rule:g}."
    )
    if cal.endpoint != DEFAULT_ENDPOINT:
        verdict = (
            f"variant none lost what it learned in {counts.lost_after_learning}/{counts.runs} of "
            f"seeds {seeds} ({counts.learned} learned; {counts.unstable} unstable); rule "
            f"(--endpoint {cal.endpoint}) >= {cal.rule:g}."
        )
    lines = [
        f"Calibrated for task={cal.task} by gradlab calibrate: ladder {cal.ladder.name}, rung "
        f"{index + 1} ({rung.name}) on top of regime {cal.base_regime}:",
        verdict,
        f"Record: {cal.folder / 'calibration.md'}",
    ]
    settings = _plain(cal)
    if settings:
        text = " ".join(f"{k}={v}" for k, v in settings.items())
        lines.append(f"Calibrated with {text} (in the settings below).")
    return lines


def run_calibration(
    cal: Calibration,
    run_sweep: Callable[[list[str]], None],
    *,
    echo: Callable[[str], None] = print,
    batch: int | None = None,
) -> Outcome:
    """Runs the ladder rung by rung until the rule is met; writes the record and the preset.

    Args:
      cal: from :func:`prepare`.
      run_sweep: runs one sweep given its overrides (``gradlab sweep``'s function); finished
        runs are skipped by it, which is how a calibration resumes.
      echo: where progress lines go.
      batch: runs at once (``gradlab sweep --jobs``). Given, a rung first runs the seeds that
        can rule it out (:func:`~experiments.calibration_record.decide_after`, in whole
        batches) and stops there when even the rest all unstable could not meet the rule
        (``cannot_meet``): the decision is the one all seeds would give, the record says which
        seeds ran. A rung that may meet the rule, and so the chosen one, always runs every
        seed. ``None``: every seed of a rung in one sweep.

    Returns:
      The :class:`Outcome`.
    """
    has_threshold = task_facts(cal.task).threshold is not None
    record: dict[str, Any] = {
        "version": record_version(cal.endpoint),
        "task": cal.task,
        "ladder": cal.ladder.name,
        "ladder_description": cal.ladder.description,
        "base_regime": cal.base_regime,
        "rule": cal.rule,
        **({} if cal.endpoint == DEFAULT_ENDPOINT else {"endpoint": cal.endpoint}),
        "seeds": list(cal.seeds),
        "extra_overrides": list(cal.extra),
        "command": cal.command(),
        "rungs": [],
        "status": "running",
        "chosen_rung": None,
        "regime": None,
        "preset": None,
    }
    total = len(cal.ladder.rungs)
    for index, rung in enumerate(cal.ladder.rungs):
        text = " ".join(f"{k}={v}" for k, v in cal.settings[index].items())
        echo(f"rung {index + 1}/{total} {rung.name}: {text} ({len(cal.seeds)} seeds)")
        n = len(cal.seeds)
        first = n if batch is None else decide_after(n, cal.rule, batch)
        run_sweep(cal.sweep_overrides(index, cal.seeds[:first]))
        summaries = _summaries(cal, index)
        counts = count_rung(summaries, has_threshold=has_threshold, endpoint=cal.endpoint)
        # a first part that did not finish (stopped, failed) is an unfinished rung, below
        ran = all(s is not None and s.status in store.FINISHED for s in summaries[:first])
        if first < n and ran:
            if counts.finished < n and cannot_meet(counts, cal.rule, cal.endpoint):
                record["rungs"].append(_rung_record(cal, index, counts, False, stopped=True))
                echo(
                    f"rung {index + 1}/{total} {rung.name}: {_what(cal)} "
                    f"{counts.events(cal.endpoint)} of the {counts.finished} seeds run; the other "
                    f"{n - counts.finished} could not make it {cal.rule:g} of {n}: stopped there"
                )
                write_record(cal.folder, record)
                continue
            run_sweep(cal.sweep_overrides(index))
            counts = count_rung(
                _summaries(cal, index), has_threshold=has_threshold, endpoint=cal.endpoint
            )
        complete = counts.finished == counts.runs
        meets = complete and meets_rule(counts, cal.rule, cal.endpoint)
        record["rungs"].append(_rung_record(cal, index, counts, meets))
        never = "n/a" if counts.never_learned is None else counts.never_learned
        lost = ""
        if cal.endpoint != DEFAULT_ENDPOINT:
            lost = (
                f"lost after learning {counts.lost_after_learning}/{counts.runs} (learned "
                f"{counts.learned}, no outcome {counts.no_outcome}); "
            )
        echo(
            f"rung {index + 1}/{total} {rung.name}: {lost}unstable {counts.unstable}/{counts.runs} "
            f"(diverged {counts.diverged}, collapsed {counts.collapsed}, never learned {never})"
            + ("" if complete else f"; {counts.runs - counts.finished} runs did not finish")
        )
        if not complete:
            record["status"] = "incomplete"
            write_record(cal.folder, record)
            return Outcome("incomplete", record)
        if meets:
            return _choose(cal, index, counts, record)
        write_record(cal.folder, record)
    record["status"] = "exhausted"
    write_record(cal.folder, record)
    return Outcome("exhausted", record)


def _what(cal: Calibration) -> str:
    """The rule's events in words."""
    return "unstable" if cal.endpoint == DEFAULT_ENDPOINT else "lost after learning"


def _choose(cal: Calibration, index: int, counts: Any, record: dict[str, Any]) -> Outcome:
    text = preset_text(
        {**_plain(cal), **cal.settings[index]},
        header=_preset_header(cal, index, counts),
        base=cal.base_settings,
    )
    copy = cal.folder / "regime.yaml"
    store.write_text_atomic(copy, text)
    kept = cal.preset_path.exists() and not _same_preset(cal.preset_path.read_text(), text)
    if not kept:
        cal.preset_path.parent.mkdir(parents=True, exist_ok=True)
        store.write_text_atomic(cal.preset_path, text)
    record.update(
        status="chosen", chosen_rung=index + 1, regime=cal.regime, preset=str(cal.preset_path)
    )
    write_record(cal.folder, record)
    return Outcome("chosen", record, preset_kept=kept)


def _plain(cal: Calibration) -> dict[str, str]:
    """The extra overrides that are settings, as ``key -> value``: not bookkeeping (``logger``,
    ``runtime``), not a config group's choice (which a regime preset cannot hold as a value)."""
    items = store.parse_overrides(cal.extra)
    return {
        k: v
        for k, v in items.items()
        if not store.is_bookkeeping(k) and not (cal.config_dir / k.split("/")[0]).is_dir()
    }


def _same_preset(old: str, new: str) -> bool:
    """Same settings (comments aside)."""
    import yaml

    return yaml.safe_load(old) == yaml.safe_load(new)
