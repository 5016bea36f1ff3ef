"""``gradlab study plan``: a study's power, the runs an arm that reach a target, and its
machine time, before registration (its lines said through ``say``, its notes through ``note``).

A study on a rate endpoint (one task): the exact power of the primary contrast (Fisher's test,
by enumeration), with ``strata`` the pooled CMH power, with a margin the equivalence design's
(TOST, Miettinen-Nurminen), the threshold's place in the baseline's calibration runs and the
priors' k/n cited; a study across tasks on ``normalised_return``:
:func:`~experiments.protocols.study.value_plan.plan_value`. A pilot's difference overstates the
effect (its best contrast was chosen by its result), so with a pilot the plan is for ``shrink``
(default half) of it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from experiments.base.errors import ConfigError
from experiments.protocols.calibration.reference import task_references
from experiments.protocols.study.power import (
    equivalence_power,
    fisher_power,
    pooled_power,
    seeds_for_equivalence,
    seeds_for_power,
)
from experiments.protocols.study.value_plan import plan_value
from experiments.report.runs import load_results

__all__ = ["plan_study"]

Say = Callable[[str], None]


def plan_study(
    study,
    *,
    say: Say,
    note: Say,
    rates: str | None = None,
    pilot: Path | None = None,
    shrink: float = 0.5,
    power: float = 0.9,
    jobs: int = 2,
    strata: int = 1,
    margin: float | None = None,
    true_rates: str | None = None,
    calibration: Path | None = None,
    prior: list[Path] | None = None,
    effect: float | None = None,
) -> None:
    """The plan of ``study`` (module docstring), the options as ``gradlab study plan``'s.

    Raises:
      ConfigError: an option out of range, or inputs the plan cannot use (one line).
    """
    name = study.name
    if jobs < 1:
        raise ConfigError(f"--jobs {jobs}; expected a positive number of runs at once")
    if not 0 < power < 1:
        raise ConfigError(f"--power {power}; expected a target power in (0, 1)")
    if not 0 <= shrink <= 1:
        raise ConfigError(
            f"--shrink {shrink}; expected the share of the pilot's difference, in [0, 1]"
        )
    if strata > 64:
        raise ConfigError(f"--strata {strata}; expected the number of tasks pooled, 1 to 64")
    if true_rates is not None:
        for rate in _rates(true_rates):
            if not 0 <= rate <= 1:
                raise ConfigError(f"--true-rates {true_rates!r}: {rate:g} is not a rate in [0, 1]")
        if margin is None and study.primary.margin is None:
            raise ConfigError(
                f"--true-rates {true_rates!r} is for an equivalence plan; give --margin (study "
                f"{name!r} declares none)"
            )
    if study.across_tasks:
        _value_plan(study, calibration, prior or [], say, effect=effect, power=power, jobs=jobs)
        return
    if calibration is not None:
        _threshold_check(study, calibration, say)
    for folder in prior or []:
        _rate_prior(study, folder, say)
    if margin is not None and (isinstance(margin, bool) or not 0 < margin < 1):
        raise ConfigError(f"--margin {margin!r}; expected a risk difference in (0, 1), e.g. 0.2")
    seconds = None
    if pilot is not None:
        base, arm, seconds = _pilot(study, pilot)
        p1, p2 = base, base + shrink * (arm - base)
    elif rates is None:
        if study.planning.rates is None:
            raise ConfigError(f"study {name!r} declares no planning rates; give --rates P1,P2")
        p1, p2 = (float(r) for r in study.planning.rates)
    else:
        p1, p2 = _rates(rates)
    alpha, n = study.primary.alpha, len(study.seeds)
    got = fisher_power(p1, p2, n, alpha=alpha)
    margin = study.primary.margin if margin is None else margin
    try:
        need = f"{seeds_for_power(p1, p2, power=power, alpha=alpha)} runs per arm reach {power}"
    except ConfigError:
        if margin is None:  # an equivalence plan may assume equal rates: no Fisher n then
            raise
        need = f"no n up to 200 runs per arm reaches {power}"
    pooled = None
    if strata > 1:
        try:
            pooled = pooled_power([(p2, p1)] * strata, n, alpha=alpha)
        except ConfigError as err:
            if margin is None:  # the equivalence plan's pooled line does not need the CMH's
                raise
            note(f"note: the pooled CMH power is not computed: {err}")
    say(
        f"{study.primary.arm} vs {study.baseline} on {study.primary.endpoint}, rates "
        f"{p1:.3g} vs {p2:.3g}, Fisher two-sided at alpha {alpha}: power {got:.3f} with {n} "
        f"runs per arm; {need}"
    )
    if margin is not None:
        _equivalence_plan(study, p1, true_rates, say, margin=margin, n=n, power=power)
        if strata > 1:
            _pooled_equivalence_plan(study, p1, true_rates, say, margin=margin, n=n,
                                     strata=strata, power=power)  # fmt: skip
    if pooled is not None:
        say(
            f"pooled over {strata} strata at these rates, {n} runs per arm each (CMH, as gradlab "
            f"pool tests it): power {pooled:.3f}"
        )
    if seconds is not None:
        total = seconds * n * len(study.arms) / max(1, jobs)
        say(
            f"wall time: {len(study.arms)} arms x {n} runs x {seconds:.0f} s (the pilot's median "
            f"run) / {jobs} at once = about {total / 3600:.1f} h"
        )


def _rates(text: str) -> tuple[float, float]:
    try:
        p1, p2 = (float(x) for x in text.split(","))
    except ValueError:
        raise ConfigError(f"--rates {text!r}; expected two rates, e.g. 0.6,0.3") from None
    return p1, p2


def _pilot(study, folder: Path) -> tuple[float, float, float | None]:
    """The baseline's and the primary arm's rates of the primary endpoint in a pilot folder (its
    runs in the study's regime), and the median seconds of a run there."""
    runs = load_results(folder).runs
    if "regime" in runs:
        runs = runs[runs["regime"] == study.regime]
    rates = []
    for arm in (study.baseline, study.primary.arm):
        values = runs.loc[runs.get("variant") == arm, study.primary.endpoint].dropna()
        if values.empty:
            raise ConfigError(
                f"pilot {str(folder)!r} has no {arm} runs with {study.primary.endpoint} in "
                f"regime {study.regime}"
            )
        rates.append(float(values.mean()))
    seconds = runs["wall_time_s"].dropna() if "wall_time_s" in runs else []
    return rates[0], rates[1], (float(np.median(seconds)) if len(seconds) else None)


def _runs(folder: Path):
    return load_results(folder).runs


def _value_plan(study, calibration: Path | None, priors: list[Path], say: Say, **kwargs) -> None:
    """`plan` for a study across tasks on a value endpoint (``normalised_return``)."""
    if calibration is None:
        tasks = ", ".join(s.task for s in study.strata)
        raise ConfigError(
            f"study {study.name!r} plans {study.primary.endpoint} over {tasks}: its power needs "
            "the baseline's calibration runs (--calibration DIR)"
        )
    cited = [(str(p), _runs(p)) for p in priors]
    plan = plan_value(study, _runs(calibration), repr(str(calibration)), priors=cited, **kwargs)
    for line in plan.lines(study):
        say(line)


def _threshold_check(study, calibration: Path, say: Say) -> None:
    """Where the study's threshold falls in the baseline's calibration runs, one line."""
    refs = task_references(_runs(calibration), baseline=study.baseline, regime=study.regime,
                           where=repr(str(calibration)))  # fmt: skip
    if study.task not in refs:
        raise ConfigError(
            f"task {study.task!r} of study {study.name!r} has no {study.baseline} runs in "
            f"{str(calibration)!r} (regime {study.regime})"
        )
    say(f"calibration ({calibration}): {refs[study.task].line()}")


def _rate_prior(study, folder: Path, say: Say) -> None:
    """A committed folder's k/n of the primary endpoint for the baseline and the primary arm
    (same regime and task), cited beside the rates the plan assumes."""
    runs = _runs(folder)
    keep = runs["task"].astype(str) == study.task
    if "regime" in runs:
        keep &= runs["regime"].astype(str) == study.regime
    shown = []
    for arm in (study.baseline, study.primary.arm):
        values = runs.loc[keep & (runs["variant"].astype(str) == arm), study.primary.endpoint]
        values = values.dropna()
        shown.append(f"{arm} {int(values.sum())}/{len(values)}")
    say(
        f"prior: {folder}: {study.task}, regime {study.regime}, {study.primary.endpoint}: "
        + ", ".join(shown)
    )


def _equivalence_plan(
    study, base: float, true_rates: str | None, say: Say, *, margin: float, n: int, power: float
) -> None:
    """The equivalence line of `plan`: exact TOST power at n and the runs per arm for ``power``."""
    p0, p1 = _rates(true_rates) if true_rates is not None else (base, base)
    alpha = study.primary.alpha
    got = equivalence_power(p0, p1, n, margin=margin, alpha=alpha)
    most = 400
    try:
        need = seeds_for_equivalence(p0, p1, margin=margin, power=power, alpha=alpha, max_n=most)
        need = f"{need} runs per arm reach {power}"
    except ConfigError:  # as the Fisher line: the power at n still stands, and the pooled line
        need = f"no n up to {most} runs per arm reaches {power}"
    say(
        f"equivalence of {study.primary.arm} and {study.baseline} on {study.primary.endpoint} "
        f"within ±{margin:g}, true rates {p0:.3g} vs {p1:.3g}, TOST (Miettinen-Nurminen score) "
        f"at alpha {alpha}: power {got:.3f} with {n} runs per arm; {need}"
    )


def _pooled_equivalence_plan(
    study, base: float, true_rates: str | None, say: Say, *, margin: float, n: int,
    strata: int, power: float,
) -> None:  # fmt: skip
    """With --strata S and a margin: the power of gradlab pool --margin's test (the counts of S
    strata of n runs per arm summed: one TOST on S x n runs per arm, at rates equal across the
    strata) and the runs per arm per stratum that reach ``power``."""
    p0, p1 = _rates(true_rates) if true_rates is not None else (base, base)
    alpha = study.primary.alpha
    got = equivalence_power(p0, p1, strata * n, margin=margin, alpha=alpha)
    most = -(-2000 // strata)  # searched up to 2,000 runs per arm in all
    try:
        per = seeds_for_equivalence(
            p0, p1, margin=margin, power=power, alpha=alpha, strata=strata, max_n=most
        )
        need = f"{per} runs per arm per stratum reach {power}"
    except ConfigError:
        need = f"no n up to {most} runs per arm per stratum reaches {power}"
    say(
        f"pooled over {strata} strata (counts summed, as gradlab pool --margin tests it), "
        f"{n} runs per arm each: equivalence power {got:.3f}; {need}"
    )
