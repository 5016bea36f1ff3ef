"""Tests of the batched MuZero search against hand numbers and a transcription of the pseudocode."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.errors import ConfigError
from experiments.muzero.search import (
    SearchOutput,
    min_max_normalize,
    puct_scores,
    root_priors,
    run_search,
    select_action,
    visit_softmax_temperature,
)

# ---------------------------------------------------------------------------------------------
# Models.


def _two_armed(hidden: np.ndarray, action: np.ndarray):
    """Action 1 pays reward 1, action 0 pays 0, everywhere; value 0; uniform priors over 2."""
    batch = hidden.shape[0]
    return hidden, (action == 1).astype(np.float32), np.zeros(batch), np.zeros((batch, 2))


def _chain(hidden: np.ndarray, action: np.ndarray):
    """One action; reward 1 per step, value 4 at every leaf."""
    batch = hidden.shape[0]
    return hidden, np.ones(batch), np.full(batch, 4.0), np.zeros((batch, 1))


def _random_model(num_actions: int, width: int, seed: int):
    """A deterministic model whose row b depends on row b only, bit for bit (no BLAS)."""
    rng = np.random.default_rng(seed)
    mix = rng.normal(size=(width, width)) / math.sqrt(width)
    embed = rng.normal(size=(num_actions, width))
    reward_w = rng.normal(size=(num_actions, width))
    value_w = rng.normal(size=width)
    logit_w = rng.normal(size=(width, num_actions)) * 2.0

    def matvec(h: np.ndarray, w: np.ndarray) -> np.ndarray:  # h [B, H] @ w [H, K], row-wise
        out = h[:, :1] * w[0]
        for k in range(1, w.shape[0]):
            out = out + h[:, k : k + 1] * w[k]
        return out

    def fn(hidden: np.ndarray, action: np.ndarray):
        nxt = np.tanh(matvec(hidden, mix) + embed[action])
        reward = np.tanh((hidden * reward_w[action]).sum(axis=1))
        value = 2.0 * np.tanh(matvec(nxt, value_w[:, None])[:, 0])
        return nxt, reward, value, matvec(nxt, logit_w)

    return fn


# ---------------------------------------------------------------------------------------------
# The pseudocode (Schrittwieser et al. 2020, Appendix), transcribed for one tree, with the tie
# rule documented in experiments/muzero/search.py: lowest index; at the root's first selection
# (0 visits, all scores 0) the highest prior.


class _Node:
    def __init__(self, prior: float):
        self.prior, self.visit_count, self.value_sum, self.reward = prior, 0, 0.0, 0.0
        self.children: dict[int, _Node] = {}
        self.hidden = None

    def expanded(self) -> bool:
        return len(self.children) > 0

    def value(self) -> float:
        return 0.0 if self.visit_count == 0 else self.value_sum / self.visit_count


class _MinMax:
    def __init__(self):
        self.maximum, self.minimum = -float("inf"), float("inf")

    def update(self, value: float) -> None:
        self.maximum, self.minimum = max(self.maximum, value), min(self.minimum, value)

    def normalize(self, value: float) -> float:
        if self.maximum > self.minimum:
            return (value - self.minimum) / (self.maximum - self.minimum)
        return value


def _ucb(parent: _Node, child: _Node, stats: _MinMax, discount: float) -> float:
    pb_c = math.log((parent.visit_count + 19652.0 + 1) / 19652.0) + 1.25
    pb_c *= math.sqrt(parent.visit_count) / (child.visit_count + 1)
    value_score = (
        stats.normalize(child.reward + discount * child.value()) if child.visit_count else 0
    )
    return pb_c * child.prior + value_score


def _expand(node: _Node, hidden, reward: float, logits) -> None:
    node.hidden, node.reward = hidden, reward
    policy = [math.exp(x - max(logits)) for x in logits]  # max-shifted, as the module does
    for action, p in enumerate(policy):
        node.children[action] = _Node(p / sum(policy))


def _reference(hidden, logits, fn, *, num_simulations, discount, noise=None, fraction=0.25):
    root = _Node(0)
    _expand(root, hidden, 0.0, list(logits))
    if noise is not None:
        for a, n in zip(root.children, noise, strict=True):
            root.children[a].prior = root.children[a].prior * (1 - fraction) + n * fraction
    stats = _MinMax()
    for _ in range(num_simulations):
        node, path, action = root, [root], 0
        while node.expanded():
            if node.visit_count == 0:
                action = max(node.children, key=lambda a: (node.children[a].prior, -a))
            else:
                scores = [_ucb(node, c, stats, discount) for c in node.children.values()]
                action = scores.index(max(scores))
            node = node.children[action]
            path.append(node)
        parent = path[-2]
        nh, r, v, lg = fn(parent.hidden[None], np.array([action], np.int32))
        _expand(node, nh[0], float(r[0]), list(lg[0]))
        value = float(v[0])
        for n in reversed(path):
            n.value_sum += value
            n.visit_count += 1
            stats.update(n.reward + discount * n.value())
            value = n.reward + discount * value
    visits = [c.visit_count for c in root.children.values()]
    q = [c.reward + discount * c.value() if c.visit_count else 0.0 for c in root.children.values()]
    return np.array(visits), root.value(), np.array(q)


# ---------------------------------------------------------------------------------------------
# Searches on hand-built models.


def test_two_armed_model_first_four_simulations_by_hand():
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
    #   equal scores 0.6251 -> action 0. Leaf (1, 0): r 0, v 0 -> returns 0 to (1), 1 + 0 = 1 to
    #   the root. (1): sum 0, N 2, Q = 1 + 0/2 = 1. Root: sum 2, N 3.
    # Sim 4: root N = 3, sqrt 3 * pb(3) = 2.1654. child 0: 2.1654 * 0.5 / 2 + 0 = 0.5414;
    #   child 1: 2.1654 * 0.5 / 3 + 1 = 1.3609 -> 1. Node (1), N 2: child (1, 0) visited,
    #   Q = 0 -> norm 0, 1.7680 * 0.5 / 2 = 0.4420; child (1, 1) unvisited: 1.7680 * 0.5 = 0.8840
    #   -> action 1. Leaf (1, 1): r 1, v 0 -> returns 1 to (1), 1 + 1 = 2 to the root.
    #   (1): sum 1, N 3, Q = 1 + 1/3. Root: sum 2 + 2 = 4, N 4, value 1.0.
    out = run_search(
        np.zeros((1, 1), np.float32),
        np.zeros(1),
        np.zeros((1, 2)),
        _two_armed,
        num_simulations=4,
        discount=1.0,
        rng=np.random.default_rng(0),
        dirichlet_fraction=0.0,
    )
    assert isinstance(out, SearchOutput)
    np.testing.assert_array_equal(out.visit_counts, [[1, 3]])
    assert out.root_value[0] == pytest.approx(1.0)
    np.testing.assert_allclose(out.q_values, [[0.0, 1.0 + 1.0 / 3.0]])


def test_two_armed_model_prefers_the_paying_action():
    out = run_search(
        np.zeros((1, 1), np.float32),
        np.zeros(1),
        np.zeros((1, 2)),
        _two_armed,
        num_simulations=50,
        discount=0.9,
        rng=np.random.default_rng(0),
        dirichlet_fraction=0.0,
    )
    assert out.visit_counts.sum() == 50
    assert out.visit_counts[0, 1] > 40  # every step of action 1 pays, action 0 never does
    expected = _reference(np.zeros(1), [0.0, 0.0], _two_armed, num_simulations=50, discount=0.9)
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


@pytest.mark.parametrize("sims", [1, 7, 40])
def test_chain_root_value_closed_form(sims):
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
    )
    np.testing.assert_allclose(out.root_value, 2 + (2 / sims) * (1 - 0.5**sims), rtol=1e-12)


def test_non_finite_model_outputs_do_not_crash():
    def broken(hidden, action):
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


@pytest.mark.parametrize("seed", range(4))
def test_matches_the_pseudocode_transcription(seed):
    num_actions, width, batch, sims, discount = 3 + seed % 2, 4, 6, 24, 0.95
    fn = _random_model(num_actions, width, seed)
    rng = np.random.default_rng(100 + seed)
    hidden = rng.normal(size=(batch, width))
    logits = rng.normal(size=(batch, num_actions))
    noise = np.random.default_rng(seed).dirichlet(np.full(num_actions, 0.25), size=batch)
    out = run_search(
        hidden,
        np.zeros(batch),
        logits,
        fn,
        num_simulations=sims,
        discount=discount,
        rng=np.random.default_rng(seed),
    )
    for b in range(batch):
        visits, value, q = _reference(
            hidden[b], logits[b], fn, num_simulations=sims, discount=discount, noise=noise[b]
        )
        np.testing.assert_array_equal(out.visit_counts[b], visits)
        assert out.root_value[b] == pytest.approx(value, rel=1e-9)
        np.testing.assert_allclose(out.q_values[b], q, rtol=1e-9, atol=1e-12)


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

    def counting(hidden, action):
        calls.append((hidden.shape, action.shape, action.dtype))
        return fn(hidden, action)

    run_search(
        np.zeros((9, 3), np.float32),
        np.zeros(9),
        np.zeros((9, 2)),
        counting,
        num_simulations=11,
        discount=1.0,
        rng=np.random.default_rng(0),
    )
    assert calls == [((9, 3), (9,), np.dtype(np.int32))] * 11


# ---------------------------------------------------------------------------------------------
# pUCT, MinMax, noise.


def test_puct_scores_by_hand():
    # Parent N = 4: pb = log(19657 / 19652) + 1.25 = 1.2502544, times sqrt(4) = 2.5005088.
    # Child 0 unvisited, prior 0.3: 2.5005088 * 0.3 / 1 = 0.7501526, value score 0.
    # Child 1: N 3, prior 0.7, Q 0.6 in [0.2, 1.0]: 2.5005088 * 0.7 / 4 + 0.4 / 0.8 = 0.9375890.
    scores = puct_scores(
        np.array([4]),
        np.array([[0, 3]]),
        np.array([[123.0, 0.6]]),
        np.array([[0.3, 0.7]]),
        np.array([0.2]),
        np.array([1.0]),
    )
    np.testing.assert_allclose(scores, [[0.7501526, 0.9375890]], rtol=1e-6)
    # max == min: Q is not normalised (pseudocode), so the raw 0.6 is added.
    same = puct_scores(
        np.array([4]),
        np.array([[0, 3]]),
        np.array([[0.0, 0.6]]),
        np.array([[0.3, 0.7]]),
        np.array([0.6]),
        np.array([0.6]),
    )
    np.testing.assert_allclose(same, [[0.7501526, 0.4375890 + 0.6]], rtol=1e-6)
    # Parent with 0 visits: only value scores remain.
    zero = puct_scores(
        np.array([0]), np.array([[0, 0]]), np.zeros((1, 2)), np.array([[0.3, 0.7]]),
        np.array([np.inf]), np.array([-np.inf]),
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
    def wrong(hidden, action):
        nh, r, v, lg = _two_armed(hidden, action)
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
