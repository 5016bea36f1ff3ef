"""Tests of the NumPy reference search against hand numbers and transcriptions of its sources."""

from __future__ import annotations

import math

import _pseudocode
import numpy as np
import pytest
from _pseudocode import MinMaxStats, Node
from _search_models import chain as _chain
from _search_models import random_model as _random_model
from _search_models import two_armed as _two_armed

from experiments.base.errors import ConfigError
from experiments.muzero.reference_search import (
    SearchOutput,
    min_max_normalize,
    puct_scores,
    root_priors,
    run_search,
    select_action,
    visit_softmax_temperature,
)

# ---------------------------------------------------------------------------------------------
# The two sources for one tree: the published pseudocode (Schrittwieser et al. 2020,
# arXiv:1911.08265 ancillary pseudocode.py, revised version), its ``Node``, ``MinMaxStats``,
# ``ucb_score`` and ``backpropagate`` taken unchanged from its transcription in
# tests/_pseudocode.py, and werner-duvaud/muzero-general's ``self_play.py`` (``MCTS.ucb_score``,
# ``MCTS.backpropagate``, one player) transcribed below. Both sources share ``Node`` and
# ``MinMaxStats``. What differs per form: the value term of the score and what MinMax sees
# (muzero-general's two functions), and ``select_child``: the pseudocode's ``max`` over
# ``(score, action, child)`` tuples (ties to the highest index) for "pseudocode"; for
# "normalized" the rule of experiments/muzero/qtransforms.py (lowest index; at the root's first
# selection, with 0 visits and all scores 0, the highest prior), where muzero-general takes a
# random one. tests/muzero/test_search_pseudocode.py checks the "pseudocode" form against the
# pseudocode's whole ``run_mcts``.


def _ucb_score_pseudocode(parent, child, min_max_stats, discount, pb_c_base, pb_c_init):
    config = _pseudocode.Config(0, discount, pb_c_base, pb_c_init)
    return _pseudocode.ucb_score(config, parent, child, min_max_stats)


def _backpropagate_pseudocode(search_path, value, discount, min_max_stats):
    # one player: every node's to_play is PLAYER (_expand_node), so no value changes sign
    _pseudocode.backpropagate(search_path, value, _pseudocode.PLAYER, discount, min_max_stats)


def _ucb_score_normalized(parent, child, min_max_stats, discount, pb_c_base, pb_c_init):
    pb_c = math.log((parent.visit_count + pb_c_base + 1) / pb_c_base) + pb_c_init
    pb_c *= math.sqrt(parent.visit_count) / (child.visit_count + 1)

    prior_score = pb_c * child.prior

    if child.visit_count > 0:
        value_score = min_max_stats.normalize(child.reward + discount * child.value())
    else:
        value_score = 0

    return prior_score + value_score


def _backpropagate_normalized(search_path, value, discount, min_max_stats):
    for node in reversed(search_path):
        node.value_sum += value
        node.visit_count += 1
        min_max_stats.update(node.reward + discount * node.value())

        value = node.reward + discount * value


def _select_child_pseudocode(node, min_max_stats, ucb_score, discount, pb_c_base, pb_c_init):
    _, action, child = max(
        (ucb_score(node, child, min_max_stats, discount, pb_c_base, pb_c_init), action, child)
        for action, child in node.children.items()
    )
    return action, child


def _select_child_normalized(node, min_max_stats, ucb_score, discount, pb_c_base, pb_c_init):
    if node.visit_count == 0:  # all scores 0: the highest prior, lowest index among equals
        action = max(node.children, key=lambda a: (node.children[a].prior, -a))
    else:
        scores = [
            ucb_score(node, child, min_max_stats, discount, pb_c_base, pb_c_init)
            for child in node.children.values()
        ]
        action = scores.index(max(scores))  # ties: lowest index
    return action, node.children[action]


