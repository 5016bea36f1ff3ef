"""The tasks MuZero is trained on: Catch (batched NumPy), CartPole and other gymnasium ids, MinAtar.

:class:`TaskConfig` is the typed, validated task section of the Hydra config
(``conf/task/<name>.yaml`` mirrors it); :data:`TASKS` describes each task with its success
threshold; :func:`make_env` builds a batched :class:`VectorEnv`, its rewards times
``task.reward_scale``.
"""

from __future__ import annotations

from experiments.tasks.base import ScaledRewards, VectorEnv
from experiments.tasks.catch import CatchEnv
from experiments.tasks.config import TASKS, TaskConfig, TaskInfo
from experiments.tasks.gym_adapter import GymEnv
from experiments.tasks.minatar_adapter import MINATAR_GAMES, MinAtarEnv

__all__ = [
    "MINATAR_GAMES",
    "TASKS",
    "CatchEnv",
    "GymEnv",
    "MinAtarEnv",
    "ScaledRewards",
    "TaskConfig",
    "TaskInfo",
    "VectorEnv",
    "make_env",
]


def make_env(task: TaskConfig, num_envs: int, *, seed: int) -> VectorEnv:
    """Builds ``num_envs`` environments of ``task`` stepped together, seeded from ``seed``.

    Rewards come out multiplied by ``task.reward_scale`` (no wrapper at scale 1).
    """
    env: VectorEnv
    if task.name == "catch":
        env = CatchEnv(num_envs, rows=task.rows, columns=task.columns, seed=seed)
    elif task.name == "minatar":
        env = MinAtarEnv(task.id, num_envs, seed=seed, max_episode_steps=task.max_episode_steps)
    else:
        env = GymEnv(task.gym_id, num_envs, seed=seed, max_episode_steps=task.max_episode_steps)
    return env if task.reward_scale == 1 else ScaledRewards(env, task.reward_scale)
