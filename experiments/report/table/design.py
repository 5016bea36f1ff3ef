"""The runs of a table's design, and the checks of what a table is asked.

The runs of the design are those whose status is in
:data:`~experiments.report.runs.results.AVERAGED` (completed or diverged); every one of them counts
(intention to treat). A crashed, timed-out or unfinished run is not a run of the design: it is
counted in ``excluded``, never averaged. A final return counts every run: a diverged run, or one
without a final return, counts as the task's declared return for diverged runs
(:func:`~experiments.report.runs.results.intention_to_treat`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from experiments.base.errors import ConfigError, unknown_choice
from experiments.jobs import STATUSES
from experiments.report.runs.endpoints import OUTCOME_ENDPOINTS
from experiments.report.runs.results import AVERAGED, Results, intention_to_treat
from experiments.report.statistics.competing import competing_times
from experiments.report.statistics.equivalence import Margin
from experiments.report.table.metrics import METRICS

__all__ = [
    "check_alpha",
    "check_margins",
    "check_metrics",
    "constants",
    "design_frame",
    "design_runs",
    "status_note",
]


def check_metrics(metrics: Sequence[str]) -> None:
    """Every name in :data:`METRICS`, and at least one; else one ConfigError."""
    for name in metrics:
        if name not in METRICS:
            raise unknown_choice("metric", name, METRICS)
    if not metrics:
        raise ConfigError(f"no metric chosen; choose from: {', '.join(METRICS)}")


def status_note(statuses: pd.Series) -> str:
    """``"1 failed, 1 running"``: the runs of each status outside :data:`AVERAGED`, then any
    status a summary cannot hold (a job folder without one: ``1 without summary``)."""
    counts = statuses.value_counts()
    known = [s for s in STATUSES if s not in AVERAGED]
    other = sorted(str(s) for s in counts.index if s not in STATUSES)
    return ", ".join(f"{counts[s]} {s}" for s in [*known, *other] if counts.get(s, 0))


def constants(results: Results) -> dict[str, str]:
    """Settings every run shares: group keys with one value, and the task when not a key."""
    runs = results.runs
    out = {k: str(runs[k].iloc[0]) for k in results.group_keys if runs[k].nunique() == 1}
    tasks = runs["task"].dropna().unique()
    if "task" not in results.group_keys and len(tasks) == 1:
        out["task"] = str(tasks[0])
    return out


def check_alpha(alpha: float) -> float:
    """``alpha`` as a float in (0, 1), or one ConfigError naming it and the range."""
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0.0 < alpha < 1.0:
        raise ConfigError(
            f"alpha={alpha!r} is out of range; expected a number in (0, 1), e.g. 0.05"
        )
    return float(alpha)


def design_frame(runs: pd.DataFrame, metrics: Sequence[str], override: float | None) -> tuple:
    """The runs of the design with the intention-to-treat returns and the times to the threshold
    (``_time``, ``_event``) filled in; and the declared returns used (task -> value)."""
    design = runs[runs["status"].isin(AVERAGED)].copy()
    check_thresholds(design, metrics)
    declared: dict[str, float] = {}
    for name in metrics:
        if METRICS[name].itt:
            values, imputed, used = intention_to_treat(design, name, override=override)
            design[name], design[f"{name}_imputed"] = values, imputed
            declared.update(used)
    if any(METRICS[name].kind == "time" for name in metrics):
        design["_time"], design["_cause"] = competing_times(design)
    return design, declared


def check_thresholds(design: pd.DataFrame, metrics: Sequence[str]) -> None:
    """An outcome endpoint asked of runs whose task declares no competence threshold (``task=gym``
    with any gymnasium id): one line naming the task and the endpoints that need none."""
    wanted = [m for m in metrics if m in OUTCOME_ENDPOINTS]
    if not wanted or design.empty:
        return
    missing = design[design["threshold"].isna()]
    if missing.empty:
        return
    tasks = sorted({str(t) for t in missing["task"]})
    raise ConfigError(
        f"{wanted[0]} needs the task's competence threshold, and task {tasks[0]!r} declares none "
        f"({len(missing)} run(s), e.g. {Path(str(missing['path'].iloc[0])).name}); a registered "
        "task (catch, cartpole, a MinAtar game) has one; for this folder choose unstable, "
        "diverged, collapsed, final_return or another figure"
    )


def design_runs(
    results: Results, metrics: Sequence[str], diverged_return: float | None = None
) -> pd.DataFrame:
    """The runs :func:`summarize` counts (completed or diverged), each metric as it counts it:
    a final return with the declared return for a diverged run, or one without a value.

    Raises:
      ConfigError: a diverged run whose task declares no return.
    """
    return design_frame(results.runs, metrics, diverged_return)[0]


def check_margins(
    margins: Mapping[str, Margin], metrics: Sequence[str], analysis: str
) -> dict[str, Margin]:
    """The margins, each of a rate or value metric of the table, in an independent analysis."""
    choices = [m for m in metrics if METRICS[m].kind != "time"]
    for name in margins:
        if name not in choices:
            raise unknown_choice("equivalence margin endpoint", name, choices)
    if margins and analysis != "independent":
        raise ConfigError(
            f"an equivalence margin needs --analysis independent (TOST of two independent "
            f"samples), not {analysis!r}"
        )
    return dict(margins)