_SOURCES = {
    "pseudocode": (_ucb_score_pseudocode, _backpropagate_pseudocode, _select_child_pseudocode),
    "normalized": (_ucb_score_normalized, _backpropagate_normalized, _select_child_normalized),
}


def _expand_node(node: Node, hidden_state, reward: float, policy_logits) -> None:
    node.to_play = _pseudocode.PLAYER
    node.hidden_state = hidden_state
    node.reward = reward
    top = max(policy_logits)  # max-shifted, as the module's softmax
    policy = {a: math.exp(logit - top) for a, logit in enumerate(policy_logits)}
    policy_sum = sum(policy.values())
    for action, p in policy.items():
        node.children[action] = Node(p / policy_sum)


def _reference(
    hidden, logits, fn, *, num_simulations, discount, q_form, noise=None, fraction=0.25,
    pb_c_base=19652.0, pb_c_init=1.25,
):  # fmt: skip
    """``run_mcts`` for one root; returns (visit counts [A], root value, q [A], leaf steps)."""
    ucb_score, backpropagate, select_child = _SOURCES[q_form]
    root = Node(0)
    _expand_node(root, hidden, 0.0, list(logits))
    if noise is not None:  # add_exploration_noise, with the caller's draw
        for a, n in zip(root.children, noise, strict=True):
            root.children[a].prior = root.children[a].prior * (1 - fraction) + n * fraction
    min_max_stats = MinMaxStats()
    steps = []
    for _ in range(num_simulations):
        node = root
        search_path = [node]
        while node.expanded():
            action, node = select_child(
                node, min_max_stats, ucb_score, discount, pb_c_base, pb_c_init
            )
            search_path.append(node)
        parent = search_path[-2]
        step = len(search_path) - 1  # the parent's depth + 1
        steps.append(step)
        nh, r, v, lg = fn(parent.hidden_state[None], np.array([action], np.int32), np.array([step]))
        _expand_node(node, nh[0], float(r[0]), list(lg[0]))
        backpropagate(search_path, float(v[0]), discount, min_max_stats)
    children = root.children.values()
    visits = [c.visit_count for c in children]
    q = [c.reward + discount * c.value() if c.visit_count else 0.0 for c in children]
    return np.array(visits), root.value(), np.array(q), steps


# ---------------------------------------------------------------------------------------------
# Searches on hand-built models.


def _two_armed_search(q_form, num_simulations=4):
    return run_search(
        np.zeros((1, 1), np.float32),
        np.zeros(1),
        np.zeros((1, 2)),
        _two_armed,
        num_simulations=num_simulations,
        discount=1.0,
        rng=np.random.default_rng(0),
        dirichlet_fraction=0.0,
        q_form=q_form,
    )


