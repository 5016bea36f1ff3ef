"""A study's design, declared in ``conf/study/NAME.yaml`` before any of its runs.

A :class:`Study` names the task, the regime, the seeds (a range disjoint from its calibration
seeds), the arms (a variant each, with its own overrides), the one primary contrast (an arm
against the baseline on one endpoint, with its test and alpha) and what is exploratory. It is read
with :func:`load_study`, which checks every field and raises a one-line
:class:`~experiments.base.errors.ConfigError` naming a bad value and the valid choices.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

from experiments.base.errors import ConfigError, unknown_choice

__all__ = [
    "ENDPOINTS",
    "RATE_TESTS",
    "Arm",
    "Planning",
    "Primary",
    "Study",
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
    """

    baseline_rate: float | None = None
    arm_rate: float | None = None
    power: float | None = None
    strata: int | None = None

    @property
    def rates(self) -> tuple[float, float] | None:
        """``(baseline_rate, arm_rate)``, or ``None`` where either is not declared."""
        if self.baseline_rate is None or self.arm_rate is None:
            return None
        return self.baseline_rate, self.arm_rate

    def to_json(self) -> dict[str, float | int]:
        """The declared keys only, in the record's form (a key not in the YAML is not written:
        registered records hold exactly what their YAML declared)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


_PLANNING_KEYS = tuple(f.name for f in dataclasses.fields(Planning))


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

    def arm(self, variant: str) -> Arm:
        return next(a for a in self.arms if a.variant == variant)

    def sweep_overrides(self, arm: Arm, results_dir: str | Path) -> list[str]:
        """The ``gradlab sweep`` command line of one arm."""
        return [
            f"ablation={self.ablation}",
            f"variant={arm.variant}",
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


def _margin(name: str, primary: dict) -> tuple[float | None, str | None]:
    """``primary.margin`` (a risk difference in (0, 1)) and ``primary.margin_reason``: both or
    neither."""
    margin, reason = primary.get("margin"), primary.get("margin_reason")
    if margin is None and reason is None:
        return None, None
    if margin is None:
        raise ConfigError(f"study {name!r} gives primary.margin_reason but no primary.margin")
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 < margin < 1:
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
    p = dict(_need(raw, "primary", path))
    primary = Primary(
        str(p["arm"]), str(p["endpoint"]), str(p["test"]), float(p["alpha"]), *_margin(name, p)
    )
    for what, value, choices in (
        ("baseline arm", baseline, variants),
        ("primary arm", primary.arm, [v for v in variants if v != baseline]),
        ("primary endpoint", primary.endpoint, ENDPOINTS),
        ("primary test", primary.test, RATE_TESTS),
    ):
        if value not in choices:
            raise unknown_choice(f"{what} of study {name!r}:", value, choices)
    if not 0.0 < primary.alpha < 1.0:
        raise ConfigError(
            f"primary alpha={primary.alpha} of study {name!r}; expected 0 < alpha < 1"
        )
    seeds = _range("seeds", _need(raw, "seeds", path))
    calibration = _range("calibration_seeds", raw.get("calibration_seeds", [100, 110]))
    overlap = sorted(set(seeds) & set(calibration))
    if overlap:
        raise ConfigError(
            f"study {name!r}: seeds {overlap[0]}..{overlap[-1]} are also calibration seeds; "
            "calibration seeds are never study seeds"
        )
    if str(raw.get("name", name)) != name:
        raise ConfigError(f"study file {str(path)!r} is named {raw.get('name')!r}, not {name!r}")
    return Study(
        name=name,
        ablation=str(_need(raw, "ablation", path)),
        task=str(_need(raw, "task", path)),
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
    )


def _flag(name: str, key: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key}={value!r} of study {name!r}; expected true or false")
    return value
