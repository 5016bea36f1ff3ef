"""``q_form=pseudocode`` against the published pseudocode run unchanged (tests/_pseudocode.py).

Both searches, the NumPy reference and the compiled one, must give the pseudocode's visit counts
tree for tree under any priors, ties included: uniform priors (every choice among unvisited
children is a tie, which the pseudocode's ``max`` over ``(score, action, child)`` gives to the
highest action), coarse priors (floored logits: many equal priors) and random ones.
"""

from __future__ import annotations

import _pseudocode
import numpy as np
import pytest
from _search_models import PRIORS, RandomModelTF, random_model, roots_initial_fn

from experiments.muzero.reference_search import run_search
from experiments.muzero.search_tf import CompiledSearch


def _roots(rng: np.random.Generator, batch: int, width: int, num_actions: int, priors: str):
    hidden = rng.normal(size=(batch, width))
    logits = rng.normal(size=(batch, num_actions)) * 2.0
    if priors == "coarse":
        logits = np.floor(logits)
    elif priors == "uniform":
        logits = np.zeros_like(logits)
    return hidden, logits


def test_a_fresh_root_expands_its_last_action_whatever_the_priors():
    # Simulation 1: the root has 0 visits, so every prior score is sqrt(0) * ... = 0 and every
    # child is unvisited (value score 0): all tie, and max over (0, action, child) tuples takes
    # the highest action. The normalized form expands the most probable action instead.
    fn = random_model(4, 3, 0)
    for logits, normalized_first in (([0.0] * 4, 0), ([3.0, 0.0, 1.0, -2.0], 0), ([0, 1, 2, 0], 2)):
        hidden = np.zeros((1, 3))
        logits = np.array([logits], np.float64)
        kwargs = dict(num_simulations=1, discount=0.9, rng=np.random.default_rng(0))
        out = run_search(hidden, np.zeros(1), logits, fn, dirichlet_fraction=0.0, **kwargs)
        np.testing.assert_array_equal(out.visit_counts, [[0, 0, 0, 1]])
        oracle, _, _ = _pseudocode.search(hidden[0], logits[0], fn, num_simulations=1, discount=0.9)
        np.testing.assert_array_equal(oracle, [0, 0, 0, 1])
        other = run_search(
            hidden, np.zeros(1), logits, fn, dirichlet_fraction=0.0, q_form="normalized", **kwargs
        )
        assert other.visit_counts[0].tolist() == [int(a == normalized_first) for a in range(4)]


@pytest.mark.parametrize("priors", PRIORS)
def test_the_reference_search_equals_the_published_pseudocode(priors):
    """Visit for visit (and root value, Q to float rounding) on 120 random trees per kind of
    priors: 2-4 actions, 6-13 simulations, half of them with root noise."""
    trees = 0
    for case in range(12):
        num_actions, width, batch = 2 + case % 3, 3, 10
        sims, noisy = 6 + case % 8, case % 2 == 0
        fn = random_model(num_actions, width, 500 + case, priors=priors)
        rng = np.random.default_rng(case)
        hidden, logits = _roots(rng, batch, width, num_actions, priors)
        fraction = 0.25 if noisy else 0.0
        noise = np.random.default_rng(case).dirichlet(np.full(num_actions, 0.25), size=batch)
        out = run_search(
            hidden, np.zeros(batch), logits, fn, num_simulations=sims, discount=0.95,
            rng=np.random.default_rng(case), dirichlet_fraction=fraction,
        )  # fmt: skip
        for b in range(batch):
            visits, value, q = _pseudocode.search(
                hidden[b], logits[b], fn, num_simulations=sims, discount=0.95,
                noise=noise[b] if noisy else None,
            )  # fmt: skip
            np.testing.assert_array_equal(out.visit_counts[b], visits, err_msg=f"{case=} {b=}")
            assert out.root_value[b] == pytest.approx(value, rel=1e-9, abs=1e-12)
            np.testing.assert_allclose(out.q_values[b], q, rtol=1e-9, atol=1e-12)
            trees += 1
    assert trees == 120


@pytest.mark.parametrize("priors", PRIORS)
def test_the_compiled_search_equals_the_published_pseudocode(priors):
    """The compiled search (XLA) on 60 random trees per kind of priors, with root noise: the
    model's TensorFlow twin gives the same outputs to float rounding, ties stay ties."""
    num_actions, width, batch, sims = 3, 3, 20, 10
    model = RandomModelTF(num_actions, width, priors=priors)
    search = CompiledSearch(
        roots_initial_fn(width), model, num_actions=num_actions, num_simulations=sims,
        discount=0.95, q_form="pseudocode",
    )  # fmt: skip
    for seed in range(3):
        model.load(700 + seed)
        fn = random_model(num_actions, width, 700 + seed, priors=priors)
        hidden, logits = _roots(np.random.default_rng(seed), batch, width, num_actions, priors)
        noise = np.random.default_rng(seed).dirichlet(np.full(num_actions, 0.25), size=batch)
        out = search(
            np.concatenate([hidden, logits], axis=1).astype(np.float32), noise=noise,
            noise_fraction=0.25, temperature=0.0, uniforms=np.full((batch, num_actions), 0.5),
        )  # fmt: skip
        hidden32 = hidden.astype(np.float32)  # what the compiled search's roots hold
        logits32 = logits.astype(np.float32)
        for b in range(batch):
            visits, _, _ = _pseudocode.search(
                hidden32[b], logits32[b], fn, num_simulations=sims, discount=0.95, noise=noise[b]
            )
            np.testing.assert_array_equal(out.visit_counts[b], visits, err_msg=f"{seed=} {b=}")
    assert search.traces == 1
