"""The task section of a job: :class:`TaskConfig`, and the registry :data:`TASKS`.

:class:`TaskConfig` is the typed, validated task section of the Hydra config
(``conf/task/<name>.yaml`` mirrors it); its fields are plain ``str``/``int``/``float`` so that it
can serve as a Hydra structured-config schema. :data:`TASKS` describes each task: a one-line
description, the success threshold, and, where they are known, the range of episode returns and
the largest |reward| of one step. ``task.reward_scale`` multiplies every reward, and so the
threshold, the return range and the largest |reward| that :class:`TaskConfig` reports.
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Mapping

from experiments.errors import ConfigError, unknown_choice
from experiments.tasks.gym_adapter import check_gym_id
from experiments.tasks.minatar_adapter import MINATAR_GAMES, check_minatar

__all__ = ["CARTPOLE_STEPS", "TASKS", "TaskConfig", "TaskInfo"]

CARTPOLE_STEPS = 500
"""CartPole-v1's registered time limit."""


@dataclasses.dataclass(frozen=True)
class TaskInfo:
    """A registry entry.

    Attributes:
      description: one line for the CLI.
      threshold: the evaluation return counted as success (NaN where none is defined).
      return_range: ``(min, max)`` episode return, ``None`` where unknown.
      max_abs_reward: the largest |reward| of one step, ``None`` where unknown.
    """

    description: str
    threshold: float
    return_range: tuple[float, float] | None = None
    max_abs_reward: float | None = None


TASKS: Mapping[str, TaskInfo] = types.MappingProxyType(
    {
        "catch": TaskInfo(
            "bsuite Catch, 10x5 board, +1/-1 when the ball lands (NumPy)", 0.9, (-1.0, 1.0), 1.0
        ),
        "cartpole": TaskInfo(
            "gymnasium CartPole-v1, +1 per step up to 500", 475.0, (0.0, float(CARTPOLE_STEPS)), 1.0
        ),
        "gym": TaskInfo(
            "any gymnasium id with Discrete actions and Box observations", float("nan")
        ),
        "minatar": TaskInfo(
            "MinAtar 10x10 Atari miniatures (task.id=asterix|breakout|freeway|seaquest|"
            "space_invaders), conv representation",
            float("nan"),
        ),
    }
)
"""Registry of task names (unscaled figures; :class:`TaskConfig` applies ``reward_scale``)."""


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
        return TASKS[self.name].threshold * self.reward_scale

    @property
    def return_range(self) -> tuple[float, float] | None:
        """``(min, max)`` episode return times ``reward_scale``; ``None`` where unknown.

        CartPole's maximum is its time limit (500, or ``max_episode_steps`` where set).
        """
        if self.name == "cartpole":
            low, high = 0.0, float(self.max_episode_steps or CARTPOLE_STEPS)
        elif TASKS[self.name].return_range is not None:
            low, high = TASKS[self.name].return_range
        else:
            return None
        return low * self.reward_scale, high * self.reward_scale

    @property
    def max_abs_reward(self) -> float | None:
        """The largest |reward| of one step times ``reward_scale``; ``None`` where unknown."""
        if self.name == "minatar":
            reward = MINATAR_GAMES[self.id].max_abs_reward
        else:
            reward = TASKS[self.name].max_abs_reward
        return None if reward is None else reward * self.reward_scale
