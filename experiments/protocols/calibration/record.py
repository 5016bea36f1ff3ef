"""A calibration's record (``calibration.json`` and ``calibration.md``), typed, and the regime
preset it derives.

:class:`CalibrationRecord` holds what the protocol
(:mod:`experiments.protocols.calibration.calibrate`) decided, rung
by rung (:class:`RungRecord`, each with its
:class:`~experiments.protocols.calibration.counts.RungCounts`);
:meth:`CalibrationRecord.to_json` writes it in the very shape, key order and bytes of the record
before it was typed (tests/protocols/test_calibration_json.py compares against files written
then), and
:meth:`CalibrationRecord.from_json` reads any committed record back to those bytes.

Record versions: 1, the ``unstable`` records (written byte for byte as before the endpoint
existed); 2, a record with an ``endpoint`` key and the counts ``learned``,
``lost_after_learning`` and ``no_outcome`` (:func:`record_version`). Both are read by
:func:`record_markdown`. The counts and the rule: :mod:`experiments.protocols.calibration.counts`
(re-exported here).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.base.errors import ConfigError
from experiments.jobs import write_json_atomic, write_text_atomic
from experiments.protocols.calibration.counts import (
    DEFAULT_ENDPOINT,
    ENDPOINTS,
    RungCounts,
    cannot_meet,
    check_endpoint,
    check_rule,
    count_rung,
    decide_after,
    meets_rule,
    run_class,
)

__all__ = [
    "DEFAULT_ENDPOINT",
    "ENDPOINTS",
    "RECORD_VERSION",
    "STATUSES",
    "CalibrationRecord",
    "RungCounts",
    "RungRecord",
    "cannot_meet",
    "check_endpoint",
    "check_rule",
    "count_rung",
    "counts_record",
    "decide_after",
    "meets_rule",
    "preset_text",
    "record_markdown",
    "record_version",
    "run_class",
    "write_record",
]

RECORD_VERSION = 2
"""The newest record version (module docstring); ``unstable`` records are still version 1."""

STATUSES = ("running", "chosen", "exhausted", "incomplete")
"""A record's status: rungs still to run, a rung chosen, the ladder run out, a rung unfinished."""

_NEW_COUNTS = ("learned", "lost_after_learning", "no_outcome")  # version 2 only
_COUNT_KEYS = tuple(f.name for f in dataclasses.fields(RungCounts))


def record_version(endpoint: str) -> int:
    """A record's version: 1 for ``unstable`` (as before the endpoint existed), else 2."""
    return 1 if check_endpoint(endpoint) == "unstable" else RECORD_VERSION


def counts_record(counts: RungCounts, endpoint: str) -> dict[str, Any]:
    """A rung's counts as the record holds them: without the version-2 counts for ``unstable``
    (its records stay byte for byte as before)."""
    out = dataclasses.asdict(counts)
    if check_endpoint(endpoint) == "unstable":
        for key in _NEW_COUNTS:
            out.pop(key)
    return out


