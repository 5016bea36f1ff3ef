"""Where a default run's time goes: one job in this process, each phase timed with a wall clock.

    python benchmarks/phases.py                        # catch, the tuned regime, variant none
    python benchmarks/phases.py regime=stress task=cartpole muzero.training_steps=1000
    python benchmarks/phases.py --overlap              # as one run on all cores runs

Wraps (never changes) the four calls of the training loop of ``experiments/muzero/train.py``:
self-play moves (``SelfPlay.step``: one batched search per move), the batch (replay sampling,
targets, the copy into tensors), the compiled update and evaluation, run one after the other
(``overlap=False``: no batch is made nor evaluation run on a worker thread while a step
trains, so each phase shows its own cost); plus start-up (imports, building the networks, the
first call of each compiled function, which is where XLA compiles). One TensorFlow thread, as
each job of ``gradlab sweep`` on 2 cores. Prints one line per phase: seconds, share of the
run, calls.

``--overlap``: the run as a job with all cores runs it (``overlap=True``, all cores): the batch
phase is then the main thread's wait for its batch (``Batches.next``: made at once on self-play
steps, else ready or nearly), and evaluation runs on a worker thread beside the steps, shown
apart as "beside" (its time is not the main thread's).
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict

T0 = time.perf_counter()

from hydra import compose, initialize_config_module  # noqa: E402

from experiments.base import process  # noqa: E402
from experiments.config import register_schema, to_run_config  # noqa: E402
from experiments.muzero import MuZeroConfig  # noqa: E402


def main(overrides: list[str]) -> None:
    overlap = "--overlap" in overrides
    overrides = [o for o in overrides if o != "--overlap"]
    register_schema(MuZeroConfig)
    with initialize_config_module(config_module="conf", version_base=None):
        cfg = to_run_config(compose("config", overrides=["logger=none", *overrides]))
    process.limit_threads(None if overlap else 1)
    process.use_xla_cache(cfg.runtime.xla_cache)  # runtime.xla_cache=null: compile everything
    process.quiet_tensorflow()
    import tensorflow as tf  # noqa: F401  (the import is part of start-up)

    from experiments.muzero import learner as learner_module
    from experiments.muzero import selfplay, train
    from experiments.muzero.runtime import batches

    spent: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    first: dict[str, float] = {}

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            out = fn(*args, **kwargs)
            dt = time.perf_counter() - t
            if name not in first:
                first[name] = dt
            spent[name] += dt
            calls[name] += 1
            return out

        return wrapper

    selfplay.SelfPlay.step = timed("self-play moves", selfplay.SelfPlay.step)
    if overlap:
        batches.Batches.next = timed("batch (waited for)", batches.Batches.next)
    else:
        batches.Batches._make = timed("batch (sampling, targets, tensors)", batches.Batches._make)
    learner_module.Learner.update_tensors = timed(
        "update (train step)", learner_module.Learner.update_tensors
    )
    # With overlap, evaluation runs on a worker thread: its time is not the main thread's.
    beside = {"evaluation (beside)"} if overlap else set()
    train.evaluate = timed("evaluation (beside)" if overlap else "evaluation", train.evaluate)

    process.seed_everything(cfg.seed, deterministic=cfg.runtime.deterministic)
    variant, placement = cfg.variant.build()
    start = time.perf_counter()
    startup_imports = start - T0
    rows = 0
    first_row = None
    rows_of_run = train.train(
        cfg.muzero, cfg.task, variant, placement, seed=cfg.seed, overlap=overlap
    )
    for _ in rows_of_run:
        rows += 1
        if first_row is None:
            first_row = time.perf_counter() - start
    total = time.perf_counter() - start
    first_calls = sum(v for name, v in first.items() if name not in beside)
    phases = {name: spent[name] - first[name] for name in spent}
    other = total - sum(v for name, v in spent.items() if name not in beside)
    print(f"{rows} training steps; imports and config {startup_imports:.1f} s (before the run)")
    print(f"run {total:.1f} s, first row after {first_row:.1f} s")
    print(f"  {'first call of each phase (XLA compilation)':44s} {first_calls:6.1f} s "
          f"{first_calls / total:6.1%}")  # fmt: skip
    for name, seconds in phases.items():
        print(f"  {name:44s} {seconds:6.1f} s {seconds / total:6.1%}  {calls[name] - 1} calls")
    print(f"  {'other (networks, envs, rows, loop)':44s} {other:6.1f} s {other / total:6.1%}")


if __name__ == "__main__":
    main(sys.argv[1:])
