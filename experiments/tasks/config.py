"""The task section of a job: :class:`TaskConfig`, and the kinds of environment :data:`TASKS`.

:class:`TaskConfig` is the typed, validated task section of the Hydra config
(``conf/task/<name>.yaml`` mirrors it); its fields are plain ``str``/``int``/``float`` so that it
can serve as a Hydra structured-config schema. :data:`TASKS` names the values of ``task.name``
(catch, cartpole, gym, minatar); what is known of each registered task (threshold, return range,
largest |reward|, random return) is in :mod:`experiments.tasks.registry`. ``task.reward_scale``
multiplies every reward, and so the threshold, the return range and the largest |reward| that
:class:`TaskConfig` reports.
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Mapping

from experiments.base.errors import ConfigError, unknown_choice
from experiments.tasks.gym_adapter import check_gym_id
from experiments.tasks.minatar_adapter import check_minatar
from experiments.tasks.registry import facts_for, task_facts

__all__ = ["CARTPOLE_STEPS", "TASKS", "TaskConfig", "TaskInfo"]

CARTPOLE_STEPS = 500
"""CartPole-v1's registered time limit."""


@dataclasses.dataclass(frozen=True)
class TaskInfo:
    """One kind of environment (a ``task.name``), as ``gradlab list`` shows it.

    Attributes:
      description: one line for the CLI.
      threshold: the evaluation return counted as success (NaN where none is defined).
    """

    description: str
    threshold: float


def _info(name: str) -> TaskInfo:
    facts = task_facts(name)
    return TaskInfo(facts.description, math.nan if facts.threshold is None else facts.threshold)


TASKS: Mapping[str, TaskInfo] = types.MappingProxyType(
    {
        "catch": _info("catch"),
        "cartpole": _info("cartpole"),
        "gym": TaskInfo(
            "any gymnasium id with Discrete actions and Box observations (task.id=...)", math.nan
        ),
        "minatar": TaskInfo(
            "MinAtar 10x10 Atari miniatures (task.id=asterix|breakout|freeway|seaquest|"
            "space_invaders, or task=<game>), conv representation",
            math.nan,
        ),
    }
)
"""The values of ``task.name``; the figures of each registered task are in
:mod:`experiments.tasks.registry`."""


@dataclasses.dataclass(frozen=True)
class TaskConfig:
    """The task of a job.

    Attributes:
      name: a key of :data:`TASKS`.
      id: gymnasium id (``cartpole`` fixes it to ``CartPole-v1``; ``gym`` requires it), or the
        MinAtar game (``minatar`` requires it: asterix, breakout, freeway, seaquest,
        space_invaders).
      rows: Catch board height.
      columns: Catch board width.
      max_episode_steps: time limit; 0 for the default (gymnasium: the registered one; MinAtar:
        1000 agent steps, freeway 2501, its own length).
      reward_scale: s > 0; every reward is multiplied by s before it reaches replay (so value and
        reward targets scale), and so are the threshold, the return range and the largest
        |reward|.
    """

    name: str = "catch"
    id: str = ""
    rows: int = 10
    columns: int = 5
    max_episode_steps: int = 0
    reward_scale: float = 1.0

    def __post_init__(self) -> None:
        if self.name not in TASKS:
            raise unknown_choice("task", self.name, TASKS)
        for field, minimum in (("rows", 2), ("columns", 1), ("max_episode_steps", 0)):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ConfigError(
                    f"task.{field}={value!r} is invalid; expected an integer >= {minimum}"
                )
        scale = self.reward_scale
        number = isinstance(scale, int | float) and not isinstance(scale, bool)
        if not (number and math.isfinite(scale) and scale > 0):
            raise ConfigError(
                f"task.reward_scale={scale!r} is out of range; expected a finite number > 0"
            )
        if self.name == "cartpole" and self.id not in ("", "CartPole-v1"):
            raise ConfigError(f"task cartpole has id 'CartPole-v1', not {self.id!r}; use task=gym")
        if self.name == "gym":
            if not self.id:
                raise ConfigError(
                    "task 'gym' needs a gymnasium id: task.id=<id>, e.g. task.id=Acrobot-v1"
                )
            check_gym_id(self.id, self.max_episode_steps)
        if self.name == "minatar":
            check_minatar(self.id)

    @property
    def gym_id(self) -> str:
        """The gymnasium id of a gymnasium task, '' otherwise."""
        if self.name == "cartpole":
            return "CartPole-v1"
        return self.id if self.name == "gym" else ""

    @property
    def threshold(self) -> float:
        """Success threshold of the evaluation return, times ``reward_scale`` (NaN where none)."""
        facts = facts_for(self)
        if facts is None or facts.threshold is None:
            return math.nan
        return facts.threshold * self.reward_scale

    @property
    def return_range(self) -> tuple[float, float] | None:
        """``(min, max)`` episode return times ``reward_scale``; ``None`` where unknown.

        CartPole's maximum is its time limit (500, or ``max_episode_steps`` where set).
        """
        facts = facts_for(self)
        if self.name == "cartpole":
            low, high = 0.0, float(self.max_episode_steps or CARTPOLE_STEPS)
        elif facts is not None and facts.return_range is not None:
            low, high = facts.return_range
        else:
            return None
        return low * self.reward_scale, high * self.reward_scale

    @property
    def max_abs_reward(self) -> float | None:
        """The largest |reward| of one step times ``reward_scale``; ``None`` where unknown."""
        facts = facts_for(self)
        reward = None if facts is None else facts.max_abs_reward
        return None if reward is None else reward * self.reward_scale
