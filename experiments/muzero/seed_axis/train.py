"""S MuZero runs of one configuration, differing only in their seed, trained as one computation.

:class:`GroupTraining` is :func:`experiments.muzero.train.train` for a group of seeds: each seed
draws its own :class:`~experiments.muzero.train.RunSeeds`, environments, replay and initial
weights exactly as its own run would, and every step is one self-play search
(:class:`~experiments.muzero.seed_axis.acting.GroupSelfPlay`, when the step moves), one batch
sampled per seed from its own replay and generator, one compiled train step of all seeds
(:class:`~experiments.muzero.seed_axis.learner.GroupLearner`) and, every ``eval_every`` steps,
one evaluation search per move for all seeds. Iterating it yields, per step, one row per seed
(the keys of ``train``'s rows), None for a seed that was dropped.

Seed s's rows do not depend on which seeds share its group (``tests/test_seed_axis_train.py``:
alone and in groups, row for row, bit for bit). They are not the rows of ``train``'s own path
(the seed axis sums a layer's bias gradient in another order: float32 rounding apart, the same
computation); a run records which path it took (``muzero.seed_axis``, docs/performance.md).

Work is not overlapped with the step here (``train``'s ``overlap``): a sweep runs one job per
core, where overlap gains nothing.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator, Sequence

import numpy as np

from experiments.gradients import Placement, Variant
from experiments.muzero.agents import Agent, AgentCache
from experiments.muzero.config import MuZeroConfig
from experiments.muzero.replay import ReplayBuffer
from experiments.muzero.seed_axis.acting import GroupSelfPlay, evaluate_group
from experiments.muzero.seed_axis.learner import GroupLearner
from experiments.muzero.seed_axis.networks import StackedNetworks
from experiments.muzero.selfplay import Inference
from experiments.muzero.train import (
    RunSeeds,
    cache_key,
    new_networks,
    resolved_network_config,
    sample_batch,
)
from experiments.tasks import TaskConfig, make_env

__all__ = ["GroupTraining"]

Rows = list["dict[str, float] | None"]


class GroupTraining:
    """The training of a group of seeds; iterate it for each step's rows (see the module).

    Args:
      config, task, variant, placement: as :func:`experiments.muzero.train.train`, shared.
      seeds: the group's seeds, in the order of the rows.
      cache: keeps the group's agent (stacked networks, compiled step and search) for the next
        group of the same configuration and size in this process.
    """

    def __init__(
        self,
        config: MuZeroConfig,
        task: TaskConfig,
        variant: Variant,
        placement: Placement,
        *,
        seeds: Sequence[int],
        cache: AgentCache | None = None,
    ) -> None:
        if not seeds:
            raise ValueError("a group needs at least one seed")
        self._start = time.perf_counter()
        self.config = config
        self.seeds = list(seeds)
        self.active = [True] * len(self.seeds)
        self._run_seeds = [RunSeeds.from_seed(seed) for seed in self.seeds]
        self._envs = [make_env(task, config.num_envs, seed=r.env) for r in self._run_seeds]
        self._eval_envs = [
            make_env(task, config.eval_episodes, seed=r.evaluation_env) for r in self._run_seeds
        ]
        network_config = resolved_network_config(config, task)
        nets = functools.partial(self._stacked, network_config, variant)
        build = functools.partial(_agent, config=config, variant=variant, placement=placement)
        if cache is None:
            agent = build(nets())
        else:
            key = ("seed_axis", len(self.seeds), *cache_key(config, task, variant, placement))
            agent = cache.agent(key, nets, build)
        self.learner: GroupLearner = agent.learner  # type: ignore[assignment]
        env = self._envs[0]
        self._replays = [
            ReplayBuffer(
                capacity=config.replay_capacity,
                observation_size=env.observation_size,
                num_actions=env.num_actions,
            )
            for _ in self.seeds
        ]
        self._actor = GroupSelfPlay(
            self._envs,
            agent.inference,
            self._replays,
            config=config,
            rngs=[r.acting for r in self._run_seeds],
        )

    def _stacked(self, network_config, variant: Variant) -> StackedNetworks:
        return StackedNetworks(
            [
                new_networks(network_config, env=env, variant=variant, seed=r.networks)
                for env, r in zip(self._envs, self._run_seeds, strict=True)
            ]
        )

    def drop(self, index: int) -> None:
        """Stops reporting seed ``index`` (its run ended): it moves, samples and evaluates no
        more; its slice of the step is still computed, unread."""
        self.active[index] = False

    def __iter__(self) -> Iterator[Rows]:
        config = self.config
        returns = self._warm_up()
        for step in range(1, config.training_steps + 1):
            if not any(self.active):
                return
            if (step - 1) % config.selfplay_interval == 0:
                for i, ended in enumerate(self._actor.step(step, self.active)):
                    returns[i] += ended
            batches = [
                sample_batch(replay, r.sampling, config=config) if on else None
                for replay, r, on in zip(self._replays, self._run_seeds, self.active, strict=True)
            ]
            filler = next(b for b in batches if b is not None)  # a dropped seed's slice
            metrics = self.learner.update_group([filler if b is None else b for b in batches])
            evaluated = None
            if step % config.eval_every == 0 or step == config.training_steps:
                evaluated = evaluate_group(
                    self._actor.search,
                    self._eval_envs,
                    config=config,
                    rngs=[r.evaluating for r in self._run_seeds],
                    active=self.active,
                )
            rows: Rows = []
            for i, on in enumerate(self.active):
                if not on:
                    rows.append(None)
                    continue
                row: dict[str, float] = {"step": float(step), **metrics[i]}
                if returns[i]:
                    row["selfplay/return"] = float(np.mean(returns[i]))
                    returns[i] = []
                if evaluated is not None:
                    row["eval/return"] = evaluated[i]  # type: ignore[assignment]
                row["env/steps"] = float(self._actor.env_steps[i])
                row["time/elapsed_s"] = time.perf_counter() - self._start
                rows.append(row)
            yield rows

    def _warm_up(self) -> list[list[float]]:
        """Each seed's self-play moves before its first update (as ``train``'s warm-up: a batch's
        worth of positions and ``warmup_steps`` moves), the seeds that are done waiting for the
        others without moving; returns each seed's episodes' returns."""
        config = self.config
        returns: list[list[float]] = [[] for _ in self.seeds]

        def warming(i: int) -> bool:
            needed = config.warmup_steps * self._envs[i].num_envs
            return len(self._replays[i]) < config.batch_size or self._actor.env_steps[i] < needed

        while any(active := [warming(i) for i in range(len(self.seeds))]):
            for i, ended in enumerate(self._actor.step(0, active)):
                returns[i] += ended
        return returns


def _agent(
    nets: StackedNetworks, *, config: MuZeroConfig, variant: Variant, placement: Placement
) -> Agent:
    """The group's learner and search model around stacked networks."""
    learner = GroupLearner(nets, config=config, variant=variant, placement=placement)
    inference = Inference(
        nets,  # type: ignore[arg-type]
        variant=variant,
        placement=placement,
        jit_compile=config.jit_compile,
    )
    return Agent(learner, inference)
