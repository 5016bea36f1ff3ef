"""Replay buffer of finished self-play episodes, and the pseudocode's ``make_target``.

Positions are stored in flat ring arrays, each episode contiguously; every position remembers the
absolute index one past its episode's last position, so targets for ``K`` unroll steps and
``n``-step values are gathered for a whole batch at once. Sampling is uniform over positions.

Targets for a position ``t`` of an episode of length ``T`` (``make_target`` in the pseudocode of
Schrittwieser et al., 2020), for ``k = 0..K`` and ``i = t + k``:

* value: ``sum_{j<n} gamma^j u_{i+j} + gamma^n v_{i+n}`` with rewards past the end counted 0 and
  the bootstrap root value ``v_{i+n}`` only if ``i + n < T``; 0 for ``i >= T`` (absorbing);
* reward: ``u_{i-1}`` (the reward of the action leading to step ``k``) if ``i <= T``, else 0;
  unused at ``k = 0``;
* policy: the normalised root visit counts at ``i`` if ``i < T``; absent (masked) past the end;
* actions ``a_{t+k-1}`` for ``k = 1..K``, uniformly random past the end.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["Batch", "ReplayBuffer"]


@dataclasses.dataclass(frozen=True)
class Batch:
    """Training targets for ``B`` positions and ``K`` unroll steps."""

    observations: np.ndarray  # [B, O] float32, the (flat) observation at the sampled position
    actions: np.ndarray  # [B, K] int32, actions taken after it
    target_value: np.ndarray  # [B, K+1] float32
    target_reward: np.ndarray  # [B, K+1] float32 (column 0 unused)
    target_policy: np.ndarray  # [B, K+1, A] float32
    policy_mask: np.ndarray  # [B, K+1] float32, 0 past the end of the episode
    steps_left: np.ndarray  # [B] int32, T - t: actions left in the episode from the position


class ReplayBuffer:
    """Finished episodes in ring arrays of ``capacity`` positions; see the module docstring."""

    def __init__(self, *, capacity: int, observation_size: int, num_actions: int) -> None:
        self.capacity = capacity
        self.num_actions = num_actions
        self._obs = np.zeros((capacity, observation_size), np.float32)
        self._action = np.zeros(capacity, np.int32)
        self._reward = np.zeros(capacity, np.float32)
        self._value = np.zeros(capacity, np.float32)
        self._policy = np.zeros((capacity, num_actions), np.float32)
        self._end = np.zeros(capacity, np.int64)  # absolute index one past the episode's end
        self._written = 0  # absolute positions written so far

    def __len__(self) -> int:
        return min(self._written, self.capacity)

    def add_episode(
        self,
        observations: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        root_values: np.ndarray,
        policies: np.ndarray,
    ) -> None:
        """Stores one finished episode of ``T`` steps.

        Args:
          observations: ``[T, O]`` or ``[T, *observation_shape]`` the observation before each
            action, stored flat (``[T, O]``; the networks reshape images at their input).
          actions: ``[T]`` actions taken.
          rewards: ``[T]`` reward received after each action.
          root_values: ``[T]`` search root values.
          policies: ``[T, A]`` normalised root visit counts.
        """
        self.add_episodes(
            np.array([len(actions)]), observations, actions, rewards, root_values, policies
        )

    def add_episodes(
        self,
        lengths: np.ndarray,
        observations: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        root_values: np.ndarray,
        policies: np.ndarray,
    ) -> None:
        """Stores finished episodes given back to back (``lengths [E]``, the other arrays
        ``[sum(lengths), ...]`` as in :meth:`add_episode`): the same contents as one
        :meth:`add_episode` per episode, in order, in one write per array."""
        lengths = np.asarray(lengths, np.int64)
        total = int(lengths.sum())
        if lengths.size and lengths.max() > self.capacity:
            raise ValueError(
                f"episode of {lengths.max()} steps exceeds the capacity {self.capacity}"
            )
        if total == 0:
            return
        if total > self.capacity:  # later episodes overwrite earlier ones: write them in turn
            start = 0
            for length in lengths.tolist():
                part = slice(start, start + length)
                self.add_episode(
                    observations[part], actions[part], rewards[part], root_values[part],
                    policies[part],
                )  # fmt: skip
                start += length
            return
        index = (self._written + np.arange(total)) % self.capacity
        self._obs[index] = np.reshape(observations, (total, -1))
        self._action[index] = actions
        self._reward[index] = rewards
        self._value[index] = root_values
        self._policy[index] = policies
        self._end[index] = self._written + np.repeat(np.cumsum(lengths), lengths)
        self._written += total

    def sample(
        self,
        batch_size: int,
        *,
        unroll_steps: int,
        td_steps: int,
        discount: float,
        rng: np.random.Generator,
    ) -> Batch:
        """Samples ``batch_size`` positions uniformly and builds their targets."""
        if len(self) == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        start = self._written - len(self)
        positions = rng.integers(start, self._written, size=batch_size)
        return self.make_target(
            positions, unroll_steps=unroll_steps, td_steps=td_steps, discount=discount, rng=rng
        )

    def make_target(
        self,
        positions: np.ndarray,
        *,
        unroll_steps: int,
        td_steps: int,
        discount: float,
        rng: np.random.Generator,
    ) -> Batch:
        """Targets for absolute positions ``[B]`` (see the module docstring)."""
        K, n = unroll_steps, td_steps
        positions = np.asarray(positions, np.int64)
        end = self._end[positions % self.capacity]  # [B]
        offsets = np.arange(K + n + 1)
        absolute = positions[:, None] + offsets[None, :]  # [B, K+n+1]
        inside = absolute < end[:, None]
        ring = absolute % self.capacity
        rewards = np.where(inside, self._reward[ring], 0.0)  # u_i, 0 past the end
        values = np.where(inside, self._value[ring], 0.0)  # v_i, 0 past the end

        powers = discount ** np.arange(n)
        target_value = np.stack(
            [rewards[:, k : k + n] @ powers + discount**n * values[:, k + n] for k in range(K + 1)],
            axis=1,
        )
        target_reward = np.zeros((len(positions), K + 1), np.float32)
        target_reward[:, 1:] = rewards[:, :K]  # u_{t+k-1}, zero past the end
        mask = inside[:, : K + 1].astype(np.float32)
        target_policy = self._policy[ring[:, : K + 1]] * mask[:, :, None]
        random_actions = rng.integers(0, self.num_actions, size=(len(positions), K))
        actions = np.where(inside[:, :K], self._action[ring[:, :K]], random_actions)
        return Batch(
            observations=self._obs[positions % self.capacity],
            actions=actions.astype(np.int32),
            target_value=target_value.astype(np.float32),
            target_reward=target_reward,
            target_policy=target_policy.astype(np.float32),
            policy_mask=mask,
            steps_left=(end - positions).astype(np.int32),
        )
