"""The batched environment interface the self-play loop drives, and reward scaling over it."""

from __future__ import annotations

from typing import Protocol

import numpy as np

__all__ = ["ScaledRewards", "TaskSpec", "VectorEnv"]


class TaskSpec(Protocol):
    """What the task registry reads of a task's config to build and name it
    (:class:`~experiments.tasks.config.TaskConfig` is one): declared here, below both, so the
    registry names the config's type without importing the config module, which imports it.

    Attributes:
      name: the kind of environment (``catch``, ``cartpole``, ``gym``, ``minatar``).
      id: the MinAtar game or gymnasium id.
      rows, columns: Catch's board.
      gym_id: the gymnasium id to make.
      max_episode_steps: the time limit (0: the environment's own).
    """

    @property
    def name(self) -> str: ...

    @property
    def id(self) -> str: ...

    @property
    def rows(self) -> int: ...

    @property
    def columns(self) -> int: ...

    @property
    def gym_id(self) -> str: ...

    @property
    def max_episode_steps(self) -> int: ...


class VectorEnv(Protocol):
    """``num_envs`` environments stepped together; each resets itself when its episode ends.

    Observations are always flat, ``[B, O]``: replay, search and networks all take them so, and a
    network that needs the spatial layout reshapes them to ``observation_shape`` itself. Only the
    first :meth:`reset` seeds the environments; later ones go on from their generators, so
    successive evaluations start from varied states.

    Attributes:
      num_envs: B.
      observation_size: O, the flat observation size (the product of ``observation_shape``).
      observation_shape: the shape of one observation: ``(O,)`` for flat observations,
        ``(height, width, channels)`` for images (MinAtar: ``(10, 10, C)``).
      num_actions: A.
    """

    num_envs: int
    observation_size: int
    observation_shape: tuple[int, ...]
    num_actions: int

    def reset(self) -> np.ndarray:
        """Starts every environment afresh; returns observations ``[B, O]`` float32."""
        ...

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Takes actions ``[B]`` int.

        Returns:
          ``(observations [B, O], rewards [B] float32, dones [B] bool)``. Where
          ``dones`` is set the observation is already the first one of the environment's next
          episode.
        """
        ...


class ScaledRewards:
    """A :class:`VectorEnv` whose rewards are those of ``env`` times ``scale``.

    bsuite's ``catch_scale`` / ``cartpole_scale`` idea: the same task with rewards (so returns,
    value and reward targets) ``scale`` times larger. Observations, actions and episode ends are
    ``env``'s own.
    """

    def __init__(self, env: VectorEnv, scale: float) -> None:
        """Args:
        env: the environments to wrap.
        scale: s > 0, the reward multiplier.
        """
        self.env = env
        self.scale = scale
        self.num_envs = env.num_envs
        self.observation_size = env.observation_size
        self.observation_shape = env.observation_shape
        self.num_actions = env.num_actions

    def reset(self) -> np.ndarray:
        """``env.reset()``."""
        return self.env.reset()

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``env.step(actions)`` with the rewards ``[B]`` multiplied by ``scale`` (float32)."""
        observations, rewards, dones = self.env.step(actions)
        return observations, (rewards * np.float32(self.scale)).astype(np.float32), dones
