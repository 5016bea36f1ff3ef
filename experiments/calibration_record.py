"""A calibration's counts per rung, its rule, its record (``calibration.json`` and
``calibration.md``) and the regime preset it derives.

The verdicts are the runs' own (``summary.json``'s ``stability``, defined in
:mod:`experiments.metrics` before any calibration): *unstable* = diverged or collapsed; *never
learned* = never reached the task's threshold (``None`` for a task without one). Each run's outcome
class (:func:`experiments.outcome.run_outcome`) gives *learned* and *lost after learning* (reached
the threshold, then fell back below it by the end or diverged).

The rule counts one endpoint (:data:`ENDPOINTS`): ``unstable`` (the default, the only one before
2026-11-27) or ``lost_after_learning`` (issue 38's Study 5). Record versions: 1, the ``unstable``
records (written byte for byte as before the endpoint existed); 2, a record with an ``endpoint``
key and the counts ``learned``, ``lost_after_learning`` and ``no_outcome``
(:func:`record_version`). Both are read by :func:`record_markdown`.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from experiments.errors import ConfigError
from experiments.jobs import store
from experiments.jobs.summary import Summary

__all__ = [
    "DEFAULT_ENDPOINT",
    "ENDPOINTS",
    "RECORD_VERSION",
    "RungCounts",
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

ENDPOINTS = ("unstable", "lost_after_learning")
"""What a rung's rule counts: unstable runs (diverged or collapsed), or runs that lost what they
learned (outcome ``lost`` or ``diverged_after_learning``)."""
DEFAULT_ENDPOINT = "unstable"
_NEW_COUNTS = ("learned", "lost_after_learning", "no_outcome")  # version 2 only


@dataclasses.dataclass(frozen=True)
class RungCounts:
    """Verdicts of one rung's runs.

    Attributes:
      runs: seeds planned (the rule's denominator).
      finished: runs with a finished summary (completed, diverged or timeout).
      unstable: diverged or collapsed.
      diverged: diverged.
      collapsed: collapsed and not diverged (so ``unstable = diverged + collapsed``).
      never_learned: never reached the threshold; ``None`` for a task without one.
      undetermined: finished runs without a collapse verdict (no evaluation) that did not diverge.
      grad_norm_median: the median over the finished runs of each run's median global gradient
        norm (``stability.grad_norm_median``): Study 1's rule for a clip arm's threshold, derived
        from the baseline alone (docs/studies.md); ``None`` where no run has one.
      grad_norm_median_not_diverged: the same median over the finished runs that did not
        diverge: Study 3's rule from amendment (e), for a rung whose diverged runs' norms (the
        scale of an exploding run) would set a threshold that never clips; ``None`` likewise.
      learned: finished runs that reached the threshold before diverging (outcome ``held``,
        ``lost`` or ``diverged_after_learning``); ``None`` for a task without a threshold, or
        where not counted (the endpoint ``unstable``).
      lost_after_learning: finished runs whose outcome is ``lost`` or
        ``diverged_after_learning``; ``None`` likewise.
      no_outcome: finished runs without an outcome class (e.g. no final window); ``None``
        likewise. Counted in neither of the two above.
    """

    runs: int
    finished: int
    unstable: int
    diverged: int
    collapsed: int
    never_learned: int | None
    undetermined: int
    grad_norm_median: float | None = None
    grad_norm_median_not_diverged: float | None = None
    learned: int | None = None
    lost_after_learning: int | None = None
    no_outcome: int | None = None

    def events(self, endpoint: str) -> int:
        """The runs the rule counts under ``endpoint`` (:data:`ENDPOINTS`).

        Raises:
          ConfigError: an unknown endpoint, or ``lost_after_learning`` not counted (no threshold).
        """
        if check_endpoint(endpoint) == "unstable":
            return self.unstable
        if self.lost_after_learning is None:
            raise ConfigError(
                "lost_after_learning is not counted for a task without a competence threshold"
            )
        return self.lost_after_learning


def check_endpoint(endpoint: str) -> str:
    """``endpoint`` if it is one of :data:`ENDPOINTS`; else a one-line ConfigError."""
    if endpoint not in ENDPOINTS:
        raise ConfigError(f"unknown --endpoint {endpoint!r}; choose one of: {', '.join(ENDPOINTS)}")
    return endpoint


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


def run_class(summary: Summary) -> str | None:
    """A finished run's outcome class (:func:`experiments.outcome.run_outcome`), or None.

    The threshold is the one the summary recorded, else the task registry's times the run's
    reward scale (:func:`experiments.report.endpoints.declared_threshold`). The stability
    figures (``reached_threshold``, ``steps_to_threshold``) must be measured against that
    threshold: a run that recorded none has them re-measured from its evaluations by the
    calibration before it is counted; ``reached_threshold`` None (not measured) gives None.
    """
    from experiments.outcome import run_outcome
    from experiments.report.endpoints import declared_threshold

    v = summary.stability
    if v.get("reached_threshold") is None:
        return None
    threshold = summary.threshold
    if threshold is None or not math.isfinite(float(threshold)):
        threshold = declared_threshold(summary.task, summary.reward_scale)
    return run_outcome(
        threshold=threshold,
        steps_to_threshold=v.get("steps_to_threshold"),
        diverged=v.get("diverged"),
        diverged_step=v.get("diverged_step"),
        final_return=v.get("final_return"),
    )


def _median_norm(stability: Sequence[Mapping[str, Any]]) -> float | None:
    """The median of the runs' finite ``grad_norm_median`` (``None`` where none has one)."""
    norms = [v.get("grad_norm_median") for v in stability]
    norms = [float(x) for x in norms if x is not None and math.isfinite(float(x))]
    return float(statistics.median(norms)) if norms else None


def count_rung(
    summaries: Sequence[Summary | None], *, has_threshold: bool, endpoint: str = DEFAULT_ENDPOINT
) -> RungCounts:
    """Counts the verdicts of a rung's runs (``None``: a run without a summary); the outcome
    counts (``learned``, ``lost_after_learning``, ``no_outcome``) for the endpoint
    ``lost_after_learning`` on a task with a threshold only (else ``None``: an ``unstable``
    record does not hold them)."""
    done = [s for s in summaries if s is not None and s.status in store.FINISHED]
    stability = [s.stability for s in done]
    diverged = sum(1 for v in stability if v.get("diverged") == 1)
    collapsed = sum(1 for v in stability if v.get("diverged") != 1 and v.get("collapsed") == 1)
    undetermined = sum(1 for v in stability if v.get("diverged") != 1 and v.get("unstable") is None)
    never = sum(1 for v in stability if v.get("reached_threshold") != 1)
    from experiments.outcome import ENDPOINT_CLASSES

    outcomes = has_threshold and check_endpoint(endpoint) != DEFAULT_ENDPOINT
    classes = [run_class(s) for s in done] if outcomes else []
    learned = sum(1 for c in classes if c in ENDPOINT_CLASSES["learned"])
    lost = sum(1 for c in classes if c in ENDPOINT_CLASSES["lost_after_learning"])
    no_outcome = sum(1 for c in classes if c is None)
    return RungCounts(
        runs=len(summaries),
        finished=len(done),
        unstable=diverged + collapsed,
        diverged=diverged,
        collapsed=collapsed,
        never_learned=never if has_threshold else None,
        undetermined=undetermined,
        grad_norm_median=_median_norm(stability),
        grad_norm_median_not_diverged=_median_norm(
            [v for v in stability if v.get("diverged") != 1]
        ),
        learned=learned if outcomes else None,
        lost_after_learning=lost if outcomes else None,
        no_outcome=no_outcome if outcomes else None,
    )


def check_rule(rule: float | str) -> float:
    """The rule's fraction (a number, or its text), refused outside [0, 1] or not a number."""
    if isinstance(rule, str):
        try:
            rule = float(rule)
        except ValueError:
            raise ConfigError(
                f"--rule {rule!r} is not a number; expected a fraction in [0, 1]"
            ) from None
    if isinstance(rule, bool) or not isinstance(rule, int | float) or not 0.0 <= rule <= 1.0:
        raise ConfigError(f"--rule {rule!r} is out of range; expected a fraction in [0, 1]")
    return float(rule)


def meets_rule(counts: RungCounts, rule: float, endpoint: str = DEFAULT_ENDPOINT) -> bool:
    """Whether ``events / runs >= rule``, exactly (``Fraction``: 3/10 meets 0.3, which
    ``3 >= 0.3 * 10`` in floating point would not, 0.3 * 10 being 3.0000000000000004); the
    events are the ``endpoint``'s (:meth:`RungCounts.events`: unstable runs by default)."""
    if counts.runs == 0:
        return False
    return Fraction(counts.events(endpoint), counts.runs) >= _fraction(rule)


def _fraction(rule: float) -> Fraction:
    """The rule as written (``0.3`` is 3/10, not the float nearest it)."""
    return Fraction(repr(float(rule)))


def cannot_meet(counts: RungCounts, rule: float, endpoint: str = DEFAULT_ENDPOINT) -> bool:
    """Whether the rung can no longer meet the rule: even if every run not finished yet were an
    event (unstable, or lost after learning: ``endpoint``), ``(events + not finished) / runs <
    rule`` (exact, as :func:`meets_rule`)."""
    if counts.runs == 0:
        return False
    best = counts.events(endpoint) + counts.runs - counts.finished
    return Fraction(best, counts.runs) < _fraction(rule)


def decide_after(runs: int, rule: float, batch: int) -> int:
    """How many of a rung's ``runs`` seeds to run before asking :func:`cannot_meet`: the fewest
    whose all being stable already rules the rung out (``runs - need + 1``, ``need`` the unstable
    runs the rule asks for), rounded up to whole batches of ``batch`` runs at once, so that the
    question costs no extra wave of runs; ``runs`` (ask nothing early) when that leaves no seed
    to save."""
    need = math.ceil(_fraction(rule) * runs)  # the fewest unstable runs meeting the rule
    if need == 0:
        return runs  # rule 0: every rung meets it
    first = runs - need + 1
    first = -(-first // batch) * batch
    return min(first, runs)


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


def record_markdown(record: Mapping[str, Any]) -> str:
    """``calibration.md``: the rungs' counts as a table, the rule and the outcome (a record
    without ``endpoint``, version 1, counts unstable runs)."""
    if record.get("endpoint", DEFAULT_ENDPOINT) != DEFAULT_ENDPOINT:
        return _lost_markdown(record)
    seeds = record["seeds"]
    lines = [
        f"# Calibration of `{record['task']}` (ladder `{record['ladder']}`)",
        "",
        f"`variant=none` alone, base regime `{record['base_regime']}`, seeds "
        f"{seeds[0]}-{seeds[-1]} ({len(seeds)}); rule: the first rung whose runs are unstable "
        f"in at least {record['rule']:g} of the seeds. Each rung keeps the settings of the rungs "
        "before it.",
        "",
        "| rung | settings | unstable | diverged | collapsed | never learned | finished "
        "| median grad norm | not diverged |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for i, rung in enumerate(record["rungs"], 1):
        c = rung["counts"]
        settings = " ".join(f"`{k}={v}`" for k, v in rung["settings"].items())
        mark = "**" if rung.get("meets_rule") else ""
        stopped = " (stopped: cannot meet the rule)" if rung.get("stopped_early") else ""
        lines.append(
            f"| {i} {rung['name']} | {settings} | {mark}{c['unstable']}/{c['runs']}{mark} | "
            f"{c['diverged']} | {c['collapsed']} | {_cell(c['never_learned'])} | "
            f"{c['finished']}/{c['runs']}{stopped} | {_norm(c.get('grad_norm_median'))} | "
            f"{_norm(c.get('grad_norm_median_not_diverged'))} |"
        )
    lines += [
        "",
        "Median grad norm: the median over the rung's runs of each run's median global gradient "
        "norm, a clip arm's threshold by Study 1's rule (docs/studies.md); not diverged: the "
        "same over the runs that did not diverge (Study 3's amendment (e)), n/a for a record "
        "written before it was counted.",
        "",
        _outcome(record),
        "",
    ]
    if record.get("extra_overrides"):
        lines += [f"Every run also had: `{' '.join(record['extra_overrides'])}`.", ""]
    lines += ["Command:", "", "```bash", record["command"], "```", ""]
    return "\n".join(lines)


def _lost_markdown(record: Mapping[str, Any]) -> str:
    """``calibration.md`` of a record whose rule counts ``lost_after_learning`` (version 2)."""
    seeds = record["seeds"]
    lines = [
        f"# Calibration of `{record['task']}` (ladder `{record['ladder']}`)",
        "",
        f"`variant=none` alone, base regime `{record['base_regime']}`, seeds "
        f"{seeds[0]}-{seeds[-1]} ({len(seeds)}); rule: the first rung whose runs lost what they "
        f"learned (reached the task's threshold, then fell back below it by the end or diverged: "
        f"`--endpoint {record['endpoint']}`) in at least {record['rule']:g} of the seeds. Each "
        "rung keeps the settings of the rungs before it.",
        "",
        "| rung | settings | lost after learning | learned | unstable | diverged | collapsed "
        "| never learned | no outcome | finished | median grad norm | not diverged |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for i, rung in enumerate(record["rungs"], 1):
        c = rung["counts"]
        settings = " ".join(f"`{k}={v}`" for k, v in rung["settings"].items())
        mark = "**" if rung.get("meets_rule") else ""
        stopped = " (stopped: cannot meet the rule)" if rung.get("stopped_early") else ""
        lines.append(
            f"| {i} {rung['name']} | {settings} | "
            f"{mark}{_cell(c['lost_after_learning'])}/{c['runs']}{mark} | {_cell(c['learned'])} | "
            f"{c['unstable']} | {c['diverged']} | {c['collapsed']} | "
            f"{_cell(c['never_learned'])} | {_cell(c['no_outcome'])} | "
            f"{c['finished']}/{c['runs']}{stopped} | {_norm(c.get('grad_norm_median'))} | "
            f"{_norm(c.get('grad_norm_median_not_diverged'))} |"
        )
    lines += [
        "",
        "Lost after learning: outcome `lost` (reached the threshold, final-window mean below it) "
        "or `diverged_after_learning`; learned: reached the threshold before diverging (held, "
        "lost or diverged after); no outcome: finished runs without a class (no final window), "
        "counted in neither (experiments/outcome.py). Median grad norm: the median over the "
        "rung's runs of each run's median global gradient norm (Study 1's rule); not diverged: "
        "the same over the runs that did not diverge (amendment (e)).",
        "",
        _outcome(record),
        "",
    ]
    if record.get("extra_overrides"):
        lines += [f"Every run also had: `{' '.join(record['extra_overrides'])}`.", ""]
    lines += ["Command:", "", "```bash", record["command"], "```", ""]
    return "\n".join(lines)


def _outcome(record: Mapping[str, Any]) -> str:
    status = record["status"]
    if status == "chosen":
        return (
            f"Chosen: rung {record['chosen_rung']} ({record['rungs'][-1]['name']}), written as "
            f"`regime={record['regime']}` ({record['preset']})."
        )
    if status == "exhausted":
        return "No rung met the rule: the ladder ran out of rungs, and no regime was written."
    if status == "running":
        return f"Running: {len(record['rungs'])} rung(s) done, none meeting the rule so far."
    return (
        f"Incomplete: rung {len(record['rungs'])} has runs that did not finish; run the same "
        "command again (finished runs are skipped)."
    )


def write_record(folder: str | Path, record: Mapping[str, Any]) -> None:
    """Writes ``calibration.json`` and ``calibration.md`` into ``folder`` (atomically)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    store.write_json_atomic(folder / "calibration.json", record)
    store.write_text_atomic(folder / "calibration.md", record_markdown(record))
