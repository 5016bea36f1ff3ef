"""MinAtar games (Young & Tian, 2019) through the ``minatar`` package, batched.

MinAtar's five games are 10x10 miniatures of Atari games with one binary channel per kind of
object; an observation is ``[10, 10, C]``, handed out flat (``[B, 100 C]`` float32, the
``VectorEnv`` convention; ``observation_shape`` gives the spatial layout). Choices made here:

* actions: each game's *minimal* action set (``Environment.minimal_action_set()``, as MinAtar's
  ``MinAtar/<Game>-v1`` gymnasium ids do), so ``num_actions`` is the game's own count: asterix 5,
  breakout 3, freeway 3, seaquest 6, space_invaders 4;
* sticky actions with probability 0.1 and difficulty ramping on: MinAtar's defaults (the paper's
  setting);
* a time limit, since a good agent can play breakout, asterix, seaquest or space_invaders for
  ever: :data:`DEFAULT_EPISODE_STEPS` agent steps unless ``task.max_episode_steps`` says
  otherwise; a cut episode ends like a terminated one (as in the gymnasium adapter);
* seeding: environment ``i`` gets its own seed, drawn from the given one, at the first
  :meth:`MinAtarEnv.reset`; later resets go on from the environment's generator, so successive
  evaluations start from varied states.

The ``minatar`` package is imported only when a MinAtar task is used; without it the task is
refused with a one-line :class:`~experiments.base.errors.ConfigError`.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import types
from collections.abc import Mapping
from typing import Any

import numpy as np

from experiments.base.errors import ConfigError

__all__ = [
    "DEFAULT_EPISODE_STEPS",
    "MINATAR_GAMES",
    "MINATAR_VERSION",
    "STICKY_ACTION_PROB",
    "MinAtarEnv",
    "MinAtarGame",
    "check_minatar",
]

MINATAR_VERSION = "1.0.15"
"""The ``minatar`` release this adapter is written and tested against (pinned in pyproject)."""
STICKY_ACTION_PROB = 0.1
"""MinAtar's default: with this probability the previous action is repeated instead."""
DEFAULT_EPISODE_STEPS = 1000
"""Time limit when ``task.max_episode_steps`` is 0 (gymnax's MinAtar ports use 1000 too)."""


@dataclasses.dataclass(frozen=True)
class MinAtarGame:
    """How the adapter plays one game (its other facts: ``experiments/tasks/registry.py``).

    Attributes:
      episode_steps: default time limit (agent steps).
    """

    episode_steps: int


MINATAR_GAMES: Mapping[str, MinAtarGame] = types.MappingProxyType(
    {
        "asterix": MinAtarGame(DEFAULT_EPISODE_STEPS),
        "breakout": MinAtarGame(DEFAULT_EPISODE_STEPS),
        # freeway ends by itself after 2501 steps; the limit never cuts it.
        "freeway": MinAtarGame(2501),
        "seaquest": MinAtarGame(DEFAULT_EPISODE_STEPS),
        "space_invaders": MinAtarGame(DEFAULT_EPISODE_STEPS),
    }
)
"""The MinAtar games by ``task.id``."""

_MISSING = (
    "task=minatar needs the 'minatar' package, which is not installed; "
    f"pip install 'minatar=={MINATAR_VERSION}' or choose another task: cartpole, catch, gym"
)


def check_minatar(game: str) -> None:
    """Checks that ``game`` is a MinAtar game and that the package is installed (not imported).

    Raises:
      ConfigError: an unknown or missing game, or no ``minatar`` package.
    """
    choices = ", ".join(sorted(MINATAR_GAMES))
    if not game:
        raise ConfigError(f"task 'minatar' needs a game: task.id=<game>, one of: {choices}")
    if game not in MINATAR_GAMES:
        raise ConfigError(f"unknown MinAtar game {game!r}; choose one of: {choices}")
    if importlib.util.find_spec("minatar") is None:
        raise ConfigError(_MISSING)


def _environment_class() -> Any:
    try:
        return importlib.import_module("minatar").Environment
    except ImportError:
        raise ConfigError(_MISSING) from None


class MinAtarEnv:
    """``num_envs`` MinAtar games behind the :class:`~experiments.tasks.VectorEnv` interface."""

    def __init__(self, game: str, num_envs: int, *, seed: int, max_episode_steps: int = 0) -> None:
        """Args:
        game: a key of :data:`MINATAR_GAMES`.
        num_envs: B.
        seed: seeds the B environments' own seeds (``np.random.SeedSequence(seed)``).
        max_episode_steps: time limit in agent steps; 0 for the game's default
          (:attr:`MinAtarGame.episode_steps`).
        """
        check_minatar(game)
        environment = _environment_class()
        self.game = game
        self.num_envs = num_envs
        self.max_episode_steps = max_episode_steps or MINATAR_GAMES[game].episode_steps
        self._envs = [
            environment(game, sticky_action_prob=STICKY_ACTION_PROB) for _ in range(num_envs)
        ]
        self._seeds = [int(s) for s in np.random.SeedSequence(seed).generate_state(num_envs)]
        self._action_set = np.asarray(self._envs[0].minimal_action_set(), np.int64)
        self.num_actions = len(self._action_set)
        self.observation_shape = tuple(int(d) for d in self._envs[0].state_shape())
        self.observation_size = int(np.prod(self.observation_shape))
        self._steps = np.zeros(num_envs, np.int64)
        self._seeded = False

    def _observe(self) -> np.ndarray:
        states = np.stack([env.state() for env in self._envs]).astype(np.float32)
        return states.reshape(self.num_envs, -1)

    def reset(self) -> np.ndarray:
        """Restarts every game (seeding it at the first reset); returns ``[B, O]`` float32."""
        for env, seed in zip(self._envs, self._seeds, strict=True):
            if not self._seeded:
                env.seed(seed)
            env.last_action = 0  # the sticky-action memory, which MinAtar's reset() keeps
            env.reset()
        self._seeded = True
        self._steps[:] = 0
        return self._observe()

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Plays ``actions [B]`` (indices into the minimal action set); see ``VectorEnv.step``."""
        rewards = np.empty(self.num_envs, np.float32)
        dones = np.empty(self.num_envs, bool)
        self._steps += 1
        for i, (env, action) in enumerate(zip(self._envs, actions, strict=True)):
            reward, terminal = env.act(int(self._action_set[int(action)]))
            rewards[i] = reward
            dones[i] = bool(terminal) or self._steps[i] >= self.max_episode_steps
            if dones[i]:
                env.reset()
                self._steps[i] = 0
        return self._observe(), rewards, dones
