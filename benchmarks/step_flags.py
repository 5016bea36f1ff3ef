"""The default train step under this process's XLA/TensorFlow settings: its time and its numbers.

    python benchmarks/step_flags.py
    XLA_FLAGS=--xla_cpu_use_fusion_emitters=false python benchmarks/step_flags.py
    python benchmarks/step_flags.py --no-grappler

XLA flags are read once per process, so settings are compared by running this once per setting,
alternating, several times (this machine's speed drifts within minutes). Prints the first call
(tracing, compilation; the XLA program cache is not used), the median and fastest of 5 blocks
of 100 steps, and a hash of the weights after 31 steps on fixed batches: the same hash means
the setting leaves the numbers bit for bit as they are.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import time

import numpy as np

from experiments.base import process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--unroll", type=int, default=5)
    parser.add_argument("--no-grappler", action="store_true", help="disable_meta_optimizer")
    args = parser.parse_args()
    process.limit_threads(1)
    process.quiet_tensorflow()
    import tensorflow as tf

    from experiments.bench import make_learner, random_batch

    if args.no_grappler:
        tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    shape = dict(
        batch_size=args.batch, unroll_steps=args.unroll, observation_size=50, num_actions=3
    )
    learner = make_learner(hidden_size=32, width=64, seed=0, **shape)
    rng = np.random.default_rng(0)
    batches = []
    for _ in range(4):
        arrays = learner.batch_tensors(random_batch(rng, **shape))
        batches.append({k: tf.constant(v) for k, v in arrays.items()})
    start = time.perf_counter()
    learner.update_tensors(batches[0])
    first = time.perf_counter() - start
    for i in range(30):
        learner.update_tensors(batches[i % 4])
    digest = hashlib.sha256()
    for variable in learner.networks.variables:
        digest.update(variable.numpy().tobytes())
    blocks = []
    for _ in range(5):
        start = time.perf_counter()
        for i in range(100):
            learner.update_tensors(batches[i % 4])
        blocks.append((time.perf_counter() - start) / 100 * 1e3)
    setting = os.environ.get("XLA_FLAGS", "") + (" grappler off" if args.no_grappler else "")
    print(f"[{setting.strip() or 'default'}] first call {first:.1f} s; step "
          f"{statistics.median(blocks):.2f} ms (fastest block {min(blocks):.2f}); "
          f"weights after 31 steps: {digest.hexdigest()[:12]}")  # fmt: skip


if __name__ == "__main__":
    main()
