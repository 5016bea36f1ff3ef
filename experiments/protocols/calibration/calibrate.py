"""``gradlab calibrate``: the calibration protocol of ``docs/stress_calibration.md`` as a command.

The baseline alone (``variant=none``) runs on calibration seeds, rung by rung up a ladder of
settings (:mod:`experiments.protocols.calibration.ladder`), each rung one sweep of the sweep
service (:mod:`experiments.launch.sweep`; the caller hands it in as ``run_sweep``, so that the
command line prints each sweep as ``gradlab sweep`` does), until the first rung
whose runs are unstable in at least ``rule`` of the seeds (or, with ``endpoint``
``lost_after_learning``, lost what they learned: outcome ``lost`` or ``diverged_after_learning``,
:mod:`experiments.verdicts.outcome`). The record of every rung's counts
(:mod:`experiments.protocols.calibration.record`) is written after each rung; the chosen rung
becomes a regime preset, ``conf/regime/calibrated/TASK.yaml`` (``regime=calibrated/TASK`` in any
sweep), with a copy beside the record. On a base regime other than ``tuned``, ``TASK`` reads
``TASK_BASE`` here and below (``catch_pseudocode``), and on a ladder other than ``default``
``TASK_LADDER`` (``breakout_harsh``), and with the endpoint ``lost_after_learning``
``TASK..._lost_after_learning`` (``catch_faithful_lost_after_learning``), so two calibrations never
share a folder or preset.

Layout under ``runtime.results_dir`` (R): the runs of every rung in ``R/TASK/calibration/`` (one
sweep folder, ablation ``calibration``; each rung's runs differ by their overrides, so
``gradlab table R/TASK/calibration`` shows every rung) and the record beside them
(``calibration.json``, ``calibration.md``, ``regime.yaml``). Running the same command again skips
finished runs, so a calibration resumes as a sweep does.

Everything is checked before anything runs or is written (:func:`prepare`, in
:mod:`experiments.protocols.calibration.plan`, re-exported here); this module runs the protocol and
writes the typed record (:class:`~experiments.protocols.calibration.record.CalibrationRecord`) and
the preset.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from experiments.jobs import (
    FINISHED,
    is_bookkeeping,
    parse_overrides,
    read_summary,
    write_text_atomic,
)
from experiments.protocols.calibration.counts import (
    DEFAULT_ENDPOINT,
    RungCounts,
    cannot_meet,
    count_rung,
    decide_after,
    meets_rule,
    run_class,
)
from experiments.protocols.calibration.plan import (
    ABLATION,
    DEFAULT_SEEDS,
    Calibration,
    check_endpoint_task,
    prepare,
)
from experiments.protocols.calibration.record import (
    CalibrationRecord,
    RungRecord,
    preset_text,
    write_record,
)
from experiments.protocols.calibration.reference import references_of
from experiments.report.runs import declared_threshold
from experiments.tasks import task_facts
from experiments.verdicts import ENDPOINT_CLASSES

__all__ = [
    "ABLATION",
    "DEFAULT_SEEDS",
    "Calibration",
    "Outcome",
    "check_endpoint_task",
    "prepare",
    "run_calibration",
]


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
    record: CalibrationRecord
    preset_kept: bool = False


def _summaries(cal: Calibration, index: int) -> list[Any]:
    """Rung ``index``'s runs' summaries as they are now (``None``: not run); for the endpoint
    ``lost_after_learning``, a finished run that recorded no threshold is re-measured against
    the declared one (:func:`_remeasured`)."""
    found = [(j.job_dir, read_summary(j.job_dir)) for j in cal.jobs[index]]
    if cal.endpoint == DEFAULT_ENDPOINT:
        return [s for _, s in found]
    return [
        _remeasured(s, path)
        if s is not None and s.status in FINISHED and s.threshold is None
        else s
        for path, s in found
    ]


def _remeasured(summary: Any, job_dir: Path) -> Any:
    """A summary that recorded no threshold (a run written before its task declared one), with
    the declared threshold (registry x reward scale; a MinAtar run's game from its
    ``config.yaml``) and ``reached_threshold`` / ``steps_to_threshold`` re-measured from its
    evaluations by :func:`experiments.report.runs.endpoints.first_reach`, as the table does;
    ``reached_threshold`` None (no outcome) where the job kept no evaluations. The file is not
    changed."""
    from experiments.report.runs import declared_threshold, first_reach, registered_task

    threshold = declared_threshold(registered_task(summary, job_dir), summary.reward_scale)
    if threshold is None:
        return summary
    stability = dict(summary.stability)
    at = first_reach(job_dir, threshold, diverged_step=stability.get("diverged_step"))
    if at is None:
        stability.update(reached_threshold=None, steps_to_threshold=None)
    else:
        reached = not math.isnan(at)
        stability.update(
            reached_threshold=int(reached), steps_to_threshold=int(at) if reached else None
        )
    return dataclasses.replace(summary, threshold=threshold, stability=stability)


def _rung_record(
    cal: Calibration,
    index: int,
    counts: RungCounts,
    meets: bool,
    summaries: Sequence[Any],
    *,
    stopped: bool = False,
) -> RungRecord:
    return RungRecord(
        name=cal.ladder.rungs[index].name,
        settings=dict(cal.settings[index]),
        counts=counts,
        meets_rule=meets,
        jobs=tuple(j.name for j in cal.jobs[index]),
        stopped_early=stopped,  # the seeds run could rule it out (cannot_meet)
        threshold_check=threshold_check(cal, summaries),
    )


def threshold_check(cal: Calibration, summaries: Sequence[Any]) -> str | None:
    """Where the task's threshold falls in a rung's finished runs (completed or diverged), as
    one line (:meth:`~experiments.protocols.calibration.reference.TaskReference.line`: R_ref,
    reached, held, near it, and its verdict), from the runs' summaries (``_summaries``: a run
    that recorded no threshold re-measured against the declared one); None for a task without a
    threshold or a rung with no such run yet."""
    threshold = task_facts(cal.task).threshold
    done = [s for s in summaries if s is not None and s.status in ("completed", "diverged")]
    if threshold is None or not done:
        return None
    done = [
        s
        if s.threshold is not None
        else dataclasses.replace(
            s, threshold=declared_threshold(cal.task, s.reward_scale), task=s.task or cal.task
        )
        for s in done
    ]
    classes = [run_class(s) for s in done]
    frame = pd.DataFrame({
        "task": cal.task,
        "final_return": [_number(s.stability.get("final_return")) for s in done],
        "diverged": [int(s.status == "diverged" or bool(s.stability.get("diverged")))
                     for s in done],
        "reward_scale": [_number(s.reward_scale, 1.0) for s in done],
        "threshold": [_number(s.threshold, threshold) for s in done],
        "learned": [int(c in ENDPOINT_CLASSES["learned"]) for c in classes],
        "outcome": classes,
        "wall_time_s": [_number(s.wall_time_s) for s in done],
    })  # fmt: skip
    return "; ".join(ref.line() for ref in references_of(frame).values())


def _number(value: Any, default: float = math.nan) -> float:
    return (
        float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default
    )


def _preset_header(cal: Calibration, index: int, counts: RungCounts) -> list[str]:
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
      run_sweep: runs one sweep given its overrides, in this process, through the sweep
        service (:func:`experiments.launch.sweep.prepare_sweep` and :func:`~experiments.launch.
        sweep.run_sweep`; ``cli/calibrate.py`` prints it as ``gradlab sweep`` does); finished
        runs are skipped by it, which is how a calibration resumes. A refusal (ConfigError)
        propagates; failed, unfinished or stopped runs show in the rung's counts.
      echo: where progress lines go.
      batch: runs at once (``gradlab sweep --jobs``). Given, a rung first runs the seeds that
        can rule it out (:func:`~experiments.protocols.calibration.record.decide_after`, in whole
        batches) and stops there when even the rest all unstable could not meet the rule
        (``cannot_meet``): the decision is the one all seeds would give, the record says which
        seeds ran. A rung that may meet the rule, and so the chosen one, always runs every
        seed. ``None``: every seed of a rung in one sweep.

    Returns:
      The :class:`Outcome`.
    """
    has_threshold = task_facts(cal.task).threshold is not None
    record = CalibrationRecord(
        task=cal.task,
        ladder=cal.ladder.name,
        ladder_description=cal.ladder.description,
        base_regime=cal.base_regime,
        rule=cal.rule,
        seeds=cal.seeds,
        extra_overrides=cal.extra,
        command=cal.command(),
        endpoint=cal.endpoint,
    )
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
        ran = all(s is not None and s.status in FINISHED for s in summaries[:first])
        if first < n and ran:
            if counts.finished < n and cannot_meet(counts, cal.rule, cal.endpoint):
                record = record.with_rung(
                    _rung_record(cal, index, counts, False, summaries, stopped=True)
                )
                echo(
                    f"rung {index + 1}/{total} {rung.name}: {_what(cal)} "
                    f"{counts.events(cal.endpoint)} of the {counts.finished} seeds run; the other "
                    f"{n - counts.finished} could not make it {cal.rule:g} of {n}: stopped there"
                )
                write_record(cal.folder, record)
                continue
            run_sweep(cal.sweep_overrides(index))
            summaries = _summaries(cal, index)
            counts = count_rung(summaries, has_threshold=has_threshold, endpoint=cal.endpoint)
        complete = counts.finished == counts.runs
        meets = complete and meets_rule(counts, cal.rule, cal.endpoint)
        record = record.with_rung(_rung_record(cal, index, counts, meets, summaries))
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
        check = record.rungs[-1].threshold_check
        if check:
            echo(f"rung {index + 1}/{total} {rung.name}: threshold: {check}")
        if not complete:
            record = dataclasses.replace(record, status="incomplete")
            write_record(cal.folder, record)
            return Outcome("incomplete", record)
        if meets:
            return _choose(cal, index, counts, record)
        write_record(cal.folder, record)
    record = dataclasses.replace(record, status="exhausted")
    write_record(cal.folder, record)
    return Outcome("exhausted", record)


