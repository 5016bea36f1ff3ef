"""The analysis a results folder's pre-registration record declares, for ``gradlab table``.

A folder holding ``preregistration.json`` is a study's: its primary contrast (the primary arm
against the baseline on the primary endpoint) is confirmatory, tested alone (m = 1) with the
declared test and alpha; everything else in the table is exploratory. A table asked for with
another analysis, test, alpha or baseline is a sensitivity analysis: it declares nothing
confirmatory. Neither does a folder whose audit (:mod:`experiments.protocols.study.audit`) finds a
breach: its note says which checks failed.

Endpoint versions: a record holds ``endpoints`` (:data:`~experiments.protocols.study.record.
ENDPOINTS_VERSION`); one without it was registered under version 1, where ``failed`` meant what
is now ``failed_v1`` (unstable, or never reached the threshold). Its declared endpoint is then
``failed_v1``, and :attr:`Declared.registered_as` keeps the word the record used.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

from experiments.base.errors import ConfigError
from experiments.protocols.study.record import RECORD
from experiments.report.runs import Declared

__all__ = [
    "Declared",
    "DeclaredFamily",
    "audit_note",
    "declared_family",
    "declared_normalisation",
    "declared_analysis",
    "declared_endpoint",
    "registered_contrast",
]

_RENAMED_V1 = {"failed": "failed_v1"}
"""Endpoint names of version 1 whose meaning moved to another name in version 2."""


def _record(folder: str | Path) -> dict | None:
    """A folder's parsed pre-registration record (with a design naming its study); None for a
    folder without one."""
    path = Path(folder) / RECORD
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        record["design"]["name"]
        return record
    except (json.JSONDecodeError, KeyError, TypeError):
        raise ConfigError(f"corrupt pre-registration record {str(path)!r}") from None


def declared_analysis(folder: str | Path) -> Declared | None:
    """The declared primary analysis of a study's folder; None for a folder without a record."""
    record = _record(folder)
    if record is None:
        return None
    try:
        design = record["design"]
        if "tasks" in design:  # a study across tasks: its family is pooled (declared_family)
            return None
        primary = design["primary"]
        version = int(record.get("endpoints", 1))
        return Declared(
            study=str(design["name"]),
            arm=str(primary["arm"]),
            endpoint=declared_endpoint(str(primary["endpoint"]), version),
            rate_test=str(primary["test"]),
            alpha=float(primary["alpha"]),
            baseline=str(design.get("baseline", "none")),
            registered_as=str(primary["endpoint"]),
            endpoints_version=version,
            margin=None if primary.get("margin") is None else float(primary["margin"]),
            margin_reason=primary.get("margin_reason"),
        )
    except (KeyError, TypeError, ValueError):
        raise ConfigError(
            f"corrupt pre-registration record {str(Path(folder) / RECORD)!r}"
        ) from None


@dataclasses.dataclass(frozen=True)
class DeclaredFamily:
    """A study across tasks' confirmatory family as its record declares it.

    Attributes:
      study: its name; baseline: its baseline arm.
      tasks: its tasks, in the record's order.
      pooled: the pooled contrasts, each ``{arm, endpoint, test, alpha, margin?, ...}``.
      per_task: ``exploratory`` or ``holm``.
      normalisation: task -> ``(r_ref, r_rand)``.
      arms: every arm's variant, the baseline's included, in the record's order.
    """

    study: str
    baseline: str
    tasks: tuple[str, ...]
    pooled: tuple[dict, ...]
    per_task: str
    normalisation: dict[str, tuple[float, float]]
    arms: tuple[str, ...] = ()