def test_two_armed_model_first_four_simulations_by_hand_normalized():
    # gamma = 1, priors 0.5 / 0.5 everywhere, reward 1 for action 1, 0 for action 0, value 0.
    # pb(N) = log((N + 19653) / 19652) + 1.25: pb(1) = 1.2501018, pb(2) = 1.2501526,
    # pb(3) = 1.2502035.
    # Sim 1: root N = 0, all scores 0 -> highest prior, tie -> action 0. Leaf (0): r 0, v 0.
    #   Backup: leaf sum 0 N 1, Q 0; root sum 0 N 1. MinMax [0, 0]: identity.
    # Sim 2: root N = 1. child 0: 0.5 * pb(1) * 1/2 + Q 0 = 0.3125; child 1 (unvisited):
    #   0.5 * pb(1) * 1/1 = 0.6251 -> action 1. Leaf (1): r 1, v 0: Q = 1 + 0 = 1.
    #   Root sum 0 + 1 = 1, N 2, Q 0.5. MinMax [0, 1].
    # Sim 3: root N = 2, sqrt 2 * pb(2) = 1.7680. child 0: 1.7680 * 0.5 / 2 + norm(0) = 0.4420;
    #   child 1: 0.4420 + norm(1) = 1.4420 -> 1. Node (1), N 1: both children unvisited with
    #   equal scores 0.6251 -> action 0 (lowest). Leaf (1, 0): r 0, v 0 -> returns 0 to (1),
    #   1 + 0 = 1 to the root. (1): sum 0, N 2, Q = 1 + 0/2 = 1. Root: sum 2, N 3.
    # Sim 4: root N = 3, sqrt 3 * pb(3) = 2.1654. child 0: 2.1654 * 0.5 / 2 + 0 = 0.5414;
    #   child 1: 2.1654 * 0.5 / 3 + 1 = 1.3609 -> 1. Node (1), N 2: child (1, 0) visited,
    #   Q = 0 -> norm 0, 1.7680 * 0.5 / 2 = 0.4420; child (1, 1) unvisited: 1.7680 * 0.5 = 0.8840
    #   -> action 1. Leaf (1, 1): r 1, v 0 -> returns 1 to (1), 1 + 1 = 2 to the root.
    #   (1): sum 1, N 3, Q = 1 + 1/3. Root: sum 2 + 2 = 4, N 4, value 1.0.
    out = _two_armed_search("normalized")
    assert isinstance(out, SearchOutput)
    np.testing.assert_array_equal(out.visit_counts, [[1, 3]])
    assert out.root_value[0] == pytest.approx(1.0)
    np.testing.assert_allclose(out.q_values, [[0.0, 1.0 + 1.0 / 3.0]])


def test_two_armed_model_first_four_simulations_by_hand_pseudocode():
    # The same model; value score r + normalize(v), MinMax fed node values, ties to the highest
    # index (the pseudocode's max over (score, action, child)).
    # Sim 1: root N = 0, all scores 0 -> tie -> action 1 (the last). Leaf (1): r 1, v 0.
    #   Backup (returns: leaf 0, root 1 + 0 = 1): leaf N 1 value 0; root N 1 value 1.
    #   MinMax [0, 1].
    # Sim 2: root N = 1, pb(1) = 1.2501: child 0 unvisited 0.6251; child 1: 0.6251 / 2 = 0.3125
    #   + 1 + norm(0) = 1.3125 -> 1. Node (1), N 1: both children unvisited, 0.6251 each -> tie
    #   -> action 1. Leaf (1, 1): returns 0, 1, 2. (1): sum 1, N 2, value 0.5; root: sum 3, N 2,
    #   value 1.5. MinMax [0, 1.5].
    # Sim 3: root N = 2, 1.7680: child 0 unvisited 0.8840; child 1: 1.7680 * 0.5 / 3 = 0.2947
    #   + 1 + 0.5 / 1.5 = 1.6280 -> 1. Node (1), N 2: (1, 0) unvisited 0.8840; (1, 1): 0.4420 + 1
    #   + norm(0) = 1.4420 -> 1. Node (1, 1), N 1: tie -> 1. Returns 0, 1, 2, 3: (1, 1) value 0.5,
    #   (1) sum 3 N 3 value 1, root sum 6 N 3 value 2. MinMax [0, 2].
    # Sim 4: root N = 3, 2.1654: child 0 unvisited 1.0827; child 1: 2.1654 * 0.5 / 4 = 0.2707
    #   + 1 + 1 / 2 = 1.7707 -> 1. Node (1), N 3: (1, 0) 1.0827; (1, 1): 2.1654 * 0.5 / 3
    #   = 0.3609 + 1 + 0.5 / 2 = 1.6109 -> 1. Node (1, 1), N 2: (1, 1, 0) 0.8840; (1, 1, 1): 0.4420
    #   + 1 + 0 = 1.4420 -> 1. Node (1, 1, 1), N 1: tie -> 1. Returns 0, 1, 2, 3, 4.
    #   (1): sum 0 + 1 + 2 + 3 = 6, N 4, Q = 1 + 6/4 = 2.5. Root: sum 1 + 2 + 3 + 4 = 10, N 4: 2.5.
    out = _two_armed_search("pseudocode")
    np.testing.assert_array_equal(out.visit_counts, [[0, 4]])
    assert out.root_value[0] == pytest.approx(2.5)
    np.testing.assert_allclose(out.q_values, [[0.0, 2.5]])


