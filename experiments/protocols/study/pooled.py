"""A pooled table as a study's records allow it: what ``gradlab pool`` and ``gradlab.pool`` both
call, so the command line and a notebook give one table and one set of stars.

* the folder of a study across tasks: its registered confirmatory family, read from its record
  alone (:func:`family_table`; ``*`` only while its audit passes; a margin or primary that
  disagrees with the record is refused), or another of its arms tabled the same way,
  exploratory (``arm``); on another endpoint, every arm across its tasks, exploratory (no
  ``--primary``: the record declares only its family);
* other folders: one endpoint across them (:func:`~experiments.report.pool.across.across_table`)
  with each folder's registration (:func:`registrations`), the margin the pooled studies
  registered applied without a flag (:func:`registered_margin`), no pooled ``*`` while a pooled
  study's audit fails, and, where several single-task records each star their own stratum with no
  family across them (Study 4), the conservative reading: Holm over those strata
  (:func:`holm_over_strata`).

The notes (for stderr) are returned, never printed: the caller says them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from statsmodels.stats.multitest import multipletests

from experiments.base.errors import ConfigError
from experiments.protocols.study.analysis import (
    audit_note,
    declared_analysis,
    declared_family,
    registered_contrast,
)
from experiments.report.pool import FamilySpec, Registration, across_table
from experiments.report.pool import family_table as _family_table
from experiments.report.runs import add_normalised, load_results

__all__ = [
    "Pooled",
    "family_table",
    "holm_over_strata",
    "pool_folders",
    "registered_margin",
    "registrations",
]


@dataclasses.dataclass(frozen=True)
class Pooled:
    """A pooled table and what to say beside it.

    Attributes:
      table: a :class:`~experiments.report.pool.family.FamilyTable` (``family``) or an
        :class:`~experiments.report.pool.table.Across`.
      family: whether it is a study across tasks' family table (its registered arm's, or
        another arm's tabled the same way).
      notes: lines for stderr, in order.
    """

    table: Any
    family: bool
    notes: tuple[str, ...] = ()


def registrations(
    folders: Sequence[str | Path], *, endpoint: str, baseline: str, alpha: float
) -> list[Registration]:
    """What each folder's study declared, for the pooled table of ``endpoint`` against
    ``variant=BASELINE`` (the independent analysis, Fisher's test, ``alpha``): its registered
    primary when those are the registered ones (else a note), and its declaration whatever the
    table (a ``--primary`` that differs gets a note). A folder of no study declares nothing."""
    out = []
    for folder in folders:
        confirmatory, _, note = registered_contrast(
            folder,
            [endpoint],
            analysis="independent",
            rate_test="fisher",
            alpha=alpha,
            baseline=f"variant={baseline}",
        )
        out.append(Registration(confirmatory, note, declared_analysis(folder)))
    return out


def registered_margin(
    folders: Sequence[str | Path], endpoint: str, margin: float | None
) -> float | None:
    """The equivalence margin the pooled studies registered on ``endpoint`` (all the same),
    applied without a flag; ``margin`` when none registered one.

    Raises:
      ConfigError: a ``margin`` that disagrees with a registered one.
    """
    declared = {
        (d.study, d.margin)
        for d in (declared_analysis(f) for f in folders)
        if d is not None and d.endpoint == endpoint and d.margin is not None
    }
    margins = {m for _, m in declared}
    if margin is not None and margins and margins != {margin}:
        study, registered = sorted(declared)[0]
        raise ConfigError(
            f"--margin {margin:g} disagrees with study {study}'s registered margin "
            f"{registered:g} on {endpoint}; leave --margin out to apply the registered one"
        )
    if margin is None and len(margins) == 1:
        return margins.pop()
    return margin


def holm_over_strata(table: Any) -> str | None:
    """Where two or more strata each mark their own registered primary (``*``, m = 1, one
    record per task with no family across them, as Study 4's), the conservative reading: Holm
    over those strata's p, in one note naming each; None otherwise."""
    starred = [(c.label, cell) for c in table.strata for (label, arm), cell in table.cells.items()
               if label == c.label and cell.confirmatory]  # fmt: skip
    if len(starred) < 2:
        return None
    adjusted = multipletests([cell.p_adjusted for _, cell in starred], method="holm")[1]
    shown = ", ".join(f"{label} {p:.2g}" for (label, _), p in zip(starred, adjusted, strict=True))
    return (
        f"note: {len(starred)} records each declare their own stratum's test alone (m = 1) and no "
        f"family across them; read conservatively, Holm over the {len(starred)} strata: {shown}"
    )


def family_table(
    folder: str | Path,
    *,
    primary: str | None = None,
    margin: float | None = None,
    arm: str | None = None,
) -> tuple[Any, str | None]:
    """The registered confirmatory family of a study across tasks' folder, read from its record
    alone, and the note saying why nothing is confirmatory (its audit fails or it is
    incomplete; None when it passes).

    ``arm``: another of the record's arms tabled the same way against the baseline (same
    endpoint, test, margin and per-task Holm), exploratory: no ``*``, and the caption says why
    (e.g. Study 6's depth-matched control, declared as an exploratory pooled difference).

    Raises:
      ConfigError: the folder is no study across tasks', a disagreeing margin or primary, or an
        ``arm`` the record does not hold (or its baseline).
    """
    folder = Path(folder)
    family = declared_family(folder)
    if family is None:
        raise ConfigError(f"'{folder}' holds no record of a study across tasks")
    contrast = family.pooled[0]
    registered = contrast.get("margin")
    if margin is not None and margin != registered:
        raise ConfigError(
            f"--margin {margin:g} disagrees with study {family.study}'s registered margin "
            f"{registered}; leave --margin out to apply the registered one"
        )
    registered_arm = str(contrast["arm"])
    others = [a for a in family.arms if a != family.baseline]
    if primary is not None and primary != registered_arm:
        hint = f"; --arm {primary} tables it, exploratory" if primary in others else ""
        raise ConfigError(
            f"--primary {primary} is not study {family.study}'s registered arm "
            f"({registered_arm}); its family is read from its record{hint}"
        )
    if primary is not None and arm is not None and arm != primary:
        raise ConfigError(
            f"--primary {primary} and --arm {arm} disagree: --primary names the registered arm, "
            "--arm another one, tabled exploratory; give one"
        )
    why = audit_note(folder)
    per_task = family.per_task
    if arm is not None and arm != registered_arm:
        if arm not in others:
            raise ConfigError(
                f"--arm {arm} is not an arm of study {family.study} other than its baseline; "
                f"valid: {', '.join(others)}"
            )
        mine = (f"{arm} is not the registered arm ({registered_arm}): an exploratory contrast, "
                "tabled as the family is")  # fmt: skip
        why = mine if why is None else f"{mine}; and {why}"
        registered_arm, per_task = arm, "exploratory"  # no per-task test of it is confirmatory
    frame = load_results(folder).runs
    if contrast["endpoint"] == "normalised_return":
        frame = add_normalised(frame, family.normalisation)
    spec = FamilySpec(
        study=family.study, arm=registered_arm, baseline=family.baseline,
        endpoint=str(contrast["endpoint"]), alpha=float(contrast["alpha"]), margin=registered,
        per_task=per_task, confirmatory=why is None, why_not=why,
        normalisation=family.normalisation,
    )  # fmt: skip
    return _family_table(frame, spec, family.tasks), why


def pool_folders(
    folders: Sequence[str | Path],
    *,
    endpoint: str | None = None,
    baseline: str = "none",
    alpha: float = 0.05,
    primary: str | None = None,
    by_name: bool = False,
    keep_duplicates: str | None = None,
    margin: float | None = None,
    arm: str | None = None,
) -> Pooled:
    """The pooled table of ``folders`` (module docstring).

    Args:
      folders: results folders, one per stratum (a study across tasks: its one folder).
      endpoint: the pooled endpoint; None: the family's for a study across tasks, else ``failed``.
      baseline, alpha, primary, by_name, keep_duplicates, margin, arm: as ``gradlab pool``'s
        options (``arm``: only for a study across tasks' folder, :func:`family_table`).

    Raises:
      ConfigError: bad input, one line (an unknown endpoint or arm, a disagreeing margin, ...).
    """
    paths = [Path(f) for f in folders]
    family = declared_family(paths[0]) if len(paths) == 1 else None
    if family is not None and endpoint in (None, family.pooled[0]["endpoint"]):
        table, why = family_table(paths[0], primary=primary, margin=margin, arm=arm)
        return Pooled(table, True, (f"note: {why}",) if why else ())
    if family is not None and (arm is not None or primary is not None):
        flag = f"--arm {arm}" if arm is not None else f"--primary {primary}"
        raise ConfigError(
            f"{flag} applies only to study {family.study}'s family endpoint "
            f"({family.pooled[0]['endpoint']}); on {endpoint} every arm is tabled without it "
            "(exploratory, Holm over the arms)"
        )
    if arm is not None:
        raise ConfigError(
            f"--arm {arm} applies only to the one folder of a study across tasks; these folders "
            "hold none (every arm is tabled without it)"
        )
    endpoint = endpoint or "failed"
    margin = registered_margin(paths, endpoint, margin)
    regs = registrations(paths, endpoint=endpoint, baseline=baseline, alpha=alpha)
    notes: list[str] = []
    failing = [r.note for r in regs if r.declared is not None and r.confirmatory is None and r.note
               and "audit fails" in r.note]  # fmt: skip
    if primary is not None and failing:
        notes += failing
        notes.append(
            f"note: --primary {primary}: no pooled contrast is confirmatory while a pooled "
            "study's audit fails; every pooled row is exploratory"
        )
        primary = None
    table = across_table(
        paths,
        endpoint=endpoint,
        baseline=baseline,
        alpha=alpha,
        primary=primary,
        by_name=by_name,
        keep_duplicates=keep_duplicates,
        margin=margin,
        registrations=regs,
    )
    notes += list(table.notes)
    conservative = holm_over_strata(table)
    if conservative:
        notes.append(conservative)
    return Pooled(table, False, tuple(notes))
