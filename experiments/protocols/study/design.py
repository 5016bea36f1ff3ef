"""A study's design, declared in ``conf/study/NAME.yaml`` before any of its runs.

A :class:`Study` names the task, the regime, the seeds (a range disjoint from its calibration
seeds), the arms (a variant each, with its own overrides), the one primary contrast (an arm
against the baseline on one endpoint, with its test and alpha) and what is exploratory. It is read
with :func:`load_study`, which checks every field and raises a one-line
:class:`~experiments.base.errors.ConfigError` naming a bad value and the valid choices.

A study across tasks is one design too (``tasks:``, one :class:`TaskStratum` each with its own
seeds): the same arms in every task, and one declared confirmatory :class:`Family`
(``confirmatory:``): the pooled contrast(s) over the tasks, each with its endpoint, method,
margin and alpha, and whether the per-task tests are confirmatory (Holm across the tasks) or
exploratory. A normalised endpoint (``normalised_return``) needs each task's reference and
random-policy return (``normalisation:``), declared before the runs. Its ``primary`` is the
family's first pooled contrast.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

from experiments.base.errors import ConfigError, unknown_choice

__all__ = [
    "ENDPOINTS",
    "PER_TASK",
    "RATE_TESTS",
    "VALUE_ENDPOINTS",
    "VALUE_TESTS",
    "Arm",
    "Family",
    "Normalisation",
    "Planning",
    "Primary",
    "Study",
    "TaskStratum",
    "load_study",
    "study_names",
]

RATE_TESTS = ("fisher", "barnard")
ENDPOINTS = (
    "failed",
    "lost_after_learning",
    "never_learned",
    "failed_v1",
    "unstable",
    "diverged",
    "collapsed",
)
"""Rate endpoints a primary contrast may use (0/1 per run, every run counted)."""

VALUE_ENDPOINTS = ("normalised_return",)
"""Value endpoints a pooled contrast of a study across tasks may use: ``normalised_return`` is
``(R - R_rand) / (R_ref - R_rand)`` of a run's final return ``R`` (a diverged run at ``R_rand``),
each task's ``R_ref`` and ``R_rand`` declared in the design (:class:`Normalisation`)."""

VALUE_TESTS = ("welch_equal_weights",)
"""Pooled tests of a value endpoint: ``welch_equal_weights`` is the mean of the per-task
differences of the arms' means (each task weighted 1/G), its variance the sum of the per-task
Welch variances over G^2, Satterthwaite's degrees of freedom; a two-sided t test of no difference
and, with a margin, two one-sided t tests against +-margin (TOST)
(:mod:`experiments.report.statistics.welch_pooled`)."""

PER_TASK = ("exploratory", "holm")
"""How a study across tasks declares its per-task tests: ``exploratory``, or ``holm``:
confirmatory too, Holm-adjusted across the tasks."""


@dataclasses.dataclass(frozen=True)
class Arm:
    variant: str
    overrides: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return " ".join([self.variant, *self.overrides])


@dataclasses.dataclass(frozen=True)
class Primary:
    arm: str
    endpoint: str
    test: str
    alpha: float
    margin: float | None = None  # equivalence margin on the endpoint (a risk difference), > 0
    margin_reason: str | None = None  # why that margin, declared with it