@pytest.mark.parametrize("q_form", ["pseudocode", "normalized"])
def test_two_armed_model_prefers_the_paying_action(q_form):
    out = run_search(
        np.zeros((1, 1), np.float32),
        np.zeros(1),
        np.zeros((1, 2)),
        _two_armed,
        num_simulations=50,
        discount=0.9,
        rng=np.random.default_rng(0),
        dirichlet_fraction=0.0,
        q_form=q_form,
    )
    assert out.visit_counts.sum() == 50
    assert out.visit_counts[0, 1] > 40  # every step of action 1 pays, action 0 never does
    expected = _reference(
        np.zeros(1), [0.0, 0.0], _two_armed, num_simulations=50, discount=0.9, q_form=q_form
    )
    np.testing.assert_array_equal(out.visit_counts[0], expected[0])
    assert out.root_value[0] == pytest.approx(expected[1], rel=1e-12)


def test_chain_discounts_rewards_and_leaf_values_by_hand():
    # One action, reward 1 per step, leaf value 4, gamma 0.5. Simulation s reaches depth s:
    #   sim 1: G = 1 + 0.5 * 4 = 3;  sim 2: 1 + 0.5 * (1 + 0.5 * 4) = 2.5;
    #   sim 3: 1 + 0.5 * (1 + 0.5 * (1 + 0.5 * 4)) = 2.25.  Root value = (3 + 2.5 + 2.25) / 3.
    # The child's sum: 4 + (1 + 2) + (1 + 0.5 * 3) = 9.5 over 3 visits: Q = 1 + 0.5 * 9.5 / 3.
    out = run_search(
        np.zeros((1, 2), np.float32),
        np.zeros(1),
        np.zeros((1, 1)),
        _chain,
        num_simulations=3,
        discount=0.5,
        rng=np.random.default_rng(0),
    )
    np.testing.assert_array_equal(out.visit_counts, [[3]])
    assert out.root_value[0] == pytest.approx(7.75 / 3)
    assert out.q_values[0, 0] == pytest.approx(1 + 0.5 * 9.5 / 3)


@pytest.mark.parametrize("q_form", ["pseudocode", "normalized"])
@pytest.mark.parametrize("sims", [1, 7, 40])
def test_chain_root_value_closed_form(sims, q_form):
    # Simulation s returns sum_{j<s} 0.5^j + 0.5^s * 4 = 2 + 2 * 0.5^s; the mean over s = 1..n is
    # 2 + (2 / n) * (1 - 0.5^n). Depth reaches n: the backup handles long paths.
    out = run_search(
        np.zeros((2, 2)),
        np.zeros(2),
        np.zeros((2, 1)),
        _chain,
        num_simulations=sims,
        discount=0.5,
        rng=np.random.default_rng(0),
        q_form=q_form,
    )
    np.testing.assert_allclose(out.root_value, 2 + (2 / sims) * (1 - 0.5**sims), rtol=1e-12)


def test_non_finite_model_outputs_do_not_crash():
    def broken(hidden, action, step):
        batch = hidden.shape[0]
        return hidden, np.full(batch, np.nan), np.full(batch, np.inf), np.full((batch, 2), np.nan)

    out = run_search(
        np.zeros((3, 2)), np.zeros(3), np.zeros((3, 2)), broken,
        num_simulations=5, discount=0.9, rng=np.random.default_rng(0),
    )  # fmt: skip
    np.testing.assert_array_equal(out.visit_counts.sum(axis=1), 5)
    assert np.isnan(out.root_value).all()