@dataclasses.dataclass(frozen=True)
class RungRecord:
    """One rung as the record holds it.

    Attributes:
      name: the rung's name in its ladder.
      settings: the rung's overrides, ``key -> value`` text, rungs before it included.
      counts: its runs' verdicts.
      meets_rule: whether the rung met the rule (every run finished and enough events).
      jobs: its runs' job names, one per seed.
      stopped_early: the seeds run could already rule it out, so the others never ran
        (:func:`~experiments.protocols.calibration.counts.cannot_meet`).
      unrecorded: count keys a record written before they were counted does not hold (left out
        again when written back; read as ``None``).
      threshold_check: where the task's threshold falls in the rung's runs, one line
        (:meth:`~experiments.protocols.calibration.reference.TaskReference.line`: reached, held,
        near it, floor / ceiling / noise-sensitive / usable); None for a record written before
        it was checked or a rung without finished runs.
    """

    name: str
    settings: dict[str, str]
    counts: RungCounts
    meets_rule: bool
    jobs: tuple[str, ...]
    stopped_early: bool = False
    unrecorded: tuple[str, ...] = ()
    threshold_check: str | None = None

    def to_json(self, endpoint: str) -> dict[str, Any]:
        """The rung's JSON object (``stopped_early`` only where true)."""
        counts = counts_record(self.counts, endpoint)
        for key in self.unrecorded:
            counts.pop(key, None)
        out: dict[str, Any] = {
            "name": self.name,
            "settings": dict(self.settings),
            "counts": counts,
            "meets_rule": self.meets_rule,
            "jobs": list(self.jobs),
        }
        if self.stopped_early:
            out["stopped_early"] = True
        if self.threshold_check is not None:
            out["threshold_check"] = self.threshold_check
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], endpoint: str) -> RungRecord:
        """A rung of a record read back (:meth:`to_json`'s inverse)."""
        counts = dict(data["counts"])
        unknown = sorted(set(counts) - set(_COUNT_KEYS))
        if unknown:
            raise ConfigError(
                f"calibration record rung {data.get('name')!r} has unknown counts {unknown}; "
                f"known: {', '.join(_COUNT_KEYS)}"
            )
        dropped = _NEW_COUNTS if endpoint == DEFAULT_ENDPOINT else ()
        unrecorded = tuple(k for k in _COUNT_KEYS if k not in counts and k not in dropped)
        return cls(
            name=str(data["name"]),
            settings=dict(data["settings"]),
            counts=RungCounts(**counts),
            meets_rule=bool(data["meets_rule"]),
            jobs=tuple(data["jobs"]),
            stopped_early=bool(data.get("stopped_early", False)),
            unrecorded=unrecorded,
            threshold_check=data.get("threshold_check"),
        )


