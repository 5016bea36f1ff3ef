"""The tensor tree behind :mod:`experiments.muzero.search_tf` (private): graph-mode pieces.

B trees of ``N = num_simulations + 1`` nodes are tensors ``[B, N]`` (``[B, N, A]`` per child,
``[B, N, H]`` hidden states), node 0 the root and node ``s + 1`` the leaf added by simulation ``s``,
as in the NumPy reference's :mod:`experiments.muzero._reference_tree` and google-deepmind/mctx.
Tree statistics are float64, as in the NumPy tree, and every score is computed in the NumPy
tree's order of operations (the same products, sums and quotients, the exploration weights from
the same host-computed table, :mod:`experiments.muzero._puct`, the same
:class:`~experiments.muzero.qtransforms.QForm` functions), so the two searches agree bit for bit
wherever the model's outputs do. Ties follow the form's rule, as NumPy's: :func:`argmax_first`
(``np.argmax``) or :func:`argmax_last` (``tf.argmax`` promises neither).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import tensorflow as tf

from experiments.muzero._puct import exploration_weight
from experiments.muzero.qtransforms import QForm

F64 = tf.float64

RecurrentFnTF = Callable[
    [tf.Tensor, tf.Tensor, tf.Tensor], tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]
]
"""``(hidden [B, H], action [B] int32, step [B] int32) -> (next_hidden [B, H], reward [B],
value [B], policy_logits [B, A])``, TensorFlow ops (traced into the search graph)."""


@dataclasses.dataclass(frozen=True)
class Tree:
    """B trees as tensors; one simulation maps a ``Tree`` to the next (``tf.while_loop`` state)."""

    visits: tf.Tensor  # [B, N] int32
    value_sum: tf.Tensor  # [B, N] float64
    reward: tf.Tensor  # [B, N] float64, of the transition into the node (root: 0)
    q: tf.Tensor  # [B, N] float64, what MinMaxStats sees for the node (by q form)
    prior: tf.Tensor  # [B, N, A] float64, priors of each node's children
    children: tf.Tensor  # [B, N, A] int32, child node ids, -1 where not expanded
    parent: tf.Tensor  # [B, N] int32, -1 for the root (and unused nodes)
    hidden: tf.Tensor  # [B, N, H] the model's dtype
    q_min: tf.Tensor  # [B] float64, +inf before any update
    q_max: tf.Tensor  # [B] float64, -inf before any update

    def flat(self) -> tuple[tf.Tensor, ...]:
        """The fields in order (``tf.while_loop`` loop variables; ``Tree(*flat)`` rebuilds it)."""
        return tuple(getattr(self, f.name) for f in dataclasses.fields(self))


def softmax64(logits: tf.Tensor) -> tf.Tensor:
    """[B, A] -> [B, A] float64, max-shifted, as the reference's
    :func:`experiments.muzero._reference_tree.softmax`."""
    logits = tf.cast(logits, F64)
    z = tf.exp(logits - tf.reduce_max(logits, axis=1, keepdims=True))
    return z / tf.reduce_sum(z, axis=1, keepdims=True)


def argmax_first(x: tf.Tensor) -> tf.Tensor:
    """``np.argmax(x, axis=1)`` for [B, K]: the lowest index of the maximum; a NaN is the maximum.

    Returns:
      [B] int32.
    """
    nan = tf.math.is_nan(x)
    has_nan = tf.reduce_any(nan, axis=1, keepdims=True)
    top = tf.reduce_max(tf.where(nan, tf.constant(-np.inf, x.dtype), x), axis=1, keepdims=True)
    hit = tf.where(has_nan, nan, tf.equal(x, top))
    width = tf.shape(x)[1]
    index = tf.where(hit, tf.range(width)[None, :], width)
    return tf.reduce_min(index, axis=1)


def argmax_last(x: tf.Tensor) -> tf.Tensor:
    """The highest index of each row's maximum of [B, K] (the last NaN if any): ``[B]`` int32."""
    width = tf.shape(x)[1]
    return width - 1 - argmax_first(tf.reverse(x, axis=[1]))