def test_root_network_value_is_not_backed_up():
    common = dict(num_simulations=3, discount=0.5, rng=np.random.default_rng(0))
    a = run_search(np.zeros((1, 2)), np.array([100.0]), np.zeros((1, 1)), _chain, **common)
    b = run_search(np.zeros((1, 2)), np.array([-7.0]), np.zeros((1, 1)), _chain, **common)
    assert a.root_value[0] == b.root_value[0] == pytest.approx(7.75 / 3)


@pytest.mark.parametrize("q_form", ["pseudocode", "normalized"])
@pytest.mark.parametrize("seed", range(4))
def test_matches_the_transcription_of_its_source(seed, q_form):
    num_actions, width, batch, sims, discount = 3 + seed % 2, 4, 6, 24, 0.95
    fn = _random_model(num_actions, width, seed)
    steps = []

    def recording(hidden, action, step):
        steps.append(step.copy())
        return fn(hidden, action, step)

    rng = np.random.default_rng(100 + seed)
    hidden = rng.normal(size=(batch, width))
    logits = rng.normal(size=(batch, num_actions))
    noise = np.random.default_rng(seed).dirichlet(np.full(num_actions, 0.25), size=batch)
    out = run_search(
        hidden,
        np.zeros(batch),
        logits,
        recording,
        num_simulations=sims,
        discount=discount,
        rng=np.random.default_rng(seed),
        q_form=q_form,
    )
    for b in range(batch):
        visits, value, q, path_steps = _reference(
            hidden[b],
            logits[b],
            fn,
            num_simulations=sims,
            discount=discount,
            q_form=q_form,
            noise=noise[b],
        )
        np.testing.assert_array_equal(out.visit_counts[b], visits)
        assert out.root_value[b] == pytest.approx(value, rel=1e-9)
        np.testing.assert_allclose(out.q_values[b], q, rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(np.stack(steps)[:, b], path_steps)
    assert np.stack(steps).max() > 2  # the trees are deeper than the root's children


def test_the_two_q_forms_differ_on_random_models():
    """The forms pick different root visit counts for most random trees at 25 simulations.

    Measured here: 234 of 240 trees (98%; 227 before the pseudocode form took its own tie
    rule); the issue measured about 3 in 4 on its models.
    """
    differ = total = 0
    for seed in range(40):
        num_actions = 3 + seed % 3
        fn = _random_model(num_actions, 4, 1000 + seed)
        rng = np.random.default_rng(seed)
        hidden = rng.normal(size=(6, 4))
        logits = rng.normal(size=(6, num_actions))
        visits = [
            run_search(
                hidden, np.zeros(6), logits, fn, num_simulations=25, discount=0.997,
                rng=np.random.default_rng(seed), q_form=form,
            ).visit_counts
            for form in ("pseudocode", "normalized")
        ]  # fmt: skip
        differ += int((visits[0] != visits[1]).any(axis=1).sum())
        total += len(hidden)
    assert total == 240 and differ / total >= 0.75, (differ, total)


def test_batched_search_equals_independent_searches_exactly():
    num_actions, width, batch = 3, 4, 7
    fn = _random_model(num_actions, width, 7)
    rng = np.random.default_rng(1)
    hidden = rng.normal(size=(batch, width)).astype(np.float32)
    logits = rng.normal(size=(batch, num_actions)).astype(np.float32)
    kwargs = dict(num_simulations=30, discount=0.97, dirichlet_alpha=0.3)
    batched = run_search(
        hidden, np.zeros(batch), logits, fn, rng=np.random.default_rng(5), **kwargs
    )
    shared = np.random.default_rng(5)  # one generator, trees one after the other
    singles = [
        run_search(hidden[b : b + 1], np.zeros(1), logits[b : b + 1], fn, rng=shared, **kwargs)
        for b in range(batch)
    ]
    np.testing.assert_array_equal(
        batched.visit_counts, np.concatenate([s.visit_counts for s in singles])
    )
    np.testing.assert_array_equal(
        batched.root_value, np.concatenate([s.root_value for s in singles])
    )
    np.testing.assert_array_equal(batched.q_values, np.concatenate([s.q_values for s in singles]))
    assert len({tuple(v) for v in batched.visit_counts}) > 1  # the trees really differ


def test_root_value_is_the_visit_weighted_q_of_the_children():
    fn = _random_model(4, 4, 3)
    rng = np.random.default_rng(2)
    out = run_search(
        rng.normal(size=(5, 4)),
        np.zeros(5),
        rng.normal(size=(5, 4)),
        fn,
        num_simulations=40,
        discount=0.9,
        rng=rng,
    )
    np.testing.assert_array_equal(out.visit_counts.sum(axis=1), 40)
    weighted = (out.visit_counts * out.q_values).sum(axis=1) / 40
    np.testing.assert_allclose(out.root_value, weighted, rtol=1e-12)
    assert out.visit_counts.dtype == np.int64
    assert out.q_values.shape == (5, 4) and out.root_value.shape == (5,)


def test_recurrent_fn_is_called_once_per_simulation_with_all_trees():
    calls = []
    fn = _random_model(2, 3, 0)

    def counting(hidden, action, step):
        calls.append((hidden.shape, action.shape, action.dtype, step.shape, step.dtype))
        return fn(hidden, action, step)

    run_search(
        np.zeros((9, 3), np.float32),
        np.zeros(9),
        np.zeros((9, 2)),
        counting,
        num_simulations=11,
        discount=1.0,
        rng=np.random.default_rng(0),
    )
    int32 = np.dtype(np.int32)
    assert calls == [((9, 3), (9,), int32, (9,), int32)] * 11


# ---------------------------------------------------------------------------------------------
# pUCT, MinMax, noise.


def test_puct_scores_by_hand():
    # Parent N = 4: pb = log(19657 / 19652) + 1.25 = 1.2502544, times sqrt(4) = 2.5005088.
    # Child 0 unvisited, prior 0.3: 2.5005088 * 0.3 / 1 = 0.7501526, value score 0 (its reward and
    # value are ignored). Child 1: N 3, prior 0.7: prior score 2.5005088 * 0.7 / 4 = 0.4375890;
    # reward 0.5, value 0.2, discount 0.9, MinMax [0.2, 1.0]:
    #   pseudocode: 0.5 + 0.9 * (0.2 - 0.2) / 0.8 = 0.5            -> 0.9375890
    #   normalized: (0.5 + 0.9 * 0.2 - 0.2) / 0.8 = 0.48 / 0.8 = 0.6 -> 1.0375890
    args = (
        np.array([4]),
        np.array([[0, 3]]),
        np.array([[123.0, 0.5]]),
        np.array([[456.0, 0.2]]),
        np.array([[0.3, 0.7]]),
    )
    bounds = (np.array([0.2]), np.array([1.0]))
    pseudo = puct_scores(*args, *bounds, discount=0.9)  # the default form
    np.testing.assert_allclose(pseudo, [[0.7501526, 0.9375890]], rtol=1e-6)
    normalized = puct_scores(*args, *bounds, discount=0.9, q_form="normalized")
    np.testing.assert_allclose(normalized, [[0.7501526, 1.0375890]], rtol=1e-6)
    # max == min: nothing is normalised, and both forms add the raw 0.5 + 0.9 * 0.2 = 0.68.
    for form in ("pseudocode", "normalized"):
        same = puct_scores(*args, np.array([0.6]), np.array([0.6]), discount=0.9, q_form=form)
        np.testing.assert_allclose(same, [[0.7501526, 0.4375890 + 0.68]], rtol=1e-6)
    # Parent with 0 visits: only value scores remain.
    zero = puct_scores(
        np.array([0]), np.array([[0, 0]]), np.zeros((1, 2)), np.zeros((1, 2)),
        np.array([[0.3, 0.7]]), np.array([np.inf]), np.array([-np.inf]), discount=1.0,
    )  # fmt: skip
    np.testing.assert_array_equal(zero, [[0.0, 0.0]])


def test_min_max_normalize_by_hand():
    q = np.array([[0.2, 0.6, 1.0], [5.0, -1.0, 2.0], [3.0, 4.0, 5.0]])
    out = min_max_normalize(q, np.array([0.2, 3.0, np.inf]), np.array([1.0, 3.0, -np.inf]))
    np.testing.assert_allclose(out[0], [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(out[1], q[1])  # max == min: unchanged
    np.testing.assert_array_equal(out[2], q[2])  # no update yet: unchanged


def test_root_priors_noise():
    logits = np.log(np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]]))
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    clean = root_priors(logits, rng=rng, dirichlet_fraction=0.0)
    np.testing.assert_allclose(clean, np.exp(logits))
    assert rng.bit_generator.state == state  # fraction 0 draws nothing
    noisy = root_priors(logits, rng=np.random.default_rng(4))
    again = root_priors(logits, rng=np.random.default_rng(4))
    np.testing.assert_array_equal(noisy, again)
    np.testing.assert_allclose(noisy.sum(axis=1), 1.0)
    assert not np.allclose(noisy, clean)
    noise = np.random.default_rng(4).dirichlet(np.full(3, 0.25), size=2)
    np.testing.assert_allclose(noisy, 0.75 * np.exp(logits) + 0.25 * noise)
    pure = root_priors(logits, rng=np.random.default_rng(4), dirichlet_fraction=1.0)
    np.testing.assert_allclose(pure.sum(axis=1), 1.0)


