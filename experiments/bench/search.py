"""Batched search vs the same search run one environment at a time, with the same compiled model.

Both sides call :func:`experiments.muzero.search.run_search` with the compiled
:class:`~experiments.muzero.selfplay.Inference` ``recurrent`` as the model: batched, B roots in
one search (one model call per simulation for all B trees); one at a time, the same roots as B
searches of one root each (one model call per simulation per tree), as a per-environment actor
does. Roots come from one batched ``initial`` call on random boards; it is not timed. The root
noise is drawn from one generator per block, row by row, so the one-at-a-time block computes the
very visit counts of the batched one (``run_search`` guarantees batched == independent searches).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from experiments.muzero.networks import Networks
from experiments.muzero.search import run_search
from experiments.muzero.selfplay import Inference

__all__ = ["search_cases"]


def search_cases(
    networks: Networks,
    *,
    observation_size: int,
    batch_size: int,
    num_simulations: int,
    single_searches: int,
    seed: int,
) -> tuple[tuple[Callable[[], object], int], tuple[Callable[[], object], int]]:
    """The two timed blocks and their simulation counts.

    Args:
      networks: the model searched with (compiled here with XLA).
      observation_size: O.
      batch_size: B, roots of the batched search.
      num_simulations: simulations per tree.
      single_searches: how many of the B roots the one-at-a-time block searches (<= B).
      seed: seeds the boards and the root noise.

    Returns:
      ``((batched_run, batch_size * num_simulations), (single_run, single_searches *
      num_simulations))``; the runs return the visit counts ``[B, A]`` and
      ``[single_searches, A]``.
    """
    rng = np.random.default_rng(seed)
    inference = Inference(networks, jit_compile=True)
    boards = (rng.random((batch_size, observation_size)) < 0.1).astype(np.float32)
    hidden, value, logits = inference.initial(boards)
    noise_seed = int(rng.integers(2**31 - 1))

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

    def batched() -> np.ndarray:
        return search(slice(0, batch_size), np.random.default_rng(noise_seed))

    def single() -> np.ndarray:
        rng = np.random.default_rng(noise_seed)  # rows of noise drawn in order, as batched
        return np.concatenate([search(slice(b, b + 1), rng) for b in range(single_searches)])

    return (
        (batched, batch_size * num_simulations),
        (single, single_searches * num_simulations),
    )