def _pick(score: tf.Tensor, ties: str) -> tf.Tensor:
    """:func:`experiments.muzero._reference_tree.pick` in the graph."""
    return argmax_first(score) if ties == "lowest" else argmax_last(score)


def _rows_at(node: tf.Tensor) -> tf.Tensor:
    """[B] node ids -> [B, 2] indices ``(b, node_b)`` for gather_nd / scatter."""
    return tf.stack([tf.range(tf.shape(node)[0], dtype=node.dtype), node], axis=1)


def init_tree(root_hidden: tf.Tensor, root_prior: tf.Tensor, num_nodes: int) -> Tree:
    """The B roots, unvisited and unexpanded; ``root_prior`` [B, A] float64 (noise mixed in)."""
    batch = tf.shape(root_hidden)[0]
    num_actions = root_prior.shape[1]
    zeros = tf.zeros([batch, num_nodes], F64)
    prior = tf.concat(
        [root_prior[:, None, :], tf.zeros([batch, num_nodes - 1, num_actions], F64)], 1
    )
    hidden = tf.concat(
        [
            root_hidden[:, None, :],
            tf.zeros([batch, num_nodes - 1, root_hidden.shape[1]], root_hidden.dtype),
        ],
        axis=1,
    )
    return Tree(
        visits=tf.zeros([batch, num_nodes], tf.int32),
        value_sum=zeros,
        reward=zeros,
        q=zeros,
        prior=prior,
        children=tf.fill([batch, num_nodes, num_actions], -1),
        parent=tf.fill([batch, num_nodes], -1),
        hidden=hidden,
        q_min=tf.fill([batch], tf.constant(np.inf, F64)),
        q_max=tf.fill([batch], tf.constant(-np.inf, F64)),
    )


@dataclasses.dataclass(frozen=True)
class Constants:
    """Host-computed tables and settings the graph reads."""

    explore: tf.Tensor  # [S + 2] float64, exploration_weight(n) for n = 0..S+1
    inverse: tf.Tensor  # [S + 2] float64, 1 / (n + 1)
    discount: float
    form: QForm  # the value form: node_q, value_score, ties, fresh

    @classmethod
    def make(
        cls,
        num_simulations: int,
        *,
        discount: float,
        pb_c_base: float,
        pb_c_init: float,
        q_form: QForm,
    ) -> Constants:
        """The tables for ``num_simulations`` simulations (visit counts 0 .. S + 1)."""
        counts = np.arange(num_simulations + 2)
        return cls(
            explore=tf.constant(exploration_weight(counts, pb_c_base, pb_c_init), F64),
            inverse=tf.constant(1.0 / (counts + 1.0), F64),
            discount=float(discount),
            form=q_form,
        )


def _min_max(tree: Tree) -> tuple[tf.Tensor, tf.Tensor]:
    """``min_max_params``: [B, 1] offset and range (identity until max > min)."""
    valid = tree.q_max > tree.q_min
    lo = tf.where(valid, tree.q_min, 0.0)
    rg = tf.where(valid, tree.q_max - lo, 1.0)
    return lo[:, None], rg[:, None]


def scores(tree: Tree, node: tf.Tensor, c: Constants) -> tuple[tf.Tensor, tf.Tensor]:
    """pUCT scores of the children of ``node`` [B]; a node with 0 visits scores by prior in a form
    whose ``fresh`` is ``"prior"`` (its scores are all 0 otherwise).

    Returns:
      ``(scores [B, A] float64, children [B, A] int32)``.
    """
    at = _rows_at(node)
    kids = tf.gather_nd(tree.children, at)  # [B, A]
    safe = tf.maximum(kids, 0)
    expanded = kids >= 0
    kid_visits = tf.where(expanded, tf.gather(tree.visits, safe, batch_dims=1), 0)  # [B, A]
    node_visits = tf.gather_nd(tree.visits, at)  # [B]
    prior = tf.gather_nd(tree.prior, at)  # [B, A]
    # As the NumPy tree: (explore(N) * prior) * (1 / (N_child + 1)), then + value score.
    score = tf.gather(c.explore, node_visits)[:, None] * prior
    score = score * tf.gather(c.inverse, kid_visits)
    lo, rg = _min_max(tree)
    normalized = (tf.gather(tree.q, safe, batch_dims=1) - lo) / rg
    kid_reward = tf.gather(tree.reward, safe, batch_dims=1)
    value_score = c.form.value_score(normalized, kid_reward, c.discount)
    score = score + tf.where(kid_visits > 0, value_score, 0.0)
    if c.form.fresh == "prior":
        score = tf.where((node_visits == 0)[:, None], prior, score)
    return score, kids


