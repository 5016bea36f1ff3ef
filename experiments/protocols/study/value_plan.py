"""The plan of a study across tasks on a value endpoint (``normalised_return``), before
registration: each task's reference and threshold check from the baseline's calibration runs
(:mod:`experiments.protocols.calibration.reference`), the priors (committed runs of the same
regime, task and arms, cited), and the runs an arm a task that give the pooled Welch difference
(:mod:`experiments.protocols.study.value_power`) its target power:

(a) a two-sided test of no difference at the effect to detect (``planning.effect``, else the
    priors' pooled normalised difference), and
(b) the TOST within the declared margin if the true difference is 0,

each from the calibration runs' spread on the normalised scale, with the machine-hours the
larger takes at the calibration runs' median wall time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pandas as pd

from experiments.base.errors import ConfigError
from experiments.protocols.calibration.reference import TaskReference, task_references
from experiments.protocols.study.design import Normalisation, Study
from experiments.protocols.study.value_power import runs_for_power, welch_pooled_power
from experiments.report.runs import intention_to_treat

__all__ = ["Prior", "ValuePlan", "plan_value"]


@dataclasses.dataclass(frozen=True)
class Prior:
    """A committed folder's runs of one task, baseline and primary arm, on the normalised scale.

    Attributes:
      task: the task.
      source: the folder.
      n: runs ``(baseline, arm)``.
      means: mean final returns ``(baseline, arm)`` (ITT).
      difference: ``(mean arm - mean baseline) / (R_ref - R_rand)``.
    """

    task: str
    source: str
    n: tuple[int, int]
    means: tuple[float, float]
    difference: float


@dataclasses.dataclass(frozen=True)
class ValuePlan:
    references: dict[str, TaskReference]
    normalisation: dict[str, Normalisation]
    sds: tuple[float, ...]
    priors: tuple[Prior, ...]
    effect: float
    effect_source: str
    n: int
    power_difference: float
    n_difference: int
    margin: float | None
    power_equivalence: float | None
    n_equivalence: int | None
    hours: float | None
    jobs: int
    target: float
    dropped: dict[str, TaskReference] = dataclasses.field(default_factory=dict)

    def lines(self, study: Study) -> list[str]:
        """The plan as printed."""
        p = study.primary
        out = ["calibration (the baseline alone, calibration seeds):"]
        out += [f"  {r.line()}" for r in self.references.values()]
        out += [f"  {r.line()}; dropped before registration: {study.dropped[t]}"
                for t, r in self.dropped.items()]  # fmt: skip
        for (task, norm), sd in zip(self.normalisation.items(), self.sds, strict=True):
            out.append(
                f"  {task}: normalised return = (R - {norm.r_rand:.4g}) / ({norm.r_ref:.4g} - "
                f"{norm.r_rand:.4g}); sd per run on that scale {sd:.3g}"
            )
        for prior in self.priors:
            out.append(
                f"prior: {prior.source}: {prior.task}, {study.baseline} {prior.means[0]:.4g} "
                f"(n={prior.n[0]}), {p.arm} {prior.means[1]:.4g} (n={prior.n[1]}): normalised "
                f"difference {prior.difference:+.3f}"
            )
        g = len(self.sds)
        out.append(
            f"(a) {p.arm} vs {study.baseline} on {p.endpoint}, pooled over {g} tasks with equal "
            f"weights (Welch), two-sided at alpha {p.alpha}, against a difference of "
            f"{self.effect:+.3f} ({self.effect_source}): power {self.power_difference:.3f} with "
            f"{self.n} runs an arm a task; {self.n_difference} reach {self.target}"
        )
        if self.margin is not None:
            out.append(
                f"(b) equivalence within ±{self.margin:g} (TOST) if the true difference is 0: "
                f"power {self.power_equivalence:.3f} with {self.n} runs an arm a task; "
                f"{self.n_equivalence} reach {self.target}"
            )
        if self.hours is not None:
            need = max(self.n_difference, self.n_equivalence or 0)
            out.append(
                f"machine time: {len(study.arms)} arms x {g} tasks x {need} runs at the "
                f"calibration runs' median wall time / {self.jobs} at once = about "
                f"{self.hours:.1f} h"
            )
        return out


def _normalisation(study: Study, references: dict[str, TaskReference]) -> dict[str, Normalisation]:
    """The declared normalisation, else R_ref from the calibration and the registry's R_rand."""
    out = {}
    for stratum in study.strata:
        task = stratum.task
        if task in study.normalisation:
            out[task] = study.normalisation[task]
            continue
        ref = references.get(task)
        if ref is None:
            raise ConfigError(f"task {task!r} of study {study.name!r} has no calibration runs")
        if ref.r_rand is None:
            raise ConfigError(f"task {task!r} declares no random-policy return to normalise by")
        if not ref.r_ref > ref.r_rand:
            raise ConfigError(
                f"task {task!r}: R_ref {ref.r_ref:.4g} is not above R_rand {ref.r_rand:.4g}; the "
                "baseline does not beat a random policy there, so no normalisation is defined"
            )
        out[task] = Normalisation(ref.r_ref, ref.r_rand)
    return out


