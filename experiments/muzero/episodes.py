"""The running episode of every environment of a vectorised self-play, kept in arrays.

One move of ``N`` environments is a handful of array writes (``[N, L, ...]`` buffers, one row
per environment, ``L`` doubled when an episode outgrows it) instead of ``5 N`` list appends; the
episodes that ended are read back as slices, in environment order, and written to replay in one
go (:meth:`~experiments.muzero.replay.ReplayBuffer.add_episodes`). Values, dtypes and order are
those of per-environment lists (``tests/muzero/test_episodes.py``), so the replay, and the run,
are the
same bit for bit.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["Ended", "RunningEpisodes"]


@dataclasses.dataclass(frozen=True)
class Ended:
    """The episodes that ended in one move, back to back in environment order."""

    lengths: np.ndarray  # [E] steps of each episode
    observations: np.ndarray  # [sum(lengths), *observation_shape]
    actions: np.ndarray  # [sum(lengths)]
    rewards: np.ndarray  # [sum(lengths)]
    values: np.ndarray  # [sum(lengths)] search root values
    policies: np.ndarray  # [sum(lengths), A]
    returns: list[float]  # [E] each episode's sum of rewards


class RunningEpisodes:
    """Per environment, the steps of its running episode (observation before the move, action,
    reward, root value, policy), in ``[N, L, ...]`` arrays made at the first move."""

    _FIELDS = ("observations", "actions", "rewards", "values", "policies")

    def __init__(self, num_envs: int, *, initial_length: int = 16) -> None:
        if num_envs < 1 or initial_length < 1:
            raise ValueError(f"need num_envs >= 1 and initial_length >= 1, got {num_envs}, "
                             f"{initial_length}")  # fmt: skip
        self.num_envs = num_envs
        self.lengths = np.zeros(num_envs, np.int64)
        self._initial = initial_length
        self._buffers: dict[str, np.ndarray] = {}
        self._rows = np.arange(num_envs)

    def _ensure_room(self, arrays: dict[str, np.ndarray]) -> None:
        if not self._buffers:
            self._buffers = {
                name: np.zeros((self.num_envs, self._initial, *a.shape[1:]), a.dtype)
                for name, a in arrays.items()
            }
        room = next(iter(self._buffers.values())).shape[1]
        if self.lengths.max() < room:
            return
        for name, buffer in self._buffers.items():
            grown = np.zeros((self.num_envs, 2 * room, *buffer.shape[2:]), buffer.dtype)
            grown[:, :room] = buffer
            self._buffers[name] = grown

    def record(
        self,
        observations: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        values: np.ndarray,
        policies: np.ndarray,
        dones: np.ndarray,
    ) -> Ended:
        """Adds one move of every environment; returns the episodes it ended (and forgets them).

        Arrays are ``[N, ...]``; their dtypes are kept as they come at the first move.
        """
        arrays = dict(
            zip(self._FIELDS, (observations, actions, rewards, values, policies), strict=True)
        )
        self._ensure_room(arrays)
        for name, value in arrays.items():
            self._buffers[name][self._rows, self.lengths] = value
        self.lengths += 1
        ended = np.flatnonzero(dones)
        lengths = self.lengths[ended]
        rows = np.repeat(ended, lengths)
        starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        columns = np.arange(int(lengths.sum())) - starts
        out = {name: buffer[rows, columns] for name, buffer in self._buffers.items()}
        rewards_buffer = self._buffers["rewards"]
        returns = [
            float(np.sum(rewards_buffer[i, :n])) for i, n in zip(ended, lengths, strict=True)
        ]
        self.lengths[ended] = 0
        return Ended(lengths=lengths, returns=returns, **out)
