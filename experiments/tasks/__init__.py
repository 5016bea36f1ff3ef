"""The tasks MuZero is trained on: Catch (batched NumPy), CartPole and other gymnasium ids, MinAtar.

:class:`TaskConfig` is the typed, validated task section of the Hydra config
(``conf/task/<name>.yaml`` mirrors it); :func:`task_facts` and :func:`task_names` give the
registry (:mod:`experiments.tasks.registry`: one entry per task); :func:`make_env` builds a
batched :class:`VectorEnv`, its rewards times ``task.reward_scale``.
"""

from __future__ import annotations

from experiments.base.errors import unknown_choice
from experiments.tasks.base import ScaledRewards, VectorEnv
from experiments.tasks.catch import CatchEnv
from experiments.tasks.config import TASKS, TaskConfig, TaskInfo
from experiments.tasks.gym_adapter import GymEnv
from experiments.tasks.minatar_adapter import MINATAR_GAMES, MinAtarEnv
from experiments.tasks.published import PUBLISHED
from experiments.tasks.registry import MAKERS, TaskFacts, facts_for, task_facts, task_names

__all__ = [
    "MINATAR_GAMES",
    "PUBLISHED",
    "TASKS",
    "CatchEnv",
    "GymEnv",
    "MinAtarEnv",
    "ScaledRewards",
    "TaskConfig",
    "TaskFacts",
    "TaskInfo",
    "VectorEnv",
    "facts_for",
    "make_env",
    "task_facts",
    "task_names",
]


def make_env(task: TaskConfig, num_envs: int, *, seed: int) -> VectorEnv:
    """Builds ``num_envs`` environments of ``task`` stepped together, seeded from ``seed``.

    Rewards come out multiplied by ``task.reward_scale`` (no wrapper at scale 1).

    Raises:
      ConfigError: ``task.name`` is none of :data:`~experiments.tasks.registry.MAKERS` (an
        unknown name never falls through to gymnasium).
    """
    if task.name not in MAKERS:
        raise unknown_choice("task", task.name, MAKERS)
    env = MAKERS[task.name](task, num_envs, seed)
    return env if task.reward_scale == 1 else ScaledRewards(env, task.reward_scale)
