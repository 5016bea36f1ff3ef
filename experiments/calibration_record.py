"""A calibration's counts per rung, its rule, its record (``calibration.json`` and
``calibration.md``) and the regime preset it derives.

The verdicts are the runs' own (``summary.json``'s ``stability``, defined in
:mod:`experiments.metrics` before any calibration): *unstable* = diverged or collapsed; *never
learned* = never reached the task's threshold (``None`` for a task without one).
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
    "RECORD_VERSION",
    "RungCounts",
    "cannot_meet",
    "check_rule",
    "count_rung",
    "decide_after",
    "meets_rule",
    "preset_text",
    "record_markdown",
    "write_record",
]

RECORD_VERSION = 1


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


def _median_norm(stability: Sequence[Mapping[str, Any]]) -> float | None:
    """The median of the runs' finite ``grad_norm_median`` (``None`` where none has one)."""
    norms = [v.get("grad_norm_median") for v in stability]
    norms = [float(x) for x in norms if x is not None and math.isfinite(float(x))]
    return float(statistics.median(norms)) if norms else None


def count_rung(summaries: Sequence[Summary | None], *, has_threshold: bool) -> RungCounts:
    """Counts the verdicts of a rung's runs (``None``: a run without a summary)."""
    done = [s for s in summaries if s is not None and s.status in store.FINISHED]
    stability = [s.stability for s in done]
    diverged = sum(1 for v in stability if v.get("diverged") == 1)
    collapsed = sum(1 for v in stability if v.get("diverged") != 1 and v.get("collapsed") == 1)
    undetermined = sum(1 for v in stability if v.get("diverged") != 1 and v.get("unstable") is None)
    never = sum(1 for v in stability if v.get("reached_threshold") != 1)
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


def meets_rule(counts: RungCounts, rule: float) -> bool:
    """Whether ``unstable / runs >= rule``, exactly (``Fraction``: 3/10 meets 0.3, which
    ``3 >= 0.3 * 10`` in floating point would not, 0.3 * 10 being 3.0000000000000004)."""
    if counts.runs == 0:
        return False
    return Fraction(counts.unstable, counts.runs) >= _fraction(rule)


def _fraction(rule: float) -> Fraction:
    """The rule as written (``0.3`` is 3/10, not the float nearest it)."""
    return Fraction(repr(float(rule)))


def cannot_meet(counts: RungCounts, rule: float) -> bool:
    """Whether the rung can no longer meet the rule: even if every run not finished yet were
    unstable, ``(unstable + not finished) / runs < rule`` (exact, as :func:`meets_rule`)."""
    if counts.runs == 0:
        return False
    best = counts.unstable + counts.runs - counts.finished
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
    """``calibration.md``: the rungs' counts as a table, the rule and the outcome."""
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
