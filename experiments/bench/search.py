"""Search speed: the compiled search vs the NumPy batched search vs one environment at a time.

All three search the same B random boards with the same networks (compiled with XLA):

* compiled: :meth:`~experiments.muzero.search_tf.CompiledSearch.act`, ONE call of one compiled
  graph that runs the initial inference, all simulations of all B trees and the action choice
  (its host-side draws included). It does a little more work than the other two, which start
  from roots computed beforehand and pick no action;
* batched: :func:`~experiments.muzero.reference_search.run_search` on the B roots, with the compiled
  :class:`~experiments.muzero.selfplay.Inference` ``recurrent`` as the model (one model call per
  simulation for all B trees);
* one at a time: the same roots as single-root searches (one model call per simulation per
  tree), as a per-environment actor does.

Roots come from one batched ``initial`` call; it is not timed. Every block draws its root noise
from a generator seeded alike, row by row, so all three compute the very same visit counts
(``run_search`` guarantees batched == independent searches; the compiled search equals the NumPy
one, ``tests/muzero/test_search_tf.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from experiments.muzero import CompiledSearch, Inference, Networks, run_search

__all__ = ["SEARCH_CASES", "search_cases"]

SEARCH_CASES = ("compiled", "batched", "one_at_a_time")
"""The keys of :func:`search_cases`."""


def search_cases(
    networks: Networks,
    *,
    observation_size: int,
    batch_size: int,
    num_simulations: int,
    single_searches: int,
    seed: int,
) -> dict[str, tuple[Callable[[], np.ndarray], int]]:
    """The timed blocks and their simulation counts.

    Args:
      networks: the model searched with (compiled here with XLA).
      observation_size: O.
      batch_size: B, roots of the compiled and the batched search.
      num_simulations: simulations per tree.
      single_searches: how many of the B roots the one-at-a-time block searches (<= B).
      seed: seeds the boards and the root noise.

    Returns:
      ``{name: (run, simulations)}`` for each name of :data:`SEARCH_CASES`; every run returns
      the visit counts it computed, ``[B, A]`` (``[single_searches, A]`` one at a time).
    """
    rng = np.random.default_rng(seed)
    inference = Inference(networks, jit_compile=True)
    boards = (rng.random((batch_size, observation_size)) < 0.1).astype(np.float32)
    hidden, value, logits = inference.initial(boards)
    noise_seed = int(rng.integers(2**31 - 1))
    compiled_search = CompiledSearch(
        inference.initial_fn,
        inference.recurrent_fn,
        num_actions=networks.num_actions,
        num_simulations=num_simulations,
        discount=0.997,
        jit_compile=True,
    )

    def search(rows: slice, rng: np.random.Generator) -> np.ndarray:
        out = run_search(
            hidden[rows],
            value[rows],
            logits[rows],
            inference.recurrent,
            num_simulations=num_simulations,
            discount=0.997,
            rng=rng,
        )
        return out.visit_counts

    def compiled() -> np.ndarray:
        out = compiled_search.act(boards, rng=np.random.default_rng(noise_seed), temperature=1.0)
        return out.visit_counts

    def batched() -> np.ndarray:
        return search(slice(0, batch_size), np.random.default_rng(noise_seed))

    def single() -> np.ndarray:
        rng = np.random.default_rng(noise_seed)  # rows of noise drawn in order, as batched
        return np.concatenate([search(slice(b, b + 1), rng) for b in range(single_searches)])

    return {
        "compiled": (compiled, batch_size * num_simulations),
        "batched": (batched, batch_size * num_simulations),
        "one_at_a_time": (single, single_searches * num_simulations),
    }