def test_search_noise_reproducible_and_off_at_fraction_zero():
    fn = _random_model(3, 4, 1)
    args = (np.ones((4, 4)), np.zeros(4), np.zeros((4, 3)), fn)
    kw = dict(num_simulations=20, discount=0.9)
    a = run_search(*args, rng=np.random.default_rng(8), **kw)
    b = run_search(*args, rng=np.random.default_rng(8), **kw)
    np.testing.assert_array_equal(a.visit_counts, b.visit_counts)
    c = run_search(*args, rng=np.random.default_rng(1), dirichlet_fraction=0.0, **kw)
    d = run_search(*args, rng=np.random.default_rng(2), dirichlet_fraction=0.0, **kw)
    np.testing.assert_array_equal(c.visit_counts, d.visit_counts)
    # identical roots without noise give identical trees; with noise they differ
    assert (c.visit_counts == c.visit_counts[0]).all()
    assert not (a.visit_counts == a.visit_counts[0]).all()


# ---------------------------------------------------------------------------------------------
# Acting.


def test_select_action_temperature_zero_is_argmax_with_random_ties():
    counts = np.array([[1, 7, 2], [0, 0, 4], [5, 1, 5]])
    rng = np.random.default_rng(0)
    picks = np.array([select_action(counts, temperature=0.0, rng=rng) for _ in range(200)])
    assert (picks[:, 0] == 1).all() and (picks[:, 1] == 2).all()
    assert set(picks[:, 2]) == {0, 2}  # a tie: both maxima are chosen, never the 1-visit one


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_select_action_samples_visit_counts_to_the_power_one_over_t(temperature):
    counts = np.tile([0, 10, 30, 60], (40_000, 1))
    actions = select_action(counts, temperature=temperature, rng=np.random.default_rng(1))
    freq = np.bincount(actions, minlength=4) / len(actions)
    expected = np.array([0, 10, 30, 60]) ** (1 / temperature)
    np.testing.assert_allclose(freq, expected / expected.sum(), atol=0.01)  # std <= 0.0025
    assert freq[0] == 0.0


