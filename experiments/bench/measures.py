"""What ``gradlab bench`` is given and what it measures: its settings and its results (rates,
ratios, times, the report), apart from the measuring (:mod:`experiments.bench.suite` and the
modules it calls, which all import these types from here, so no measuring module imports the
suite that calls it). Imports no TensorFlow.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from experiments.base.errors import ConfigError

__all__ = ["BenchReport", "BenchSettings", "Rate", "Ratio", "Timing"]


@dataclasses.dataclass(frozen=True)
class BenchSettings:
    """Sizes and repeat counts of the bench (defaults: the full bench of the README).

    Attributes:
      hidden_size: H of the train-step and search networks.
      width: units of their hidden Dense layers.
      batch_size: B of the train step.
      unroll_steps: K of the train step.
      compiled_calls: compiled train steps per timed block.
      eager_calls: eager train steps per timed block.
      loop_samples: samples of the batch the pseudocode loop goes through per block (its rate is
        per sample; all ``batch_size`` in the full bench).
      matmul_size: N of the ``[N, N] @ [N, N]`` reference matmul.
      matmul_calls: matmuls per timed block.
      search_batch: B of the compiled and the batched search.
      num_simulations: simulations per search.
      single_searches: one-root searches per timed block of the one-at-a-time side.
      run_steps: training steps consumed of the default catch run (1500: all of it, so its
        "projected" time is its measured time).
      run_skip: its first steps, excluded from the rates.
      run_unroll_steps: K of that run, ``None`` for the default (``--quick`` shortens nothing
        else of it).
      minatar_batch_size: B of the MinAtar train step, ``None`` for the preset's.
      minatar_train_calls: MinAtar train steps per timed block.
      minatar_search_calls: MinAtar searches (self-play moves) per timed block.
      repeats: timed rounds per comparison (medians are reported).
      cli_repeats: runs of each ``gradlab`` start-time command (best is reported).
      seed: seeds networks, batches, boards and the run.
    """

    hidden_size: int = 64
    width: int = 64
    batch_size: int = 128
    unroll_steps: int = 5
    compiled_calls: int = 100
    eager_calls: int = 3
    loop_samples: int = 128
    matmul_size: int = 2048
    matmul_calls: int = 3
    search_batch: int = 64
    num_simulations: int = 50
    single_searches: int = 64
    run_steps: int = 1500
    run_skip: int = 10
    run_unroll_steps: int | None = None
    minatar_batch_size: int | None = None
    minatar_train_calls: int = 20
    minatar_search_calls: int = 50
    repeats: int = 5
    cli_repeats: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name in ("run_unroll_steps", "minatar_batch_size") and value is None:
                continue
            minimum = 0 if field.name == "seed" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ConfigError(
                    f"bench {field.name}={value!r} is invalid; expected an integer >= {minimum}"
                )
        if self.loop_samples > self.batch_size:
            raise ConfigError(
                f"bench loop_samples={self.loop_samples} exceeds batch_size={self.batch_size}"
            )
        if self.single_searches > self.search_batch:
            raise ConfigError(
                f"bench single_searches={self.single_searches} exceeds "
                f"search_batch={self.search_batch}"
            )
        if self.run_skip >= self.run_steps:
            raise ConfigError(
                f"bench run_skip={self.run_skip} is invalid; expected fewer than "
                f"run_steps={self.run_steps}"
            )

    @classmethod
    def quick(cls, **overrides: Any) -> BenchSettings:
        """Tiny block and repeat counts: every measurement runs once, for CI (not for figures)."""
        values = dict(
            compiled_calls=5,
            eager_calls=1,
            loop_samples=2,
            matmul_size=256,
            matmul_calls=2,
            search_batch=8,
            num_simulations=5,
            single_searches=4,
            run_steps=6,
            run_skip=2,
            run_unroll_steps=2,
            minatar_batch_size=16,
            minatar_train_calls=2,
            minatar_search_calls=2,
            repeats=1,
            cli_repeats=1,
        )
        return cls(**{**values, **overrides})


@dataclasses.dataclass(frozen=True)
class Rate:
    """A measured rate: the median over rounds, every round's value, and the least it should be."""

    name: str
    value: float
    unit: str
    runs: tuple[float, ...]
    what: str
    target_min: float | None = None

    @property
    def met(self) -> bool | None:
        """Whether ``value >= target_min`` (None without a target)."""
        return None if self.target_min is None else self.value >= self.target_min


@dataclasses.dataclass(frozen=True)
class Ratio:
    """``value = rates[numerator].value / rates[denominator].value``, with its target."""

    name: str
    numerator: str
    denominator: str
    value: float
    target: float
    what: str

    @property
    def met(self) -> bool:
        """Whether ``value >= target``."""
        return self.value >= self.target


@dataclasses.dataclass(frozen=True)
class Timing:
    """A duration in seconds with the most it should take."""

    name: str
    seconds: float
    target_max: float | None
    what: str

    @property
    def met(self) -> bool | None:
        """Whether ``seconds <= target_max`` (None without a target)."""
        return None if self.target_max is None else self.seconds <= self.target_max


@dataclasses.dataclass(frozen=True)
class BenchReport:
    """Everything ``gradlab bench`` prints (``minatar``: the sizes of the MinAtar rows, a
    ``minatar.MinAtarSizes``)."""

    settings: BenchSettings
    rates: dict[str, Rate]
    ratios: list[Ratio]
    timings: list[Timing]
    device: str
    train_step_flops: int
    minatar: Any = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (ratios and timings with their ``met`` flags)."""
        return {
            "device": self.device,
            "settings": dataclasses.asdict(self.settings),
            "train_step_flops": self.train_step_flops,
            "minatar": None if self.minatar is None else dataclasses.asdict(self.minatar),
            "rates": {
                name: {**dataclasses.asdict(rate), "met": rate.met}
                for name, rate in self.rates.items()
            },
            "ratios": {r.name: {**dataclasses.asdict(r), "met": r.met} for r in self.ratios},
            "timings": {t.name: {**dataclasses.asdict(t), "met": t.met} for t in self.timings},
        }
