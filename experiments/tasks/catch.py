"""bsuite-style Catch, batched in NumPy.

A ball starts in the top row of a ``rows x columns`` board at a uniformly random column and falls
one row per step; the paddle starts in the middle of the bottom row and moves left, stays or moves
right (actions 0, 1, 2), clipped at the walls. When the ball reaches the bottom row the episode
ends with reward +1 if the paddle is under it, else -1 (all other rewards 0). An episode lasts
``rows - 1`` steps. The observation is the board, ``rows * columns`` floats with a 1 at the ball and
at the paddle (Osband et al., 2020, bsuite ``catch``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["CatchEnv"]


class CatchEnv:
    """``num_envs`` Catch boards stepped together (see the module docstring)."""

    num_actions = 3

    def __init__(self, num_envs: int, *, rows: int = 10, columns: int = 5, seed: int) -> None:
        """Args:
        num_envs: B.
        rows: board height (>= 2).
        columns: board width (>= 1).
        seed: seeds the generator of the balls' starting columns.
        """
        self.num_envs = num_envs
        self.rows = rows
        self.columns = columns
        self.observation_size = rows * columns
        self.observation_shape = (rows * columns,)  # flat: Catch keeps the MLP representation
        self._rng = np.random.default_rng(seed)
        self.ball_row = np.zeros(num_envs, np.int64)
        self.ball_column = np.zeros(num_envs, np.int64)
        self.paddle = np.zeros(num_envs, np.int64)

    def _start(self, mask: np.ndarray) -> None:
        count = int(mask.sum())
        self.ball_row[mask] = 0
        self.ball_column[mask] = self._rng.integers(0, self.columns, size=count)
        self.paddle[mask] = self.columns // 2

    def observe(self) -> np.ndarray:
        """Boards ``[B, rows * columns]`` float32."""
        board = np.zeros((self.num_envs, self.rows, self.columns), np.float32)
        index = np.arange(self.num_envs)
        board[index, self.ball_row, self.ball_column] = 1.0
        board[index, self.rows - 1, self.paddle] = 1.0
        return board.reshape(self.num_envs, -1)

    def reset(self) -> np.ndarray:
        """Starts every board afresh; returns ``[B, rows * columns]``."""
        self._start(np.ones(self.num_envs, bool))
        return self.observe()

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Moves paddles by ``actions - 1`` and balls down one row; see :class:`VectorEnv`."""
        actions = np.asarray(actions, np.int64)
        self.paddle = np.clip(self.paddle + actions - 1, 0, self.columns - 1)
        self.ball_row = self.ball_row + 1
        done = self.ball_row >= self.rows - 1
        reward = np.where(done, np.where(self.paddle == self.ball_column, 1.0, -1.0), 0.0)
        self._start(done)
        return self.observe(), reward.astype(np.float32), done
