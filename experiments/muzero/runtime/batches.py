"""The training batches of a run, in order, optionally prepared one step ahead on a worker thread.

A training step's batch depends only on the replay's contents and the sampling generator, never
on the weights; the replay changes only when self-play moves. So between two self-play moves the
batch of step ``t + 1`` can be sampled (and turned into tensors) while step ``t`` trains: the
compiled step runs with Python's GIL released, and replay sampling, target building and the copy
into tensors (a sizeable part of a default run's step; docs/performance.md gives the time) run
on another core meanwhile. The batches are the same, drawn from the same generator in the same
order, so the run's numbers do not change (``tests/muzero/test_batches.py``,
``tests/muzero/test_train.py``).

The caller says when the replay is about to change (:meth:`Batches.next` is only asked for a
prepared batch when no self-play move lies between), and nothing else touches the replay or the
sampling generator while a batch is being prepared.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from experiments.muzero.replay import Batch, ReplayBuffer
from experiments.muzero.runtime._worker import Worker

__all__ = ["Batches"]


class Batches:
    """Training batches sampled from ``replay`` with ``rng``, as the compiled step takes them.

    Args:
      replay: the run's replay buffer.
      sample: ``(replay, rng) -> Batch``, one batch (the run's batch size, unroll, n-step).
      tensors: ``Batch -> {name: array}``, the step's inputs (the learner's ``batch_tensors``).
      rng: the sampling generator; only this object draws from it.
      ahead: prepare the next batch on a worker thread while the current step trains. Worth it
        with a core to spare (one job on several cores); the numbers are the same either way.
    """

    def __init__(
        self,
        replay: ReplayBuffer,
        *,
        sample: Callable[[ReplayBuffer, np.random.Generator], Batch],
        tensors: Callable[[Batch], dict[str, Any]],
        rng: np.random.Generator,
        ahead: bool,
    ) -> None:
        self._replay = replay
        self._sample = sample
        self._tensors = tensors
        self._rng = rng
        self._worker = Worker("batches", enabled=ahead)
        self._pending: concurrent.futures.Future | None = None

    @property
    def ahead(self) -> bool:
        """Whether batches are prepared on a worker thread."""
        return self._worker.enabled

    def _make(self) -> dict[str, tf.Tensor]:
        arrays = self._tensors(self._sample(self._replay, self._rng))
        return {name: tf.constant(value) for name, value in arrays.items()}

    def next(self, *, prepare_following: bool) -> dict[str, tf.Tensor]:
        """This step's batch (the one prepared ahead, or sampled now).

        Args:
          prepare_following: start preparing the following step's batch now (ignored unless
            ``ahead``). Only when the replay will not change before that step: the caller
            makes no self-play move until it has taken it.
        """
        if self._pending is not None:
            batch, self._pending = self._pending.result(), None
        else:
            batch = self._make()
        if prepare_following and self._worker.enabled:
            self._pending = self._worker.submit(self._make)
        return batch

    def close(self) -> None:
        """Waits for a batch in preparation and stops the worker thread (idempotent)."""
        self._worker.close()
        self._pending = None