def test_select_action_is_reproducible():
    counts = np.array([[3, 3, 4]] * 50)
    a = select_action(counts, temperature=1.0, rng=np.random.default_rng(9))
    b = select_action(counts, temperature=1.0, rng=np.random.default_rng(9))
    np.testing.assert_array_equal(a, b)


def test_temperature_schedule_lookup():
    schedule = ((0, 1.0), (500, 0.5), (750, 0.25))
    got = [visit_softmax_temperature(s, schedule=schedule) for s in (0, 499, 500, 749, 750, 10**6)]
    assert got == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]


# ---------------------------------------------------------------------------------------------
# Bad input.

_GOOD = dict(num_simulations=2, discount=0.9, rng=np.random.default_rng(0))


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        (dict(num_simulations=0), "num_simulations"),
        (dict(num_simulations=2.5), "num_simulations"),
        (dict(discount=1.5), "discount"),
        (dict(discount=-0.1), "discount"),
        (dict(dirichlet_fraction=1.2), "dirichlet_fraction"),
        (dict(dirichlet_fraction=-0.5), "dirichlet_fraction"),
        (dict(dirichlet_alpha=0.0), "dirichlet_alpha"),
        (dict(pb_c_base=0.0), "pb_c_base"),
        (dict(pb_c_init=float("nan")), "pb_c_init"),
        (dict(rng=np.random.RandomState(0)), "rng"),
        (dict(q_form="minmax"), "unknown q_form 'minmax'; choose one of: normalized, pseudocode"),
    ],
)
def test_bad_hyper_parameters_raise_config_error(override, needle):
    kwargs = {**_GOOD, **override}
    with pytest.raises(ConfigError, match=needle) as info:
        run_search(np.zeros((2, 3)), np.zeros(2), np.zeros((2, 2)), _two_armed, **kwargs)
    bad = next(iter(override.values()))
    if not isinstance(bad, np.random.RandomState):
        assert repr(bad) in str(info.value)


