"""What a leading seed axis would buy: the compiled train step at batch B vs at S x B.

Several seeds of one configuration trained in one compiled graph (JAX users' ``vmap`` over a
seed axis) would, at best, cost what one train step on S times the batch costs: the same
matrices, S times taller. This times both side by side in one process (interleaved rounds,
medians) for Catch's network, and prints the speed-up S seeds would get over S separate steps:

    python benchmarks/seed_axis.py                 # B = 256, S = 5, 1 TensorFlow thread
    python benchmarks/seed_axis.py --seeds 10 --threads 2

An upper bound: a real seed axis also needs S sets of weights (batched matmuls instead of one
tall matmul), S optimizer states and S searches, and self-play and evaluation do not shrink.
One was built and measured below this bound (the step alone 1.42x for 5 seeds, a sweep 1.07x on
Catch and 0.82x on Breakout), then removed: docs/performance.md, "The seed axis, removed".
"""

from __future__ import annotations

import argparse

import numpy as np

from experiments.base import process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    process.limit_threads(args.threads)
    process.quiet_tensorflow()
    import tensorflow as tf

    from experiments.bench import Case, interleaved_rates, make_learner, median, random_batch

    cases = []
    for batch in (args.batch, args.batch * args.seeds):
        learner = make_learner(
            hidden_size=32, width=64, batch_size=batch, unroll_steps=5,
            observation_size=50, num_actions=3, seed=0,
        )  # fmt: skip
        sample = random_batch(
            np.random.default_rng(0), batch_size=batch, unroll_steps=5,
            observation_size=50, num_actions=3,
        )  # fmt: skip
        tensors = {k: tf.constant(v) for k, v in learner.batch_tensors(sample).items()}

        def run(learner=learner, tensors=tensors) -> None:
            for _ in range(args.calls):
                float(learner.update_tensors(tensors)["loss/total"])

        cases.append(Case(f"B={batch}", run, args.calls * batch))
    rates = interleaved_rates(cases, repeats=args.repeats, warmup=1)
    one, many = (median(rates[c.name]) for c in cases)
    print(f"train step, samples/s (median of {args.repeats} interleaved rounds, "
          f"{args.threads} thread(s)): B={args.batch}: {one:,.0f}; "
          f"B={args.batch * args.seeds}: {many:,.0f}")  # fmt: skip
    print(f"{args.seeds} seeds in one step of {args.seeds} x {args.batch} samples would train "
          f"{many / one:.2f}x as fast as {args.seeds} separate steps (an upper bound)")  # fmt: skip


if __name__ == "__main__":
    main()