@dataclasses.dataclass(frozen=True)
class CalibrationRecord:
    """``calibration.json``: what a calibration ran and decided.

    Attributes:
      task: the registered task.
      ladder: the ladder's name.
      ladder_description: the ladder's description.
      base_regime: the regime the rungs add to.
      rule: the fraction of seeds a rung's events must reach.
      seeds: the calibration seeds.
      extra_overrides: the other overrides every run had.
      command: the command line that runs (and resumes) the calibration.
      endpoint: what the rule counts (:data:`ENDPOINTS`); written only when not ``unstable``.
      rungs: the rungs decided so far, in ladder order.
      status: one of :data:`STATUSES`.
      chosen_rung: the chosen rung, 1-based; ``None`` unless ``chosen``.
      regime: the chosen regime's name (``calibrated/NAME``); ``None`` unless ``chosen``.
      preset: the preset's path, as text; ``None`` unless ``chosen``.
    """

    task: str
    ladder: str
    ladder_description: str
    base_regime: str
    rule: float
    seeds: tuple[int, ...]
    extra_overrides: tuple[str, ...]
    command: str
    endpoint: str = DEFAULT_ENDPOINT
    rungs: tuple[RungRecord, ...] = ()
    status: str = "running"
    chosen_rung: int | None = None
    regime: str | None = None
    preset: str | None = None

    def __post_init__(self) -> None:
        check_endpoint(self.endpoint)
        if self.status not in STATUSES:
            raise ConfigError(
                f"calibration record status {self.status!r}; one of: {', '.join(STATUSES)}"
            )

    @property
    def version(self) -> int:
        """The record's version (:func:`record_version`)."""
        return record_version(self.endpoint)

    def with_rung(self, rung: RungRecord) -> CalibrationRecord:
        """This record with ``rung`` appended."""
        return dataclasses.replace(self, rungs=(*self.rungs, rung))

    def chosen(self, index: int, *, regime: str, preset: str | Path) -> CalibrationRecord:
        """This record with rung ``index`` (0-based) chosen, as ``regime`` at ``preset``."""
        return dataclasses.replace(
            self, status="chosen", chosen_rung=index + 1, regime=regime, preset=str(preset)
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON object, keys in the order every record has had (``endpoint`` only for a
        version-2 record)."""
        head: dict[str, Any] = {
            "version": self.version,
            "task": self.task,
            "ladder": self.ladder,
            "ladder_description": self.ladder_description,
            "base_regime": self.base_regime,
            "rule": self.rule,
        }
        if self.endpoint != DEFAULT_ENDPOINT:
            head["endpoint"] = self.endpoint
        return {
            **head,
            "seeds": list(self.seeds),
            "extra_overrides": list(self.extra_overrides),
            "command": self.command,
            "rungs": [r.to_json(self.endpoint) for r in self.rungs],
            "status": self.status,
            "chosen_rung": self.chosen_rung,
            "regime": self.regime,
            "preset": self.preset,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CalibrationRecord:
        """A record read back (``json.load`` of ``calibration.json``).

        Raises:
          ConfigError: a version that does not match the endpoint, an unknown status, endpoint
            or count.
        """
        endpoint = str(data.get("endpoint", DEFAULT_ENDPOINT))
        if data.get("version") != record_version(endpoint):
            raise ConfigError(
                f"calibration record version {data.get('version')!r} does not match endpoint "
                f"{endpoint!r} (version {record_version(endpoint)})"
            )
        return cls(
            task=str(data["task"]),
            ladder=str(data["ladder"]),
            ladder_description=str(data["ladder_description"]),
            base_regime=str(data["base_regime"]),
            rule=float(data["rule"]),
            seeds=tuple(int(s) for s in data["seeds"]),
            extra_overrides=tuple(str(o) for o in data["extra_overrides"]),
            command=str(data["command"]),
            endpoint=endpoint,
            rungs=tuple(RungRecord.from_json(r, endpoint) for r in data["rungs"]),
            status=str(data["status"]),
            chosen_rung=data["chosen_rung"],
            regime=data["regime"],
            preset=data["preset"],
        )


def preset_text(
    settings: Mapping[str, Any], *, header: Sequence[str], base: Mapping[str, Any] | None = None
) -> str:
    """A ``# @package _global_`` regime preset: ``base`` (the base regime's own settings) with
    ``settings`` (``key -> override text``) on top, under comment lines ``header``."""
    from omegaconf import OmegaConf

    merged = OmegaConf.create(dict(base or {}))
    merged.merge_with(OmegaConf.from_dotlist([f"{k}={v}" for k, v in settings.items()]))
    lines = ["# @package _global_", *(f"# {line}" for line in header)]
    body = OmegaConf.to_yaml(merged) if merged else ""
    return "\n".join(lines) + "\n" + body


def _norm(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def _cell(value: Any) -> str:
    return "n/a" if value is None else str(value)


def record_markdown(record: CalibrationRecord) -> str:
    """``calibration.md``: the rungs' counts as a table, the rule and the outcome (a version-1
    record counts unstable runs; a version-2 one, lost after learning)."""
    seeds = record.seeds
    lost = record.endpoint != DEFAULT_ENDPOINT
    what = (
        "lost what they learned (reached the task's threshold, then fell back below it by the end "
        f"or diverged: `--endpoint {record.endpoint}`)"
        if lost
        else "are unstable"
    )
    lines = [
        f"# Calibration of `{record.task}` (ladder `{record.ladder}`)",
        "",
        f"`variant=none` alone, base regime `{record.base_regime}`, seeds "
        f"{seeds[0]}-{seeds[-1]} ({len(seeds)}); rule: the first rung whose runs {what} in at "
        f"least {record.rule:g} of the seeds. Each rung keeps the settings of the rungs before it.",
        "",
    ]
    if lost:
        lines += [
            "| rung | settings | lost after learning | learned | unstable | diverged | collapsed "
            "| never learned | no outcome | finished | median grad norm | not diverged |",
            "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
        ]
    else:
        lines += [
            "| rung | settings | unstable | diverged | collapsed | never learned | finished "
            "| median grad norm | not diverged |",
            "|---|---|--:|--:|--:|--:|--:|--:|--:|",
        ]
    lines += [_row(i, rung, lost=lost) for i, rung in enumerate(record.rungs, 1)]
    lines += ["", _LOST_NOTE if lost else _UNSTABLE_NOTE, ""]
    checks = [(i, r.threshold_check) for i, r in enumerate(record.rungs, 1) if r.threshold_check]
    if checks:
        lines += ["Where the threshold falls in each rung's runs (floor: every run held it; "
                  "ceiling: none reached it; noise-sensitive: a tenth or more end within ±5% "
                  "of it):", ""]  # fmt: skip
        lines += [f"- rung {i}: {check}" for i, check in checks] + [""]
    lines += [_outcome(record), ""]
    if record.extra_overrides:
        lines += [f"Every run also had: `{' '.join(record.extra_overrides)}`.", ""]
    lines += ["Command:", "", "```bash", record.command, "```", ""]
    return "\n".join(lines)


_UNSTABLE_NOTE = (
    "Median grad norm: the median over the rung's runs of each run's median global gradient "
    "norm, a clip arm's threshold by Study 1's rule (docs/studies.md); not diverged: the "
    "same over the runs that did not diverge (Study 3's amendment (e)), n/a for a record "
    "written before it was counted."
)
_LOST_NOTE = (
    "Lost after learning: outcome `lost` (reached the threshold, final-window mean below it) "
    "or `diverged_after_learning`; learned: reached the threshold before diverging (held, "
    "lost or diverged after); no outcome: finished runs without a class (no final window), "
    "counted in neither (experiments/verdicts/outcome.py). Median grad norm: the median over the "
    "rung's runs of each run's median global gradient norm (Study 1's rule); not diverged: "
    "the same over the runs that did not diverge (amendment (e))."
)


def _row(i: int, rung: RungRecord, *, lost: bool) -> str:
    """Rung ``i`` (1-based) as a table row: its rule's count in bold where it met the rule."""
    c = rung.counts
    settings = " ".join(f"`{k}={v}`" for k, v in rung.settings.items())
    mark = "**" if rung.meets_rule else ""
    stopped = " (stopped: cannot meet the rule)" if rung.stopped_early else ""
    if lost:
        cells = [
            f"{mark}{_cell(c.lost_after_learning)}/{c.runs}{mark}",
            _cell(c.learned),
            str(c.unstable),
        ]
    else:
        cells = [f"{mark}{c.unstable}/{c.runs}{mark}"]
    cells += [str(c.diverged), str(c.collapsed), _cell(c.never_learned)]
    if lost:
        cells.append(_cell(c.no_outcome))
    cells += [
        f"{c.finished}/{c.runs}{stopped}",
        _norm(c.grad_norm_median),
        _norm(c.grad_norm_median_not_diverged),
    ]
    return f"| {i} {rung.name} | {settings} | " + " | ".join(cells) + " |"


def _outcome(record: CalibrationRecord) -> str:
    if record.status == "chosen":
        return (
            f"Chosen: rung {record.chosen_rung} ({record.rungs[-1].name}), written as "
            f"`regime={record.regime}` ({record.preset})."
        )
    if record.status == "exhausted":
        return "No rung met the rule: the ladder ran out of rungs, and no regime was written."
    if record.status == "running":
        return f"Running: {len(record.rungs)} rung(s) done, none meeting the rule so far."
    return (
        f"Incomplete: rung {len(record.rungs)} has runs that did not finish; run the same "
        "command again (finished runs are skipped)."
    )


def write_record(folder: str | Path, record: CalibrationRecord) -> None:
    """Writes ``calibration.json`` and ``calibration.md`` into ``folder`` (atomically)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomic(folder / "calibration.json", record.to_json())
    write_text_atomic(folder / "calibration.md", record_markdown(record))
