"""A run's rows in step order, each row that asks for an evaluation held back until it is done,
the evaluations run on a worker thread while training goes on.

An evaluation reads the weights of its step and nothing that training touches (its own
environments and generator), so it can run beside the following training steps when it plans
with a copy of the weights made at its step
(:class:`~experiments.muzero.runtime.weights.WeightCopy`): the same numbers as in turn, rows
yielded in the same order, a few steps later
(``tests/muzero/test_deferred.py``, ``tests/muzero/test_train.py``).
"""

from __future__ import annotations

import collections
import concurrent.futures
from collections.abc import Callable, Iterator

from experiments.muzero.runtime._worker import Worker

__all__ = ["DeferredEvaluations"]

Row = dict[str, float]


class DeferredEvaluations:
    """Rows in order; a row's evaluation result goes under ``key``.

    Args:
      evaluate: ``() -> float``, one evaluation (of the weights ``prepare`` copied).
      prepare: called on the caller's thread when an evaluation is asked for, once the previous
        evaluation is done (e.g. :meth:`WeightCopy.refresh`: the copy is not changed while an
        evaluation reads it); ``None``: nothing.
      key: the row key of the result.
      ahead: run evaluations on a worker thread; ``False``: at once, in :meth:`add`.
    """

    def __init__(
        self,
        evaluate: Callable[[], float],
        *,
        prepare: Callable[[], None] | None = None,
        key: str = "eval/return",
        ahead: bool,
    ) -> None:
        self._evaluate = evaluate
        self._prepare = prepare
        self._key = key
        self._worker = Worker("evaluations", enabled=ahead)
        self._rows: collections.deque[tuple[Row, concurrent.futures.Future | None]] = (
            collections.deque()
        )
        self._last: concurrent.futures.Future | None = None

    def add(self, row: Row, *, evaluate: bool = False) -> None:
        """Queues ``row``; with ``evaluate``, the evaluation of this step's weights. The row's
        ``key`` is placed now, so its keys keep their order."""
        if not evaluate:
            self._rows.append((row, None))
            return
        row[self._key] = float("nan")  # its place among the keys; filled when done
        if self._last is not None:
            concurrent.futures.wait([self._last])  # done with the copy (its error: at its row)
        if self._prepare is not None:
            self._prepare()
        if not self._worker.enabled:
            row[self._key] = self._evaluate()
            self._rows.append((row, None))
        else:
            self._last = self._worker.submit(self._evaluate)
            self._rows.append((row, self._last))

    def ready(self) -> Iterator[Row]:
        """The rows at the head of the queue whose evaluation (if any) is done, in order."""
        while self._rows and (self._rows[0][1] is None or self._rows[0][1].done()):
            yield self._pop()

    def drain(self) -> Iterator[Row]:
        """Every queued row, in order, waiting for the evaluations."""
        while self._rows:
            yield self._pop()

    def _pop(self) -> Row:
        row, future = self._rows.popleft()
        if future is not None:
            row[self._key] = future.result()  # re-raises an evaluation's error here
        return row

    def close(self) -> None:
        """Waits for a running evaluation and stops the worker thread (idempotent); rows still
        queued are dropped."""
        self._worker.close()
        self._rows.clear()
        self._last = None