def select(tree: Tree, c: Constants) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Descends every tree from its root to a child slot not expanded yet.

    Returns:
      ``(parent [B], action [B], depth [B])``, int32: the leaf's parent, the action into the
      leaf, and the parent's depth (root 0).
    """
    batch = tf.shape(tree.visits)[0]
    zeros = tf.zeros([batch], tf.int32)

    def cond(node, depth, done, action):
        del node, depth, action
        return tf.logical_not(tf.reduce_all(done))

    def body(node, depth, done, action):
        score, kids = scores(tree, node, c)
        choice = _pick(score, c.form.ties)
        child = tf.gather(kids, choice, batch_dims=1)
        going = tf.logical_and(tf.logical_not(done), child >= 0)
        action = tf.where(done, action, choice)
        node = tf.where(going, child, node)
        depth = tf.where(going, depth + 1, depth)
        return node, depth, tf.logical_not(going), action

    node, depth, _, action = tf.while_loop(
        cond, body, (zeros, zeros, tf.zeros([batch], tf.bool), zeros)
    )
    return node, action, depth


def expand(
    tree: Tree,
    leaf: tf.Tensor,
    parent: tf.Tensor,
    action: tf.Tensor,
    outputs: tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor],
) -> Tree:
    """Writes the model's outputs for node ``leaf`` (scalar id) of every tree."""
    next_hidden, reward, _, logits = outputs
    batch = tf.shape(parent)[0]
    at = _rows_at(tf.fill([batch], leaf))
    rows = tf.range(batch)
    return dataclasses.replace(
        tree,
        children=tf.tensor_scatter_nd_update(
            tree.children, tf.stack([rows, parent, action], axis=1), tf.fill([batch], leaf)
        ),
        parent=tf.tensor_scatter_nd_update(tree.parent, at, parent),
        hidden=tf.tensor_scatter_nd_update(tree.hidden, at, next_hidden),
        reward=tf.tensor_scatter_nd_update(tree.reward, at, tf.cast(reward, F64)),
        prior=tf.tensor_scatter_nd_update(tree.prior, at, softmax64(logits)),
    )


