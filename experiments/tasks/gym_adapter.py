"""Gymnasium environments with a Discrete action space and a Box observation, batched.

The environments are stepped one after the other in Python (cheap next to the network calls) and
reset automatically; a truncated episode (time limit) ends like a terminated one.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from experiments.base.errors import ConfigError

__all__ = ["GymEnv", "check_gym_id"]


def _make(env_id: str, max_episode_steps: int) -> gym.Env:
    kwargs = {"max_episode_steps": max_episode_steps} if max_episode_steps > 0 else {}
    try:
        return gym.make(env_id, **kwargs)
    except gym.error.Error as error:
        known = sorted(k for k in gym.registry if "/" not in k)
        raise ConfigError(
            f"unknown gymnasium id {env_id!r} ({error}); choose one of: {', '.join(known)}"
        ) from None


def check_gym_id(env_id: str, max_episode_steps: int = 0) -> tuple[int, int]:
    """Checks that ``env_id`` exists with Discrete actions and a Box observation.

    Returns:
      ``(observation_size, num_actions)``.

    Raises:
      ConfigError: unknown id, or unsupported spaces.
    """
    env = _make(env_id, max_episode_steps)
    try:
        return _spaces(env_id, env)
    finally:
        env.close()


def _spaces(env_id: str, env: gym.Env) -> tuple[int, int]:
    if not isinstance(env.action_space, gym.spaces.Discrete):
        raise ConfigError(
            f"gymnasium id {env_id!r} has action space {env.action_space}; expected Discrete"
        )
    if not isinstance(env.observation_space, gym.spaces.Box):
        raise ConfigError(
            f"gymnasium id {env_id!r} has observation space {env.observation_space}; expected Box"
        )
    return int(np.prod(env.observation_space.shape)), int(env.action_space.n)


class GymEnv:
    """``num_envs`` copies of a gymnasium environment behind the :class:`VectorEnv` interface."""

    def __init__(self, env_id: str, num_envs: int, *, seed: int, max_episode_steps: int = 0):
        """Args:
        env_id: gymnasium id, e.g. ``CartPole-v1``.
        num_envs: B.
        seed: environment ``i`` is reset first with seed ``seed + i``; later resets go on from
          its generator (varied start states).
        max_episode_steps: time limit override (0 = the registered one).
        """
        self.num_envs = num_envs
        self._envs = [_make(env_id, max_episode_steps) for _ in range(num_envs)]
        self.observation_size, self.num_actions = _spaces(env_id, self._envs[0])
        self.observation_shape = (self.observation_size,)  # flattened Box observations
        self._seed = seed
        self._seeded = [False] * num_envs

    def _flat(self, obs: np.ndarray) -> np.ndarray:
        return np.asarray(obs, np.float32).reshape(-1)

    def _next_seed(self, i: int) -> int | None:
        """``seed + i`` at environment ``i``'s first reset, then None (its generator goes on)."""
        if self._seeded[i]:
            return None
        self._seeded[i] = True
        return self._seed + i

    def reset(self) -> np.ndarray:
        """Resets every copy; returns ``[B, O]`` float32."""
        return np.stack(
            [self._flat(env.reset(seed=self._next_seed(i))[0]) for i, env in enumerate(self._envs)]
        )

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Steps every copy; see :class:`VectorEnv`."""
        observations = np.empty((self.num_envs, self.observation_size), np.float32)
        rewards = np.empty(self.num_envs, np.float32)
        dones = np.empty(self.num_envs, bool)
        for i, (env, action) in enumerate(zip(self._envs, actions, strict=True)):
            obs, reward, terminated, truncated, _ = env.step(int(action))
            done = bool(terminated or truncated)
            if done:
                obs, _ = env.reset()
            observations[i], rewards[i], dones[i] = self._flat(obs), reward, done
        return observations, rewards, dones