def _what(cal: Calibration) -> str:
    """The rule's events in words."""
    return "unstable" if cal.endpoint == DEFAULT_ENDPOINT else "lost after learning"


def _choose(cal: Calibration, index: int, counts: RungCounts, record: CalibrationRecord) -> Outcome:
    text = preset_text(
        {**_plain(cal), **cal.settings[index]},
        header=_preset_header(cal, index, counts),
        base=cal.base_settings,
    )
    copy = cal.folder / "regime.yaml"
    write_text_atomic(copy, text)
    kept = cal.preset_path.exists() and not _same_preset(cal.preset_path.read_text(), text)
    if not kept:
        cal.preset_path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(cal.preset_path, text)
    record = record.chosen(index, regime=cal.regime, preset=cal.preset_path)
    write_record(cal.folder, record)
    return Outcome("chosen", record, preset_kept=kept)


def _plain(cal: Calibration) -> dict[str, str]:
    """The extra overrides that are settings, as ``key -> value``: not bookkeeping (``logger``,
    ``runtime``), not a config group's choice (which a regime preset cannot hold as a value)."""
    items = parse_overrides(cal.extra)
    return {
        k: v
        for k, v in items.items()
        if not is_bookkeeping(k) and not (cal.config_dir / k.split("/")[0]).is_dir()
    }


def _same_preset(old: str, new: str) -> bool:
    """Same settings (comments aside)."""
    import yaml

    return yaml.safe_load(old) == yaml.safe_load(new)
