"""An agent's networks, learner and search model, and a cache that keeps them between the runs of
one process so that later runs of the same shapes skip tracing and compilation.

A run's start-up is mostly its compiled functions: tracing the train step, then TensorFlow's
lowering and loading of the XLA programs even when they come from the persistent cache, the same
for the search (docs/performance.md, "Start-up, per job", gives the seconds). A process that runs
several jobs of one configuration (the seeds of a sweep cell, see
:mod:`experiments.jobs.process.isolation`) keeps the agent of the previous run and restarts it for
the new seed instead: weights from networks built with the new seed's initialisers, the optimizer's
state as built. Nothing else in an agent holds state between steps, so the run computes bit for bit
what a new agent would (``tests/muzero/test_train.py``).
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Hashable

from experiments.muzero.learner import Learner
from experiments.muzero.networks import Networks
from experiments.muzero.runtime.graph_store import GraphStore
from experiments.muzero.selfplay import Inference

__all__ = ["Agent", "AgentCache"]


@dataclasses.dataclass(frozen=True)
class Agent:
    """What one run trains and plans with (its networks: ``learner.networks``)."""

    learner: Learner
    inference: Inference


class AgentCache:
    """The agents of the last ``capacity`` configurations this process ran, by key.

    The key must name everything a compiled function depends on (the run's whole MuZero config,
    task, variant with its parameters, placement) and nothing that changes between runs of the
    same shapes but the seed; :func:`experiments.muzero.train.train` builds it.

    ``graphs``: where an agent it builds keeps its traced train step and searches for later
    processes (see :mod:`experiments.muzero.runtime.graph_store`), or None.

    Attributes:
      hits: runs that restarted a kept agent.
      misses: runs that built one.
    """

    def __init__(self, capacity: int = 2, *, graphs: GraphStore | None = None) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.graphs = graphs
        self._agents: collections.OrderedDict[Hashable, Agent] = collections.OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._agents)

    def agent(
        self, key: Hashable, networks: Callable[[], Networks], build: Callable[[Networks], Agent]
    ) -> Agent:
        """The agent for ``key`` on freshly initialised weights.

        Args:
          key: see the class docstring.
          networks: builds this run's networks (its seed's initial weights).
          build: makes an agent around new networks (learner, search model).

        Returns:
          A kept agent restarted on ``networks()``'s weights, or a new one (kept, the least
          recently used beyond ``capacity`` dropped).
        """
        fresh = networks()
        kept = self._agents.get(key)
        if kept is None:
            self.misses += 1
            kept = build(fresh)
            self._agents[key] = kept
            while len(self._agents) > self.capacity:
                self._agents.popitem(last=False)
        else:
            self.hits += 1
            self._agents.move_to_end(key)
            kept.learner.restart(fresh)
        return kept