def backup(tree: Tree, leaf: tf.Tensor, leaf_value: tf.Tensor, c: Constants) -> Tree:
    """The pseudocode's ``backpropagate`` from node ``leaf`` (scalar id) to every root.

    ``value_sum += value; visits += 1; MinMaxStats.update(q); value = reward + discount * value``
    leaf first; q is the form's ``node_q(reward, value(), discount)``.
    NaN never enters MinMaxStats (``np.fmin`` / ``np.fmax`` in the NumPy tree).
    """
    batch = tf.shape(leaf_value)[0]

    def cond(node, *_):
        return tf.reduce_any(node >= 0)

    def body(node, value, visits, value_sum, q, q_min, q_max):
        active = node >= 0
        at = _rows_at(tf.maximum(node, 0))
        old_sum = tf.gather_nd(value_sum, at)
        old_visits = tf.gather_nd(visits, at)
        old_q = tf.gather_nd(q, at)
        reward = tf.gather_nd(tree.reward, at)
        new_sum = old_sum + value
        new_visits = old_visits + 1
        mean = new_sum / tf.cast(new_visits, F64)
        new_q = c.form.node_q(reward, mean, c.discount)
        value_sum = tf.tensor_scatter_nd_update(value_sum, at, tf.where(active, new_sum, old_sum))
        visits = tf.tensor_scatter_nd_update(visits, at, tf.where(active, new_visits, old_visits))
        q = tf.tensor_scatter_nd_update(q, at, tf.where(active, new_q, old_q))
        counted = tf.logical_and(active, tf.logical_not(tf.math.is_nan(new_q)))
        q_min = tf.where(counted, tf.minimum(q_min, new_q), q_min)
        q_max = tf.where(counted, tf.maximum(q_max, new_q), q_max)
        value = reward + c.discount * value
        node = tf.where(active, tf.gather_nd(tree.parent, at), -1)
        return node, value, visits, value_sum, q, q_min, q_max

    start = (tf.fill([batch], leaf), tf.cast(leaf_value, F64))
    state = (tree.visits, tree.value_sum, tree.q, tree.q_min, tree.q_max)
    _, _, visits, value_sum, q, q_min, q_max = tf.while_loop(cond, body, start + state)
    return dataclasses.replace(
        tree, visits=visits, value_sum=value_sum, q=q, q_min=q_min, q_max=q_max
    )


def root_statistics(tree: Tree, discount: float) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """``(visit_counts [B, A] int32, root_value [B] f64, q_values [B, A] f64)`` of the roots."""
    kids = tree.children[:, 0, :]
    safe = tf.maximum(kids, 0)
    visits = tf.where(kids >= 0, tf.gather(tree.visits, safe, batch_dims=1), 0)
    kid_sum = tf.gather(tree.value_sum, safe, batch_dims=1)
    kid_value = kid_sum / tf.cast(tf.maximum(visits, 1), F64)
    q = tf.gather(tree.reward, safe, batch_dims=1) + discount * kid_value
    root_value = tree.value_sum[:, 0] / tf.cast(tree.visits[:, 0], F64)
    return visits, root_value, tf.where(visits > 0, q, 0.0)


def select_action(
    visit_counts: tf.Tensor, temperature: tf.Tensor, uniforms: tf.Tensor
) -> tf.Tensor:
    """:func:`experiments.muzero._acting.select_action` on the caller's uniforms.

    Args:
      visit_counts: [B, A] int, each row with a positive sum.
      temperature: scalar float64 >= 0.
      uniforms: [B, A] float64: at T = 0 all of them (``rng.random((B, A))``), at T > 0 column 0
        (``rng.random(B)``).

    Returns:
      [B] int64 actions, as NumPy's: T = 0 the most visited (ties by the larger uniform); T > 0
      the inverse-CDF draw on ``N ** (1 / T)``.
    """
    counts = tf.cast(visit_counts, F64)
    peak = tf.reduce_max(counts, axis=1, keepdims=True)
    greedy = argmax_first(tf.where(tf.equal(counts, peak), uniforms, -1.0))
    ratio = counts / peak
    exponent = 1.0 / tf.where(temperature > 0, temperature, 1.0)
    # NumPy's ``x ** e`` is exact for e = 1 and 2 (a copy, a square); keep those exact here too.
    weights = tf.where(
        tf.equal(exponent, 1.0),
        ratio,
        tf.where(tf.equal(exponent, 2.0), ratio * ratio, tf.pow(ratio, exponent)),
    )
    running = weights[:, 0]
    cumulative = [running]
    for k in range(1, visit_counts.shape[1]):  # left to right, as np.cumsum
        running = running + weights[:, k]
        cumulative.append(running)
    cumulative = tf.stack(cumulative, axis=1)
    threshold = uniforms[:, :1] * cumulative[:, -1:]
    drawn = tf.reduce_sum(tf.cast(cumulative <= threshold, tf.int32), axis=1)
    drawn = tf.minimum(drawn, visit_counts.shape[1] - 1)
    return tf.cast(tf.where(temperature > 0, drawn, greedy), tf.int64)
