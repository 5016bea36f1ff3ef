"""DeferredEvaluations: rows in order, evaluations on a worker thread, results in their rows."""

import threading

import pytest

from experiments.muzero.runtime.deferred import DeferredEvaluations


def _collect(ahead: bool, *, release: threading.Event | None = None):
    """12 rows, an evaluation at every 4th; ``prepare`` copies the step (as WeightCopy.refresh
    copies weights) and the evaluation returns 10 x the copy."""
    seen_threads, copy, weights = set(), [0.0], [0.0]
    prepared = []

    def prepare():
        prepared.append(weights[0])
        copy[0] = weights[0]

    def evaluate():
        seen_threads.add(threading.current_thread().name)
        if release is not None:
            assert release.wait(10)
        return 10.0 * copy[0]

    evaluations = DeferredEvaluations(evaluate, prepare=prepare, ahead=ahead)
    out, held = [], []
    for step in range(1, 13):
        weights[0] = float(step)
        row = {"step": float(step), "loss": 0.5 * step}
        evaluations.add(row, evaluate=step % 4 == 0)
        row["env/steps"] = 8.0 * step
        ready = list(evaluations.ready())
        held.append(step - len(out) - len(ready))
        out += ready
        if release is not None and step == 6:
            release.set()
    out += list(evaluations.drain())
    evaluations.close()
    assert prepared == [4.0, 8.0, 12.0]
    return out, held, seen_threads


def test_rows_come_in_order_with_their_evaluations_in_turn_or_ahead():
    now, held_now, threads_now = _collect(False)
    ahead, held_ahead, threads_ahead = _collect(True, release=threading.Event())
    assert now == ahead
    assert [list(row) for row in now] == [list(row) for row in ahead]  # key order kept
    assert list(now[3]) == ["step", "loss", "eval/return", "env/steps"]
    assert [row.get("eval/return") for row in now] == [None] * 3 + [40.0] + [None] * 3 + [80.0] + [
        None
    ] * 3 + [120.0]
    assert held_now == [0] * 12  # in turn: every row at once
    assert held_ahead[3:6] == [1, 2, 3]  # ahead: row 4 and those after it wait for its result
    assert threads_now == {"MainThread"}
    assert len(threads_ahead) == 1 and threads_ahead.pop().startswith("gradlab-evaluations")


def test_an_evaluation_error_reaches_the_caller_at_its_row():
    def evaluate():
        raise RuntimeError("evaluation failed")

    evaluations = DeferredEvaluations(evaluate, ahead=True)
    evaluations.add({"step": 1.0})
    evaluations.add({"step": 2.0}, evaluate=True)
    evaluations.add({"step": 3.0}, evaluate=True)  # waits for the first, whose error is its row's
    with pytest.raises(RuntimeError, match="evaluation failed"):
        list(evaluations.drain())
    evaluations.close()


def test_the_copy_is_not_prepared_while_an_evaluation_reads_it():
    """A second evaluation asked for while the first runs waits for it before ``prepare``."""
    log, gate = [], threading.Event()

    def evaluate():
        log.append("evaluate start")
        assert gate.wait(10)
        log.append("evaluate end")
        return 0.0

    def prepare():
        log.append("prepare")

    evaluations = DeferredEvaluations(evaluate, prepare=prepare, ahead=True)
    evaluations.add({"step": 1.0}, evaluate=True)
    threading.Timer(0.2, gate.set).start()
    evaluations.add({"step": 2.0}, evaluate=True)
    assert [row["step"] for row in evaluations.drain()] == [1.0, 2.0]
    evaluations.close()
    assert log[:4] == ["prepare", "evaluate start", "evaluate end", "prepare"]


def test_close_waits_for_the_running_evaluation_and_drops_the_queue():
    started, finished = threading.Event(), threading.Event()

    def evaluate():
        started.set()
        threading.Event().wait(0.2)
        finished.set()
        return 1.0

    evaluations = DeferredEvaluations(evaluate, ahead=True)
    evaluations.add({"step": 1.0}, evaluate=True)
    evaluations.add({"step": 2.0})
    assert started.wait(10)
    evaluations.close()
    assert finished.is_set()
    assert list(evaluations.drain()) == []
    evaluations.close()  # idempotent
    assert not [t for t in threading.enumerate() if t.name.startswith("gradlab-evaluations")]
