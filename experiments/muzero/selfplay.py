"""Acting: batched search over vectorised environments, self-play into replay, evaluation.

Every move of all ``B`` environments is one batched ``initial_inference`` call and then one
batched search, whose ``recurrent_fn`` is a compiled ``tf.function`` called once per simulation
for all ``B`` trees.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from experiments.muzero.config import MuZeroConfig
from experiments.muzero.networks import Networks
from experiments.muzero.replay import ReplayBuffer
from experiments.muzero.search import run_search, select_action, visit_softmax_temperature
from experiments.tasks import VectorEnv

__all__ = ["Inference", "SelfPlay", "act", "evaluate"]


class Inference:
    """The networks' two inference functions, compiled, on NumPy arrays in and out."""

    def __init__(self, networks: Networks, *, jit_compile: bool = True) -> None:
        self._initial = tf.function(networks.initial_inference, jit_compile=jit_compile)
        self._recurrent = tf.function(networks.recurrent_inference, jit_compile=jit_compile)

    def initial(self, observations: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``[B, O]`` -> hidden ``[B, H]``, value ``[B]``, policy logits ``[B, A]``."""
        return tuple(t.numpy() for t in self._initial(np.asarray(observations, np.float32)))

    def recurrent(
        self, hidden: np.ndarray, action: np.ndarray, step: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The search's ``recurrent_fn``: ``[B, H]``, ``[B]``, ``[B]`` -> hidden, reward, value,
        logits."""
        del step
        outputs = self._recurrent(np.asarray(hidden, np.float32), np.asarray(action, np.int32))
        return tuple(t.numpy() for t in outputs)


def act(
    inference: Inference,
    observations: np.ndarray,
    *,
    config: MuZeroConfig,
    temperature: float,
    noise: bool,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Searches from ``observations [B, O]`` and picks actions.

    Returns:
      ``(actions [B], root_values [B], policies [B, A])``, policies the normalised visit counts.
    """
    hidden, value, logits = inference.initial(observations)
    out = run_search(
        hidden,
        value,
        logits,
        inference.recurrent,
        num_simulations=config.num_simulations,
        discount=config.discount,
        rng=rng,
        dirichlet_alpha=config.dirichlet_alpha,
        dirichlet_fraction=config.dirichlet_fraction if noise else 0.0,
        pb_c_base=config.pb_c_base,
        pb_c_init=config.pb_c_init,
        q_form=config.q_form,
    )
    actions = select_action(out.visit_counts, temperature=temperature, rng=rng)
    counts = out.visit_counts.astype(np.float32)
    policies = counts / counts.sum(axis=1, keepdims=True)
    return actions, out.root_value.astype(np.float32), policies


@dataclasses.dataclass
class _Episode:
    observations: list = dataclasses.field(default_factory=list)
    actions: list = dataclasses.field(default_factory=list)
    rewards: list = dataclasses.field(default_factory=list)
    values: list = dataclasses.field(default_factory=list)
    policies: list = dataclasses.field(default_factory=list)


class SelfPlay:
    """Plays all environments of ``env`` with search and stores each finished episode in replay."""

    def __init__(
        self,
        env: VectorEnv,
        inference: Inference,
        replay: ReplayBuffer,
        *,
        config: MuZeroConfig,
        rng: np.random.Generator,
    ) -> None:
        self.env = env
        self.inference = inference
        self.replay = replay
        self.config = config
        self.rng = rng
        self.env_steps = 0
        self._observations = env.reset()
        self._episodes = [_Episode() for _ in range(env.num_envs)]

    def step(self, training_step: int) -> list[float]:
        """One move in every environment; returns the returns of the episodes that ended."""
        temperature = visit_softmax_temperature(
            training_step, schedule=self.config.temperature_schedule
        )
        actions, values, policies = act(
            self.inference,
            self._observations,
            config=self.config,
            temperature=temperature,
            noise=True,
            rng=self.rng,
        )
        next_observations, rewards, dones = self.env.step(actions)
        self.env_steps += self.env.num_envs
        returns = []
        for i, episode in enumerate(self._episodes):
            episode.observations.append(self._observations[i])
            episode.actions.append(actions[i])
            episode.rewards.append(rewards[i])
            episode.values.append(values[i])
            episode.policies.append(policies[i])
            if dones[i]:
                self.replay.add_episode(
                    np.stack(episode.observations),
                    np.asarray(episode.actions),
                    np.asarray(episode.rewards),
                    np.asarray(episode.values),
                    np.stack(episode.policies),
                )
                returns.append(float(np.sum(episode.rewards)))
                self._episodes[i] = _Episode()
        self._observations = next_observations
        return returns


def evaluate(
    inference: Inference, env: VectorEnv, *, config: MuZeroConfig, rng: np.random.Generator
) -> float:
    """Mean return of one episode per environment of ``env``, greedy search without noise."""
    observations = env.reset()
    totals = np.zeros(env.num_envs)
    running = np.ones(env.num_envs, bool)
    while running.any():
        actions, _, _ = act(
            inference, observations, config=config, temperature=0.0, noise=False, rng=rng
        )
        observations, rewards, dones = env.step(actions)
        totals += np.where(running, rewards, 0.0)
        running &= ~dones
    return float(totals.mean())