@dataclasses.dataclass(frozen=True)
class Planning:
    """The rates a study's size was planned on (``planning:`` in its YAML); every field optional.

    Attributes:
      baseline_rate: the primary endpoint's assumed rate in the baseline arm, in [0, 1].
      arm_rate: the same in the primary arm, in [0, 1].
      power: the power the design claims at those rates (the record holds the one computed).
      strata: the number of studies whose summed counts the primary test pools (an equivalence
        study that is one stratum of ``gradlab pool --margin``); ``None``: one, not pooled.
      effect: a value endpoint's difference (arm minus baseline) the design should detect.
      sd: a value endpoint's assumed standard deviation per run, in every task and arm.
      priors: where the assumed figures come from (committed runs, k/n or mean and sd), as
        declared: ``gradlab study plan`` prints them.
    """

    baseline_rate: float | None = None
    arm_rate: float | None = None
    power: float | None = None
    strata: int | None = None
    effect: float | None = None
    sd: float | None = None
    priors: str | None = None

    @property
    def rates(self) -> tuple[float, float] | None:
        """``(baseline_rate, arm_rate)``, or ``None`` where either is not declared."""
        if self.baseline_rate is None or self.arm_rate is None:
            return None
        return self.baseline_rate, self.arm_rate

    def to_json(self) -> dict[str, float | int | str]:
        """The declared keys only, in the record's form (a key not in the YAML is not written:
        registered records hold exactly what their YAML declared)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


_PLANNING_KEYS = tuple(f.name for f in dataclasses.fields(Planning))


@dataclasses.dataclass(frozen=True)
class TaskStratum:
    """One task of a study across tasks: its name and its own seeds (no two tasks share one)."""

    task: str
    seeds: range


@dataclasses.dataclass(frozen=True)
class Normalisation:
    """A task's declared normalisation of the return: ``(R - r_rand) / (r_ref - r_rand)``.

    Attributes:
      r_ref: the reference return (the baseline's mean final return on calibration seeds).
      r_rand: the task's uniformly random policy's mean return (the task registry's).
    """

    r_ref: float
    r_rand: float


@dataclasses.dataclass(frozen=True)
class Family:
    """A study's confirmatory family across tasks.

    Attributes:
      pooled: the pooled contrasts (each tested alone when there is one; Holm across them
        otherwise), each an arm against the baseline on an endpoint with its method, alpha and
        margin.
      per_task: ``exploratory`` or ``holm`` (:data:`PER_TASK`).
    """

    pooled: tuple[Primary, ...]
    per_task: str = "exploratory"


def _planning(name: str, raw: object) -> Planning:
    """``planning:`` of study ``name``, checked: known keys, rates and power in [0, 1], strata a
    positive integer."""
    if raw is None:
        return Planning()
    if not isinstance(raw, dict):
        raise ConfigError(
            f"planning={raw!r} of study {name!r}; expected a mapping, e.g. "
            "{baseline_rate: 0.6, arm_rate: 0.3, power: 0.9}"
        )
    for key, value in raw.items():
        if key not in _PLANNING_KEYS:
            raise unknown_choice(f"planning key of study {name!r}:", key, _PLANNING_KEYS)
        if key == "strata":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(
                    f"planning.strata={value!r} of study {name!r}; expected a positive integer"
                )
        elif key == "priors":
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"planning.priors of study {name!r}; expected a sentence")
        elif key in ("effect", "sd"):
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or (key == "sd" and not value > 0)
            ):
                raise ConfigError(
                    f"planning.{key}={value!r} of study {name!r}; expected a number"
                    + (" > 0" if key == "sd" else "")
                )
        elif isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ConfigError(
                f"planning.{key}={value!r} of study {name!r}; expected a number in [0, 1]"
            )
    return Planning(**raw)


@dataclasses.dataclass(frozen=True)
class Study:
    name: str
    ablation: str
    task: str
    regime: str
    seeds: range
    calibration_seeds: range
    baseline: str
    arms: tuple[Arm, ...]
    primary: Primary
    planning: Planning
    exploratory_endpoints: tuple[str, ...]
    diverged_return: str
    overrides: tuple[str, ...]
    faithful: bool = False  # claims MuZero's own setting: normalisation kept, K = 5 (register)
    tasks: tuple[TaskStratum, ...] = ()  # a study across tasks (then task is "", seeds empty)
    family: Family | None = None  # a study across tasks' confirmatory family
    normalisation: dict[str, Normalisation] = dataclasses.field(default_factory=dict)
    normalisation_source: str | None = None  # how R_ref and R_rand were obtained, declared
    final_window: int | None = None  # evaluations in a run's final window, declared
    dropped: dict[str, str] = dataclasses.field(
        default_factory=dict
    )  # task -> why, before registration

    @property
    def across_tasks(self) -> bool:
        """A study across several tasks (``tasks:``), one record for all of them."""
        return bool(self.tasks)

    @property
    def strata(self) -> tuple[TaskStratum, ...]:
        """Its tasks with their seeds: ``tasks``, or the one task of a single-task study."""
        return self.tasks or (TaskStratum(self.task, self.seeds),)

    @property
    def n_jobs(self) -> int:
        """Registered jobs: arms x seeds, summed over the tasks."""
        return len(self.arms) * sum(len(s.seeds) for s in self.strata)

    def stratum(self, task: str) -> TaskStratum | None:
        """The stratum of ``task``; None when the study has no such task."""
        return next((s for s in self.strata if s.task == task), None)

    def arm_key(self, arm: Arm, task: str) -> str:
        """How the record and the audit name an arm in a task: its label (one task), or
        ``TASK: LABEL`` in a study across tasks."""
        return f"{task}: {arm.label}" if self.across_tasks else arm.label

    def arm(self, variant: str) -> Arm:
        return next(a for a in self.arms if a.variant == variant)

    def sweep_overrides(
        self, arm: Arm, results_dir: str | Path, stratum: TaskStratum | None = None
    ) -> list[str]:
        """The ``gradlab sweep`` command line of one arm (in one task, for a study across
        tasks: its task and seeds given on the command line)."""
        where = []
        if self.across_tasks:
            if stratum is None:
                raise ValueError("a study across tasks sweeps one task at a time")
            where = [f"task={stratum.task}",
                     f"seed=range({stratum.seeds.start},{stratum.seeds.stop})"]  # fmt: skip
        return [
            f"ablation={self.ablation}",
            f"variant={arm.variant}",
            *where,
            *arm.overrides,
            *self.overrides,
            f"runtime.results_dir={results_dir}",
        ]


def study_names(config_dir: str | Path) -> list[str]:
    return sorted(p.stem for p in (Path(config_dir) / "study").glob("*.yaml"))


def _range(name: str, value: object) -> range:
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value)):
        raise ConfigError(f"{name}={value!r}; expected [start, stop] (integers, stop exclusive)")
    start, stop = value
    if stop <= start:
        raise ConfigError(f"{name}={value!r} is empty; expected start < stop")
    return range(start, stop)


def _need(raw: dict, key: str, path: Path) -> object:
    if key not in raw:
        raise ConfigError(f"study file {str(path)!r} has no {key!r}")
    return raw[key]


def _margin(name: str, primary: dict, *, value: bool = False) -> tuple[float | None, str | None]:
    """``primary.margin`` (a risk difference in (0, 1); for a value endpoint, a positive
    difference on its scale) and ``primary.margin_reason``: both or neither."""
    margin, reason = primary.get("margin"), primary.get("margin_reason")
    if margin is None and reason is None:
        return None, None
    if margin is None:
        raise ConfigError(f"study {name!r} gives primary.margin_reason but no primary.margin")
    bad = isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 < margin
    if value and bad:
        raise ConfigError(f"primary.margin={margin!r} of study {name!r}; expected a number > 0")
    if not value and (bad or not margin < 1):
        raise ConfigError(
            f"primary.margin={margin!r} of study {name!r}; expected a risk difference in (0, 1), "
            "e.g. 0.2"
        )
    if not isinstance(reason, str) or not reason.strip():
        raise ConfigError(
            f"primary.margin={margin} of study {name!r} has no primary.margin_reason; a margin "
            "is declared with its reason"
        )
    return float(margin), reason.strip()


def _primary(name: str, p: dict, *, variants: list[str], baseline: str, where: str) -> Primary:
    """One declared contrast (``primary:``, or one of ``confirmatory.pooled``), checked."""
    if not isinstance(p, dict):
        raise ConfigError(f"{where} of study {name!r} is {p!r}; expected a mapping")
    for key in ("arm", "endpoint", "test", "alpha"):
        if key not in p:
            raise ConfigError(f"{where} of study {name!r} has no {key!r}")
    value_endpoint = str(p["endpoint"]) in VALUE_ENDPOINTS
    margin, reason = _margin(name, p, value=value_endpoint)
    primary = Primary(str(p["arm"]), str(p["endpoint"]), str(p["test"]), float(p["alpha"]),
                      margin, reason)  # fmt: skip
    endpoints = ENDPOINTS + VALUE_ENDPOINTS if where != "primary" else ENDPOINTS
    for what, value, choices in (
        (f"{where} arm", primary.arm, [v for v in variants if v != baseline]),
        (f"{where} endpoint", primary.endpoint, endpoints),
        (f"{where} test", primary.test, VALUE_TESTS if value_endpoint else RATE_TESTS),
    ):
        if value not in choices:
            raise unknown_choice(f"{what} of study {name!r}:", value, choices)
    if not 0.0 < primary.alpha < 1.0:
        raise ConfigError(
            f"{where} alpha={primary.alpha} of study {name!r}; expected 0 < alpha < 1"
        )
    return primary


def _tasks(name: str, raw: object, calibration: range) -> tuple[TaskStratum, ...]:
    """``tasks:`` of a study across tasks: each ``{task: NAME, seeds: [start, stop]}``, no task
    twice, no seed in two tasks or among the calibration seeds."""
    if not isinstance(raw, list) or len(raw) < 2:
        raise ConfigError(
            f"tasks={raw!r} of study {name!r}; expected a list of two or more "
            "{task: NAME, seeds: [start, stop]}"
        )
    out: list[TaskStratum] = []
    for item in raw:
        if not isinstance(item, dict) or set(item) != {"task", "seeds"}:
            raise ConfigError(
                f"task entry {item!r} of study {name!r}; expected {{task: NAME, seeds: [start, "
                "stop]}"
            )
        task = str(item["task"])
        seeds = _range(f"seeds of task {task!r}", item["seeds"])
        for other in out:
            if other.task == task:
                raise ConfigError(f"study {name!r} lists task {task!r} twice")
            clash = set(seeds) & set(other.seeds)
            if clash:
                raise ConfigError(
                    f"study {name!r}: seeds {min(clash)}..{max(clash)} of task {task!r} are also "
                    f"task {other.task!r}'s; each task has its own seeds"
                )
        overlap = sorted(set(seeds) & set(calibration))
        if overlap:
            raise ConfigError(
                f"study {name!r}: seeds {overlap[0]}..{overlap[-1]} of task {task!r} are also "
                "calibration seeds; calibration seeds are never study seeds"
            )
        out.append(TaskStratum(task, seeds))
    return tuple(out)


def _family(name: str, raw: object, *, variants: list[str], baseline: str) -> Family:
    """``confirmatory:`` of a study across tasks: ``pooled`` (one or more contrasts) and
    ``per_task`` (:data:`PER_TASK`)."""
    if not isinstance(raw, dict) or not raw.get("pooled"):
        raise ConfigError(
            f"study {name!r} spans several tasks but declares no confirmatory family; expected "
            "confirmatory: {pooled: [{arm, endpoint, test, alpha, margin, margin_reason}], "
            "per_task: exploratory}"
        )
    unknown = sorted(set(raw) - {"pooled", "per_task"})
    if unknown:
        raise unknown_choice(f"confirmatory key of study {name!r}:", unknown[0],
                             ("pooled", "per_task"))  # fmt: skip
    pooled = raw["pooled"] if isinstance(raw["pooled"], list) else [raw["pooled"]]
    contrasts = tuple(
        _primary(name, p, variants=variants, baseline=baseline, where="confirmatory.pooled")
        for p in pooled
    )
    per_task = str(raw.get("per_task", "exploratory"))
    if per_task not in PER_TASK:
        raise unknown_choice(f"confirmatory.per_task of study {name!r}:", per_task, PER_TASK)
    return Family(contrasts, per_task)


def _normalisation(
    name: str, raw: object, tasks: tuple[TaskStratum, ...], family: Family
) -> dict[str, Normalisation]:
    """``normalisation:`` of a study across tasks: ``{TASK: {r_ref, r_rand}}`` for every task,
    ``r_ref`` above ``r_rand``; none before calibration (``gradlab study plan`` then reads it from
    the calibration runs, and ``study register`` refuses a normalised endpoint without it)."""
    if raw is None:  # a plan reads it from the calibration; registration requires it
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"normalisation={raw!r} of study {name!r}; expected a mapping by task")
    out = {}
    names = [t.task for t in tasks]
    for task in names:
        entry = raw.get(task)
        if not isinstance(entry, dict) or set(entry) != {"r_ref", "r_rand"}:
            raise ConfigError(
                f"normalisation of task {task!r} in study {name!r} is {entry!r}; expected "
                "{r_ref: R, r_rand: R} (the reference and the random-policy return)"
            )
        ref, rand = entry["r_ref"], entry["r_rand"]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (ref, rand)):
            raise ConfigError(f"normalisation of task {task!r} in study {name!r}: not numbers")
        if not ref > rand:
            raise ConfigError(
                f"normalisation of task {task!r} in study {name!r}: r_ref={ref} is not above "
                f"r_rand={rand}; the reference return must exceed the random policy's"
            )
        out[task] = Normalisation(float(ref), float(rand))
    extra = sorted(set(raw) - set(names))
    if extra:
        raise unknown_choice(f"normalisation task of study {name!r}:", extra[0], names)
    return out


def load_study(name: str, config_dir: str | Path) -> Study:
    """Reads and checks ``conf/study/NAME.yaml`` (plain YAML, no composition)."""
    config_dir = Path(config_dir)
    path = config_dir / "study" / f"{name}.yaml"
    if not path.is_file():
        raise unknown_choice("study", name, study_names(config_dir))
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    arms = tuple(
        Arm(str(a["variant"]), tuple(str(o) for o in a.get("overrides", ())))
        for a in _need(raw, "arms", path)
    )
    variants = [a.variant for a in arms]
    if len(set(variants)) != len(variants):
        raise ConfigError(f"study {name!r} lists an arm twice: {', '.join(variants)}")
    baseline = str(_need(raw, "baseline", path))
    if baseline not in variants:
        raise unknown_choice(f"baseline arm of study {name!r}:", baseline, variants)
    calibration = _range("calibration_seeds", raw.get("calibration_seeds", [100, 110]))
    if str(raw.get("name", name)) != name:
        raise ConfigError(f"study file {str(path)!r} is named {raw.get('name')!r}, not {name!r}")
    across = "tasks" in raw
    if across:
        for key in ("task", "seeds", "primary"):
            if key in raw:
                raise ConfigError(
                    f"study {name!r} spans several tasks (tasks:) and also gives {key!r}; a "
                    "study across tasks gives each task's seeds under tasks: and its "
                    "confirmatory family under confirmatory:"
                )
        tasks = _tasks(name, raw["tasks"], calibration)
        family = _family(name, raw.get("confirmatory"), variants=variants, baseline=baseline)
        primary, task, seeds = family.pooled[0], "", range(0)
        normalisation = _normalisation(name, raw.get("normalisation"), tasks, family)
    else:
        if "confirmatory" in raw or "normalisation" in raw:
            raise ConfigError(
                f"study {name!r} has one task; confirmatory: and normalisation: belong to a "
                "study across tasks (tasks:), a single-task study declares primary:"
            )
        primary = _primary(name, dict(_need(raw, "primary", path)), variants=variants,
                           baseline=baseline, where="primary")  # fmt: skip
        task, tasks, family, normalisation = str(_need(raw, "task", path)), (), None, {}
        seeds = _range("seeds", _need(raw, "seeds", path))
        overlap = sorted(set(seeds) & set(calibration))
        if overlap:
            raise ConfigError(
                f"study {name!r}: seeds {overlap[0]}..{overlap[-1]} are also calibration seeds; "
                "calibration seeds are never study seeds"
            )
    window = raw.get("final_window")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int)
                               or window < 1):  # fmt: skip
        raise ConfigError(f"final_window={window!r} of study {name!r}; expected a positive integer")
    dropped = raw.get("dropped", {}) or {}
    if not isinstance(dropped, dict) or not all(isinstance(v, str) for v in dropped.values()):
        raise ConfigError(f"dropped={dropped!r} of study {name!r}; expected {{TASK: reason}}")
    source = raw.get("normalisation_source")
    return Study(
        name=name,
        ablation=str(_need(raw, "ablation", path)),
        task=task,
        regime=str(_need(raw, "regime", path)),
        seeds=seeds,
        calibration_seeds=calibration,
        baseline=baseline,
        arms=arms,
        primary=primary,
        planning=_planning(name, raw.get("planning")),
        exploratory_endpoints=tuple(raw.get("exploratory", {}).get("endpoints", ())),
        diverged_return=str(raw.get("diverged_return", "random_policy")),
        overrides=tuple(str(o) for o in raw.get("overrides", ())),
        faithful=_flag(name, "faithful", raw.get("faithful", False)),
        tasks=tasks,
        family=family,
        normalisation=normalisation,
        normalisation_source=None if source is None else str(source),
        final_window=window,
        dropped={str(k): v for k, v in dropped.items()},
    )


def _flag(name: str, key: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key}={value!r} of study {name!r}; expected true or false")
    return value