@pytest.mark.parametrize(
    ("hidden", "value", "logits", "needle"),
    [
        (np.zeros(3), np.zeros(2), np.zeros((2, 2)), r"root_hidden has shape \(3,\)"),
        (np.zeros((2, 3)), np.zeros(3), np.zeros((2, 2)), r"root_value has shape \(3,\)"),
        (np.zeros((2, 3)), np.zeros(2), np.zeros((3, 2)), r"root_logits has shape \(3, 2\)"),
        (np.zeros((2, 3)), np.zeros(2), np.zeros(2), r"root_logits has shape \(2,\)"),
    ],
)
def test_shape_mismatches_raise_config_error(hidden, value, logits, needle):
    with pytest.raises(ConfigError, match=needle):
        run_search(hidden, value, logits, _two_armed, **_GOOD)


def test_bad_recurrent_output_shape_raises_config_error():
    def wrong(hidden, action, step):
        nh, r, v, lg = _two_armed(hidden, action, step)
        return nh, r, v, np.zeros((hidden.shape[0], 3))  # 3 actions, the root had 2

    with pytest.raises(ConfigError, match=r"prior_logits has shape \(2, 3\)"):
        run_search(np.zeros((2, 1)), np.zeros(2), np.zeros((2, 2)), wrong, **_GOOD)


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: select_action(np.ones((2, 3)), temperature=-1.0, rng=np.random.default_rng()),
         "temperature"),
        (lambda: select_action(np.zeros((1, 3)), temperature=1.0, rng=np.random.default_rng()),
         "positive sum"),
        (lambda: select_action(np.ones(3), temperature=1.0, rng=np.random.default_rng()),
         r"shape \(3,\)"),
        (lambda: visit_softmax_temperature(5, schedule=()), "schedule"),
        (lambda: visit_softmax_temperature(5, schedule=((0, 1.0), (0, 0.5))), "increase"),
        (lambda: visit_softmax_temperature(5, schedule=((0, -1.0),)), "-1.0"),
        (lambda: visit_softmax_temperature(-1, schedule=((0, 1.0),)), "step -1"),
    ],
)  # fmt: skip
def test_bad_acting_arguments_raise_config_error(call, needle):
    with pytest.raises(ConfigError, match=needle):
        call()
