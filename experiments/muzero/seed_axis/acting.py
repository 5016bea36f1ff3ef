"""Self-play and evaluation of S seeds as one search per move (the seed axis).

Each seed keeps what is its own: its environments, its replay, its running episodes and its
acting and evaluating generators. A move stacks every seed's observations seed-major, draws
each seed's randomness from that seed's generator (:func:`~experiments.muzero.search_tf.
draw_randomness`, as its own run would), and runs the compiled search of a
:class:`~experiments.muzero.selfplay.Inference` over
:class:`~experiments.muzero.seed_axis.networks.StackedNetworks` once for all ``S * B`` trees.

A seed that is not *active* in a move (its warm-up done while another's goes on, its evaluation
over, or its run ended) draws nothing and its environments do not step: its rows are searched
with zero draws and their results dropped. So a seed draws, steps and records exactly what it
would alone, whichever seeds share its group.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from experiments.muzero._acting import visit_softmax_temperature
from experiments.muzero.config import MuZeroConfig
from experiments.muzero.replay import ReplayBuffer
from experiments.muzero.runtime.weights import WeightCopy
from experiments.muzero.search_tf import CompiledSearch, draw_randomness
from experiments.muzero.selfplay import Inference, SelfPlay, searched_move
from experiments.tasks import VectorEnv

__all__ = ["GroupSelfPlay", "Moves", "evaluate_group", "group_act"]

Moves = list[tuple[np.ndarray, np.ndarray, np.ndarray] | None]
"""Per seed: ``(actions [B], root values [B], policies [B, A])``, or None for an inactive seed."""


def group_act(
    search: CompiledSearch,
    observations: Sequence[np.ndarray],
    *,
    rngs: Sequence[np.random.Generator],
    active: Sequence[bool],
    config: MuZeroConfig,
    temperature: float,
    noise: bool,
    weights: WeightCopy | None = None,
) -> Moves:
    """One search of every seed's environments: what :func:`experiments.muzero.selfplay.act`
    returns for each active seed, None for the others."""
    fraction = config.dirichlet_fraction if noise else 0.0
    draws = []
    for rows, rng, on in zip(observations, rngs, active, strict=True):
        if on:
            draws.append(
                draw_randomness(
                    rng,
                    batch_size=len(rows),
                    num_actions=search.num_actions,
                    temperature=temperature,
                    dirichlet_alpha=config.dirichlet_alpha,
                    dirichlet_fraction=fraction,
                )
            )
        else:
            zeros = np.zeros((len(rows), search.num_actions))
            draws.append((zeros, zeros))
    out = search(
        np.concatenate(observations),
        noise=np.concatenate([noise for noise, _ in draws]),
        noise_fraction=fraction,
        temperature=temperature,
        uniforms=np.concatenate([uniforms for _, uniforms in draws]),
        weights=weights,
    )
    moves: Moves = []
    start = 0
    for rows, on in zip(observations, active, strict=True):
        end = start + len(rows)
        if on:
            rows_of = slice(start, end)
            moves.append(
                searched_move(
                    out.actions[rows_of], out.visit_counts[rows_of], out.root_value[rows_of]
                )
            )
        else:
            moves.append(None)
        start = end
    return moves


class GroupSelfPlay:
    """:class:`~experiments.muzero.selfplay.SelfPlay` of S seeds, one search per move: each seed
    a ``SelfPlay`` of its own (environments, replay, running episodes, acting generator) that
    plays the moves the group's search chose for it (:meth:`SelfPlay.play`)."""

    def __init__(
        self,
        envs: Sequence[VectorEnv],
        inference: Inference,
        replays: Sequence[ReplayBuffer],
        *,
        config: MuZeroConfig,
        rngs: Sequence[np.random.Generator],
    ) -> None:
        self.players = [
            SelfPlay(env, inference, replay, config=config, rng=rng)
            for env, replay, rng in zip(envs, replays, rngs, strict=True)
        ]
        self.config = config
        self.search = inference.compiled_search(config)

    @property
    def env_steps(self) -> list[int]:
        """Per seed, the environment transitions taken so far."""
        return [player.env_steps for player in self.players]

    def step(self, training_step: int, active: Sequence[bool] | None = None) -> list[list[float]]:
        """One move in every environment of each active seed (all by default); returns, per
        seed, the returns of the episodes that ended (empty for an inactive seed)."""
        active = [True] * len(self.players) if active is None else list(active)
        temperature = visit_softmax_temperature(
            training_step, schedule=self.config.temperature_schedule
        )
        moves = group_act(
            self.search,
            [player.observations for player in self.players],
            rngs=[player.rng for player in self.players],
            active=active,
            config=self.config,
            temperature=temperature,
            noise=True,
        )
        return [
            [] if move is None else player.play(*move)
            for player, move in zip(self.players, moves, strict=True)
        ]


def evaluate_group(
    search: CompiledSearch,
    envs: Sequence[VectorEnv],
    *,
    config: MuZeroConfig,
    rngs: Sequence[np.random.Generator],
    active: Sequence[bool],
    weights: WeightCopy | None = None,
) -> list[float | None]:
    """:func:`experiments.muzero.selfplay.evaluate` of each active seed (None for the others):
    the mean return of one greedy episode per environment, each seed's moves searched together
    while any of its episodes runs."""
    observations = [
        env.reset() if on else np.zeros((env.num_envs, env.observation_size), np.float32)
        for env, on in zip(envs, active, strict=True)
    ]
    totals = [np.zeros(env.num_envs) for env in envs]
    running = [np.full(env.num_envs, on) for env, on in zip(envs, active, strict=True)]
    while any(r.any() for r in running):
        moving = [r.any() for r in running]
        moves = group_act(
            search,
            observations,
            rngs=rngs,
            active=moving,
            config=config,
            temperature=0.0,
            noise=False,
            weights=weights,
        )
        for i, move in enumerate(moves):
            if move is None:
                continue
            observations[i], rewards, dones = envs[i].step(move[0])
            totals[i] += np.where(running[i], rewards, 0.0)
            running[i] &= ~dones
    return [float(t.mean()) if on else None for t, on in zip(totals, active, strict=True)]
