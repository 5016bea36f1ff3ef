"""The tasks MuZero is trained on: Catch (batched NumPy), CartPole and other gymnasium ids.

:class:`TaskConfig` is the typed, validated task section of the Hydra config
(``conf/task/<name>.yaml`` mirrors it); :data:`TASKS` describes each task with its success
threshold; :func:`make_env` builds a batched :class:`VectorEnv`.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Any

from experiments.errors import ConfigError, build_checked, unknown_choice
from experiments.tasks.base import VectorEnv
from experiments.tasks.catch import CatchEnv
from experiments.tasks.gym_adapter import GymEnv, check_gym_id

__all__ = ["TASKS", "CatchEnv", "GymEnv", "TaskConfig", "TaskInfo", "VectorEnv", "make_env"]


@dataclasses.dataclass(frozen=True)
class TaskInfo:
    """A registry entry: one line for the CLI and the evaluation return counted as success."""

    description: str
    threshold: float


TASKS: Mapping[str, TaskInfo] = types.MappingProxyType(
    {
        "catch": TaskInfo("bsuite Catch, 10x5 board, +1/-1 when the ball lands (NumPy)", 0.9),
        "cartpole": TaskInfo("gymnasium CartPole-v1, +1 per step up to 500", 475.0),
        "gym": TaskInfo(
            "any gymnasium id with Discrete actions and Box observations", float("nan")
        ),
    }
)
"""Registry of task names."""


@dataclasses.dataclass(frozen=True)
class TaskConfig:
    """The task of a job.

    Attributes:
      name: a key of :data:`TASKS`.
      id: gymnasium id (``cartpole`` fixes it to ``CartPole-v1``; ``gym`` requires it).
      rows: Catch board height.
      columns: Catch board width.
      max_episode_steps: gymnasium time-limit override, 0 for the registered one.
    """

    name: str = "catch"
    id: str = ""
    rows: int = 10
    columns: int = 5
    max_episode_steps: int = 0

    def __post_init__(self) -> None:
        if self.name not in TASKS:
            raise unknown_choice("task", self.name, TASKS)
        for field, minimum in (("rows", 2), ("columns", 1), ("max_episode_steps", 0)):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ConfigError(
                    f"task.{field}={value!r} is invalid; expected an integer >= {minimum}"
                )
        if self.name == "cartpole" and self.id not in ("", "CartPole-v1"):
            raise ConfigError(f"task cartpole has id 'CartPole-v1', not {self.id!r}; use task=gym")
        if self.name == "gym":
            if not self.id:
                raise ConfigError(
                    "task 'gym' needs a gymnasium id: task.id=<id>, e.g. task.id=Acrobot-v1"
                )
            check_gym_id(self.id, self.max_episode_steps)

    @property
    def gym_id(self) -> str:
        """The gymnasium id of a gymnasium task, '' for Catch."""
        return "CartPole-v1" if self.name == "cartpole" else self.id

    @property
    def threshold(self) -> float:
        """Success threshold of the evaluation return (NaN where none is defined)."""
        return TASKS[self.name].threshold

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> TaskConfig:
        """Builds the config from a plain mapping; an unknown key raises :class:`ConfigError`."""
        return build_checked(cls, "task", values)


def make_env(task: TaskConfig, num_envs: int, *, seed: int) -> VectorEnv:
    """Builds ``num_envs`` environments of ``task`` stepped together, seeded from ``seed``."""
    if task.name == "catch":
        return CatchEnv(num_envs, rows=task.rows, columns=task.columns, seed=seed)
    return GymEnv(task.gym_id, num_envs, seed=seed, max_episode_steps=task.max_episode_steps)
