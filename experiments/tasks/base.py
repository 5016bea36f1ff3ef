"""The batched environment interface the self-play loop drives."""

from __future__ import annotations

from typing import Protocol

import numpy as np

__all__ = ["VectorEnv"]


class VectorEnv(Protocol):
    """``num_envs`` environments stepped together; each resets itself when its episode ends.

    Attributes:
      num_envs: B.
      observation_size: O, the flat observation size.
      num_actions: A.
    """

    num_envs: int
    observation_size: int
    num_actions: int

    def reset(self) -> np.ndarray:
        """Starts every environment afresh; returns observations ``[B, O]`` float32."""
        ...

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Takes actions ``[B]`` int.

        Returns:
          ``(observations [B, O], rewards [B], dones [B] bool)``. Where ``dones`` is set the
          observation is already the first one of the environment's next episode.
        """
        ...