def declared_family(folder: str | Path) -> DeclaredFamily | None:
    """The confirmatory family of a study across tasks' folder; None for any other folder."""
    record = _record(folder)
    if record is None or "tasks" not in record["design"]:
        return None
    design = record["design"]
    try:
        return DeclaredFamily(
            study=str(design["name"]),
            baseline=str(design.get("baseline", "none")),
            tasks=tuple(str(t["task"]) for t in design["tasks"]),
            pooled=tuple(dict(p) for p in design["family"]["pooled"]),
            per_task=str(design["family"].get("per_task", "exploratory")),
            normalisation=_normalisation(design, folder) or {},
            arms=tuple(str(a["variant"]) for a in design.get("arms", ())),
        )
    except (KeyError, TypeError, ValueError):
        raise ConfigError(f"corrupt pre-registration record in {str(folder)!r}") from None


def declared_normalisation(folder: str | Path) -> dict[str, tuple[float, float]] | None:
    """A study folder's declared normalisation, task -> ``(r_ref, r_rand)``; None where its
    record declares none (or there is no record)."""
    record = _record(folder)
    return None if record is None else _normalisation(record["design"], folder)


def _normalisation(design: dict, folder: str | Path) -> dict[str, tuple[float, float]] | None:
    """A record's design's normalisation, task -> ``(r_ref, r_rand)``; None where it declares
    none."""
    if "normalisation" not in design:
        return None
    try:
        return {str(t): (float(v["r_ref"]), float(v["r_rand"]))
                for t, v in design["normalisation"].items()}  # fmt: skip
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ConfigError(f"corrupt normalisation in the record of {str(folder)!r}") from None


def declared_endpoint(name: str, version: int) -> str:
    """Today's name of an endpoint a record of ``version`` registered as ``name``."""
    return _RENAMED_V1.get(name, name) if version < 2 else name


def registered_contrast(
    folder: str | Path,
    endpoints: Sequence[str],
    *,
    analysis: str,
    rate_test: str,
    alpha: float,
    baseline: str | None,
) -> tuple[list | None, Declared | None, str | None]:
    """What a table of ``folder`` on ``endpoints`` may call confirmatory.

    Returns:
      ``(confirmatory contrasts, the declaration, note)``: the registered primary when the
      folder is a study's, the table shows its endpoint, and the analysis, test, alpha and
      baseline are the registered ones; else ``None``, with a note (for stderr) when the table
      is a sensitivity analysis of a study's folder.
    """
    declared = declared_analysis(folder)
    if declared is None or declared.endpoint not in endpoints:
        return None, None, None
    failed = audit_note(folder)
    if failed:
        return None, None, f"note: {failed}"
    if declared.matches(analysis=analysis, rate_test=rate_test, alpha=alpha, baseline=baseline):
        return declared.confirmatory, declared, None
    note = (
        f"note: not study {declared.study}'s registered analysis ({declared.analysis}, "
        f"{declared.rate_test}, alpha {declared.alpha}, baseline {declared.baseline}): every "
        "contrast is exploratory"
    )
    return None, None, note


_NAMED = 5
"""Runs a caption names of those not in (the rest counted, the audit lists them all)."""


def audit_note(folder: str | Path) -> str | None:
    """Why a study's folder declares nothing confirmatory: its audit (against this gradlab's
    conf/) fails, in one sentence naming the failed checks; None when it passes or the folder
    is no study's. A table's caption carries it."""
    from experiments.jobs import package_root
    from experiments.protocols.study.audit import audit

    if not (Path(folder) / RECORD).is_file():
        return None
    result = audit(folder, config_dir=package_root() / "conf")
    if not result.breaches and result.not_in:
        names = result.not_in_names
        listed = ", ".join(names[:_NAMED]) + (
            f" and {len(names) - _NAMED} more" if len(names) > _NAMED else ""
        )
        return (
            f"study {result.study} is incomplete ({result.not_in} registered run(s) not in: "
            f"{listed}): no contrast is confirmatory until every registered run is in (see "
            f"gradlab study audit {folder})"
        )
    if not result.breaches:
        return None
    names = ", ".join(c.name for c in result.breaches)
    return (
        f"study {result.study}'s audit fails ({names}): no contrast is confirmatory (see "
        f"gradlab study audit {folder})"
    )
