"""What TensorFlow's per-call argument binding costs the hot calls: public call against FlatCall.

    python benchmarks/dispatch_cost.py                 # default train step (B = 256, K = 5)
    python benchmarks/dispatch_cost.py --batch 128     # the step `gradlab bench` times

One process, one TensorFlow thread. The same concrete functions are called two ways, in
alternating blocks (order swapped every round), on the same inputs:

* ``public``: ``concrete(*args)``, TensorFlow's documented call, which binds the arguments to
  the traced signature on every call;
* ``flat``: :class:`~experiments.muzero.runtime.compiled_call.FlatCall`, which checks dtypes and
  shapes itself and runs the concrete function's flat entry point.

Two functions: the default train step (``Learner.update_tensors``' concrete function, fed the
arrays of a fixed batch; the step also updates the weights, so both ways run the same work) and
the compiled search of a self-play move (128 boards, 8 simulations, as a default Catch run).
Prints milliseconds per call (median of the rounds) and the saving per call.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from experiments.base import process


def _time(cases: dict, *, calls: int, rounds: int) -> dict[str, list[float]]:
    for run in cases.values():  # warm-up: compilation, caches
        run()
    spent: dict[str, list[float]] = {name: [] for name in cases}
    for r in range(rounds):
        order = list(cases.items()) if r % 2 == 0 else list(reversed(cases.items()))
        for name, run in order:
            start = time.perf_counter()
            for _ in range(calls):
                run()
            spent[name].append((time.perf_counter() - start) / calls * 1e3)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256, help="train step batch size")
    parser.add_argument("--unroll", type=int, default=5)
    parser.add_argument("--calls", type=int, default=100, help="calls per timed block")
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args()
    process.limit_threads(1)
    process.quiet_tensorflow()
    import tensorflow as tf

    from experiments.bench import make_learner, random_batch
    from experiments.muzero import CompiledSearch, Inference, MuZeroConfig, draw_randomness
    from experiments.muzero.runtime import FlatCall

    sizes = {"observation_size": 50, "num_actions": 3}  # Catch, 10x5
    network = MuZeroConfig().network  # the default sizes
    learner = make_learner(
        hidden_size=network.hidden_size,
        width=network.width,
        batch_size=args.batch,
        unroll_steps=args.unroll,
        seed=0,
        **sizes,
    )
    batch = random_batch(
        np.random.default_rng(0), batch_size=args.batch, unroll_steps=args.unroll, **sizes
    )
    arrays = learner.batch_tensors(batch)
    step = FlatCall(learner._update.get_concrete_function())  # noqa: SLF001
    train_cases = {
        "public": lambda: step.concrete({k: tf.constant(v) for k, v in arrays.items()}).numpy(),
        "flat": lambda: step(arrays).numpy(),
    }

    inference = Inference(learner.networks, jit_compile=True)
    search = CompiledSearch(
        inference.initial_fn,
        inference.recurrent_fn,
        num_actions=3,
        num_simulations=8,
        discount=0.997,
        jit_compile=True,
    )
    rng = np.random.default_rng(1)
    boards = (rng.random((128, 50)) < 0.1).astype(np.float32)
    noise, uniforms = draw_randomness(
        rng,
        batch_size=128,
        num_actions=3,
        temperature=1.0,
        dirichlet_alpha=0.25,
        dirichlet_fraction=0.25,
    )
    move = search.concrete_function(128, 50)
    scalars = (tf.constant(0.25, tf.float64), tf.constant(1.0, tf.float64))

    def public_move():
        args = (tf.constant(boards), tf.constant(noise), *scalars, tf.constant(uniforms))
        return [t.numpy() for t in move.concrete(*args)]

    def flat_move():
        return [t.numpy() for t in move(boards, noise, *scalars, uniforms)]

    search_cases = {"public": public_move, "flat": flat_move}
    for title, cases in (
        (f"train step (B = {args.batch}, K = {args.unroll})", train_cases),
        ("search move (128 boards, 8 simulations)", search_cases),
    ):
        spent = _time(cases, calls=args.calls, rounds=args.rounds)
        public, flat = (statistics.median(spent[name]) for name in ("public", "flat"))
        print(
            f"{title}: public {public:.3f} ms, flat {flat:.3f} ms a call "
            f"(saved {public - flat:.3f} ms, {(public - flat) / public:.1%}; "
            f"rounds {min(spent['public']):.2f}-{max(spent['public']):.2f} against "
            f"{min(spent['flat']):.2f}-{max(spent['flat']):.2f})"
        )


if __name__ == "__main__":
    main()
