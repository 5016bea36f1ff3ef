"""What a leading seed axis would buy: the compiled train step at batch B vs at S x B.

Several seeds of one configuration trained in one compiled graph (JAX users' ``vmap`` over a
seed axis) would, at best, cost what one train step on S times the batch costs: the same
matrices, S times taller. This times both side by side in one process (interleaved rounds,
medians) for Catch's network, and prints the speed-up S seeds would get over S separate steps:

    python benchmarks/seed_axis.py                 # B = 256, S = 5, 1 TensorFlow thread
    python benchmarks/seed_axis.py --seeds 10 --threads 2

An upper bound: a real seed axis also needs S sets of weights (batched matmuls instead of one
tall matmul), S optimizer states and S searches, and self-play and evaluation do not shrink.

``--group`` times that real seed axis instead (``muzero.seed_axis``): one
:class:`~experiments.muzero.seed_axis.GroupLearner` of S seeds against S separate learners,
each on its own batch of B (variant ``scale_gradient``):

    python benchmarks/seed_axis.py --group         # S = 5, B = 256, 1 thread
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
    parser.add_argument("--group", action="store_true", help="the seed axis against S learners")
    args = parser.parse_args()
    process.limit_threads(args.threads)
    process.quiet_tensorflow()
    import tensorflow as tf

    from experiments.bench import train_step
    from experiments.bench._timing import Case, interleaved_rates, median

    if args.group:
        _group(args)
        return
    cases = []
    for batch in (args.batch, args.batch * args.seeds):
        learner = train_step.make_learner(
            hidden_size=32, width=64, batch_size=batch, unroll_steps=5,
            observation_size=50, num_actions=3, seed=0,
        )  # fmt: skip
        sample = train_step.random_batch(
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


def _group(args: argparse.Namespace) -> None:
    """S learners, one step each on its own batch, against one GroupLearner step of S seeds."""
    import tensorflow as tf

    from experiments.bench import train_step
    from experiments.bench._timing import Case, interleaved_rates, median
    from experiments.gradients import get_placement, make_variant
    from experiments.muzero.config import MuZeroConfig, NetworkConfig
    from experiments.muzero.learner import Learner
    from experiments.muzero.networks import Networks
    from experiments.muzero.seed_axis import GroupLearner, StackedNetworks

    variant, placement = make_variant("scale_gradient"), get_placement("pseudocode")
    network = NetworkConfig(hidden_size=32, width=64, value_support_size=20, reward_support_size=5)
    config = MuZeroConfig(network=network, batch_size=args.batch, unroll_steps=5)

    def networks(seed: int) -> Networks:
        return Networks(network, observation_size=50, num_actions=3, seed=seed)

    rng = np.random.default_rng(0)
    batches = [
        train_step.random_batch(
            rng, batch_size=args.batch, unroll_steps=5, observation_size=50, num_actions=3
        )
        for _ in range(args.seeds)
    ]
    singles = [
        Learner(networks(s), config=config, variant=variant, placement=placement)
        for s in range(args.seeds)
    ]
    single_tensors = [
        {k: tf.constant(v) for k, v in learner.batch_tensors(batch).items()}
        for learner, batch in zip(singles, batches, strict=True)
    ]
    group = GroupLearner(
        StackedNetworks([networks(s) for s in range(args.seeds)]),
        config=config,
        variant=variant,
        placement=placement,
    )
    group_tensors = {k: tf.constant(v) for k, v in group.group_tensors(batches).items()}

    def separate() -> None:
        for _ in range(args.calls):
            for learner, tensors in zip(singles, single_tensors, strict=True):
                learner.update_tensors(tensors)

    def together() -> None:
        for _ in range(args.calls):
            group.update_tensors(group_tensors)

    work = args.calls * args.seeds * args.batch
    cases = [Case("separate", separate, work), Case("group", together, work)]
    rates = interleaved_rates(cases, repeats=args.repeats, warmup=1)
    apart, joint = (median(rates[c.name]) for c in cases)
    print(f"train step, samples/s (median of {args.repeats} interleaved rounds, "
          f"{args.threads} thread(s)): {args.seeds} learners: {apart:,.0f}; "
          f"one group of {args.seeds}: {joint:,.0f}; "
          f"group / separate {joint / apart:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
