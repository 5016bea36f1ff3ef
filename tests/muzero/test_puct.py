"""The pUCT exploration weight both searches read (experiments/muzero/_puct.py), by hand and
against the published pseudocode's ``ucb_score`` (tests/_pseudocode.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _pseudocode import Config, Node, ucb_score

from experiments.muzero._puct import exploration_weight


def test_no_visits_no_exploration():
    # sqrt(0) = 0, whatever the log term
    assert exploration_weight(np.array([0]), 19652.0, 1.25).tolist() == [0.0]


def test_hand_values_with_round_constants():
    # pb_c_base = 1: log((N + 2) / 1); N = 2: (log 4 + 0.5) * sqrt 2; N = 7: (log 9 + 0.5) * sqrt 7
    got = exploration_weight(np.array([2, 7]), 1.0, 0.5)
    want = [(2 * math.log(2) + 0.5) * math.sqrt(2), (2 * math.log(3) + 0.5) * math.sqrt(7)]
    assert got.tolist() == pytest.approx(want, rel=1e-15)


def test_muzero_constants_at_one_visit():
    # log(19654 / 19652) = log(1 + x), x = 1/9826 = 1.0177081e-4: x - x^2/2 + x^3/3 - ...
    # = 1.0177081e-4 - 5.17866e-9 + 3.5e-13 = 1.0176563e-4, times sqrt(1) = 1
    got = float(exploration_weight(np.array([1]), 19652.0, 1.25)[0])
    assert got == pytest.approx(1.25 + 1.0176563e-4, abs=1e-11)


def test_elementwise_float64_any_shape():
    visits = np.arange(12, dtype=np.int32).reshape(3, 4)
    got = exploration_weight(visits, 19652.0, 1.25)
    assert got.shape == (3, 4) and got.dtype == np.float64
    assert np.all(np.diff(got.ravel()) > 0)  # more visits, more weight on the prior


@pytest.mark.parametrize("visits", [1, 3, 50, 800])
def test_the_pseudocodes_prior_term(visits):
    """``ucb_score`` with a child of prior 1, no visits and a value term of 0 is
    ``pb_c * sqrt(N) / 1``: the weight this function tabulates."""
    config = Config(num_simulations=1, discount=0.997)
    parent, child = Node(0.5), Node(1.0)
    parent.visit_count = visits
    prior_only = ucb_score(config, parent, child, _NoValue())
    weight = exploration_weight(np.array([visits]), config.pb_c_base, config.pb_c_init)
    assert float(weight[0]) == pytest.approx(prior_only, rel=1e-12)


class _NoValue:
    """MinMaxStats whose normalisation is never reached (an unvisited child scores 0)."""

    def normalize(self, value: float) -> float:
        raise AssertionError("an unvisited child has no value term")
