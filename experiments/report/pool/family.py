"""A study across tasks' confirmatory family, tabled as its record declares it.

Rows: each task's difference of the arms' means on the family's endpoint (Welch, its 95%
interval and p, Holm-adjusted across the tasks: confirmatory when the record declares the
per-task tests so, ``per_task: holm``, else exploratory), then the pooled contrast (equal task
weights: :mod:`experiments.report.statistics.welch_pooled`) with its interval, p, the TOST
against the declared margin and the verdict. ``*`` marks exactly the registered contrasts, and
only when the caller says the study's audit passed; the report reads no record: the caller
passes a :class:`FamilySpec`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence

import pandas as pd
from statsmodels.stats.multitest import multipletests

from experiments.base.errors import ConfigError, unknown_choice
from experiments.report.statistics.welch_pooled import PooledDifference, welch_pooled
from experiments.report.table.latex_grid import GridCell, grid_floats, wrap_label

__all__ = ["FamilySpec", "FamilyTable", "family_table", "render_family"]


@dataclasses.dataclass(frozen=True)
class FamilySpec:
    """What a study declared, as the family table uses it.

    Attributes:
      study: its name.
      arm: the pooled contrast's arm; baseline: its baseline.
      endpoint: a value column of the runs (``normalised_return``).
      alpha: the level; margin: the equivalence margin (None: no TOST).
      per_task: ``exploratory`` or ``holm``.
      confirmatory: False when the audit fails (or the table is asked otherwise): no ``*``.
      why_not: a line saying why nothing is confirmatory, or None.
    """

    study: str
    arm: str
    baseline: str
    endpoint: str
    alpha: float
    margin: float | None
    per_task: str = "exploratory"
    confirmatory: bool = True
    why_not: str | None = None
    normalisation: dict[str, tuple[float, float]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class FamilyTable:
    spec: FamilySpec
    tasks: tuple[str, ...]
    n: tuple[tuple[int, int], ...]
    means: tuple[tuple[float, float], ...]
    pooled: PooledDifference
    p_adj: tuple[float, ...]

    def to_markdown(self) -> str:
        """The table as ``gradlab pool`` prints it."""
        return render_family(self, fmt="md")

    def _repr_markdown_(self) -> str:  # Jupyter
        return self.to_markdown()


def family_table(runs: pd.DataFrame, spec: FamilySpec, tasks: Sequence[str]) -> FamilyTable:
    """The family's table from the study folder's runs (completed or diverged: every run).

    Raises:
      ConfigError: the endpoint is not a column, or a task's arm has fewer than two runs.
    """
    if spec.endpoint not in runs:
        raise ConfigError(f"the runs have no {spec.endpoint} column")
    counted = runs[runs["status"].isin(("completed", "diverged"))]
    pairs, ns, means = [], [], []
    for task in tasks:
        mine = counted[counted["task"].astype(str) == task]
        arm = mine.loc[mine["variant"].astype(str) == spec.arm, spec.endpoint].to_numpy(float)
        base = mine.loc[mine["variant"].astype(str) == spec.baseline, spec.endpoint]
        base = base.to_numpy(float)
        if len(arm) < 2 or len(base) < 2:
            raise ConfigError(
                f"task {task!r} of study {spec.study} has {len(arm)} {spec.arm} and {len(base)} "
                f"{spec.baseline} runs; the family's test needs at least two an arm"
            )
        pairs.append((arm, base))
        ns.append((len(arm), len(base)))
        means.append((float(arm.mean()), float(base.mean())))
    pooled = welch_pooled(pairs, alpha=spec.alpha, margin=spec.margin)
    # Holm across the tasks whether or not the per-task tests are confirmatory: an exploratory
    # per-task family is declared with Holm too (docs/statistics.md); only the * differs
    p_adj = tuple(float(p) for p in multipletests([t.p for t in pooled.tasks], method="holm")[1])
    return FamilyTable(spec, tuple(tasks), tuple(ns), tuple(means), pooled, p_adj)


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return "—"
    return f"{x:+.3f}" if abs(x) >= 0.001 or x == 0 else f"{x:+.2g}"


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3g}" if p < 0.01 else f"{p:.2f}"


def _records(t: FamilyTable) -> list[dict[str, object]]:
    spec, star = t.spec, ("*" if t.spec.confirmatory else "")
    task_star = star if spec.per_task == "holm" else ""
    out = []
    for task, n, m, d, p in zip(t.tasks, t.n, t.means, t.pooled.tasks, t.p_adj, strict=True):
        out.append({
            "row": task, f"{spec.baseline} mean (n)": f"{m[1]:.3f} ({n[1]})",
            f"{spec.arm} mean (n)": f"{m[0]:.3f} ({n[0]})",
            "difference [95% CI]": f"{_fmt(d.estimate)} [{_fmt(d.ci[0])}, {_fmt(d.ci[1])}]",
            "p": _p(p) + task_star, "TOST p": "", "90% CI": "", "verdict": "",
        })  # fmt: skip
    pooled = t.pooled
    out.append({
        "row": f"pooled ({len(t.tasks)} tasks, equal weights)",
        f"{spec.baseline} mean (n)": "", f"{spec.arm} mean (n)": "",
        "difference [95% CI]":
            f"{_fmt(pooled.estimate)} [{_fmt(pooled.ci[0])}, {_fmt(pooled.ci[1])}]",
        "p": _p(pooled.p) + star,
        "TOST p": "" if pooled.tost_p is None else _p(pooled.tost_p) + star,
        "90% CI": "" if pooled.tost_ci is None
        else f"[{_fmt(pooled.tost_ci[0])}, {_fmt(pooled.tost_ci[1])}]",
        "verdict": pooled.verdict,
    })  # fmt: skip
    return out


def family_caption(t: FamilyTable) -> str:
    """What the table shows, its method, and what is confirmatory."""
    spec = t.spec
    norm = "; ".join(
        f"{task}: R_ref {ref:.4g}, R_rand {rand:.4g}" for task, (ref, rand) in
        spec.normalisation.items()
    )  # fmt: skip
    what = (
        f"Study {spec.study}: {spec.arm} minus {spec.baseline} on {spec.endpoint}"
        + (
            f" ((R - R_rand) / (R_ref - R_rand) of the final return, a diverged run at 0; {norm})"
            if norm
            else ""
        )  # fmt: skip
        + ". Per task: difference of the means with its Welch 95% CI and two-sided p, "
        "Holm-adjusted across the tasks"
        + (" (confirmatory, declared)." if spec.per_task == "holm" else " (exploratory).")
        + " Pooled: the mean of the per-task differences (each task weighted equally), its SE "
        "from the per-task Welch variances, Satterthwaite's df; two-sided t test of no difference"
    )
    if spec.margin is not None:
        what += (f"; equivalence within ±{spec.margin:g} by two one-sided t tests (TOST), with "
                 "the 90% CI")  # fmt: skip
    what += (
        f"; verdict at alpha {spec.alpha}: lower or higher when the difference test rejects, "
        "equivalent when only the TOST does, else not separated."
    )
    if spec.confirmatory:
        what += " *: the registered confirmatory family, as the study's record declares it."
    else:
        what += f" Nothing is confirmatory here: {spec.why_not or 'not the registered analysis'}."
    return what


def _latex(t: FamilyTable) -> str:
    """``table`` floats within the page (:func:`~experiments.report.table.latex_grid.grid_floats`):
    a row per task and the pooled row, each interval below its estimate, the TOST's p, interval
    and verdict stacked in one cell; a short caption, the whole one as the method paragraph."""
    spec = t.spec
    headers = [("", "task"), (wrap_label(spec.baseline), "mean (n)"),
               (wrap_label(spec.arm), "mean (n)"), ("difference", "[95% CI]"), ("", "p"),
               ("TOST", "p, 90% CI")]  # fmt: skip
    body: list[list[GridCell]] = []
    for record in _records(t):
        name = record["row"].partition(" (")[0]  # "pooled (3 tasks, equal weights)": the caption
        estimate, _, interval = record["difference [95% CI]"].partition(" [")
        tost = (record["TOST p"], record["90% CI"], record["verdict"])
        body.append([
            ((name,), False),
            ((record[f"{spec.baseline} mean (n)"] or "",), False),
            ((record[f"{spec.arm} mean (n)"] or "",), False),
            ((estimate, f"[{interval}") if interval else (estimate,), False),
            ((record["p"],), False),
            (tuple(x for x in tost if x) or ("",), False),
        ])  # fmt: skip
    margin = f", the TOST against ±{spec.margin:g}" if spec.margin is not None else ""
    short = (
        f"Study {spec.study}: {spec.arm} minus {spec.baseline} on {spec.endpoint}, per task "
        f"(Welch) and pooled over the {len(t.tasks)} tasks with equal weights{margin}. Method: "
        "after the table."
    )
    return grid_floats(headers, body, caption=short, label=f"tab:family_{spec.study}",
                       method=family_caption(t))  # fmt: skip


def render_family(t: FamilyTable, *, fmt: str) -> str:
    """The family table as ``md``, ``latex``, ``csv`` or ``json``."""
    rows = _records(t)
    frame = pd.DataFrame(rows)
    if fmt == "md":
        cols = list(frame.columns)
        width = [max(len(c), *(len(str(v)) for v in frame[c])) for c in cols]

        def line(values) -> str:
            cells = (str(v).ljust(w) for v, w in zip(values, width, strict=True))
            return "| " + " | ".join(cells) + " |"

        out = [line(cols), "| " + " | ".join("-" * w for w in width) + " |"]
        out += [line(r.values()) for r in rows]
        return "\n".join(out) + "\n\n" + family_caption(t) + "\n"
    if fmt == "csv":
        return frame.to_csv(index=False)
    if fmt == "json":
        p = t.pooled
        meta = {"study": t.spec.study, "arm": t.spec.arm, "baseline": t.spec.baseline,
                "endpoint": t.spec.endpoint, "alpha": t.spec.alpha, "margin": t.spec.margin,
                "confirmatory": t.spec.confirmatory, "estimate": p.estimate, "se": p.se,
                "df": p.df, "ci": list(p.ci), "p": p.p, "tost_p": p.tost_p,
                "tost_ci": None if p.tost_ci is None else list(p.tost_ci), "verdict": p.verdict,
                "caption": family_caption(t)}  # fmt: skip
        return json.dumps({**meta, "rows": rows}, indent=2)
    if fmt == "latex":
        return _latex(t)
    raise unknown_choice("format", fmt, ("md", "latex", "csv", "json"))