def _prior(runs: pd.DataFrame, source: str, study: Study, norm: dict[str, Normalisation]):
    out = []
    for task, group in runs.groupby("task", sort=True):
        if task not in norm:
            continue
        if "regime" in group:
            group = group[group["regime"].astype(str) == study.regime]
        means, ns = [], []
        for arm in (study.baseline, study.primary.arm):
            mine = group[(group["variant"].astype(str) == arm)
                         & group["status"].isin(("completed", "diverged"))]  # fmt: skip
            if mine.empty:
                break
            values, _, _ = intention_to_treat(mine, "final_return")
            means.append(float(np.mean(values)))
            ns.append(len(mine))
        if len(means) == 2:
            n = norm[str(task)]
            diff = (means[1] - means[0]) / (n.r_ref - n.r_rand)
            out.append(Prior(str(task), source, (ns[0], ns[1]), (means[0], means[1]), diff))
    return out


def plan_value(
    study: Study,
    calibration: pd.DataFrame,
    where: str = "",
    *,
    priors: Sequence[tuple[str, pd.DataFrame]] = (),
    effect: float | None = None,
    power: float = 0.8,
    jobs: int = 2,
) -> ValuePlan:
    """The plan of the module docstring.

    Args:
      study: a study across tasks whose primary contrast is on a value endpoint.
      calibration: the calibration folder's runs (``load_results(DIR).runs``).
      priors: ``(source, runs)`` of committed folders of the same regime and arms.
      effect: the difference to detect (default: ``planning.effect``, else the priors').

    Raises:
      ConfigError: a task without calibration runs or a usable normalisation, no effect to
        plan for, or a target power or jobs out of range.
    """
    if jobs < 1:
        raise ConfigError(f"--jobs {jobs}; expected a positive number of runs at once")
    references = task_references(
        calibration, baseline=study.baseline, regime=study.regime, where=where
    )
    missing = [s.task for s in study.strata if s.task not in references]
    if missing:
        raise ConfigError(
            f"task {missing[0]!r} of study {study.name!r} has no {study.baseline} runs in the "
            f"calibration folder (regime {study.regime})"
        )
    norm = _normalisation(study, references)
    sds = tuple(references[t].sd / (n.r_ref - n.r_rand) for t, n in norm.items())
    cited = tuple(p for source, runs in priors for p in _prior(runs, source, study, norm))
    if effect is not None:
        source = "given"
    elif study.planning.effect is not None:
        effect, source = study.planning.effect, "the design's planning.effect"
    elif cited:
        by_task: dict[str, list[float]] = {}
        for p in cited:
            by_task.setdefault(p.task, []).append(p.difference)
        effect = float(np.mean([np.mean(v) for v in by_task.values()]))
        source = f"the priors' mean over {', '.join(by_task)}"
    else:
        raise ConfigError(
            f"study {study.name!r}: no difference to plan for; give --effect, planning.effect "
            "or --prior folders"
        )
    p = study.primary
    n = max(2, min(len(s.seeds) for s in study.strata))  # the design's runs an arm a task
    n_diff = runs_for_power(sds, effect=effect, power=power, alpha=p.alpha)
    pow_eq = n_eq = None
    if p.margin is not None:
        pow_eq = welch_pooled_power(sds, n, effect=0.0, alpha=p.alpha, margin=p.margin)
        n_eq = runs_for_power(sds, effect=0.0, power=power, alpha=p.alpha, margin=p.margin)
    seconds = [references[t].median_seconds for t in norm]
    hours = None
    if all(s is not None for s in seconds):
        need = max(n_diff, n_eq or 0)
        hours = sum(seconds) * need * len(study.arms) / jobs / 3600
    return ValuePlan(
        references={t: references[t] for t in norm},
        normalisation=norm,
        sds=sds,
        priors=cited,
        effect=float(effect),
        effect_source=source,
        n=n,
        power_difference=welch_pooled_power(sds, n, effect=effect, alpha=p.alpha),
        n_difference=n_diff,
        margin=p.margin,
        power_equivalence=pow_eq,
        n_equivalence=n_eq,
        hours=hours,
        jobs=jobs,
        target=power,
        dropped={t: references[t] for t in study.dropped if t in references},
    )
