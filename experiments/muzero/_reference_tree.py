"""The array tree of the NumPy reference search (private; no run uses it): the tree behind
:func:`experiments.muzero.reference_search.run_search`.

B trees, each of ``N = num_simulations + 1`` nodes, live in flat arrays: node ``n`` of tree ``b``
is row ``b * N + n`` (node 0 the root, node ``s + 1`` the leaf added by simulation ``s``). Rows
``B * N + b`` are tree ``b``'s "no child yet" node (0 visits, value score masked to 0), and the
last row is a scratch node that absorbs the writes of paths shorter than the longest one (its
value sum is NaN, so it never enters MinMaxStats). Per node we keep what selection reads, already
in the form it needs: ``explore_prior = (log((N + c2 + 1) / c2) + c1) * sqrt(N) * prior``,
``inv_visits = 1 / (N + 1)`` and ``q``, the quantity MinMaxStats sees (the q form's
``node_q(reward, value_sum / N, discount)``); they are refreshed in the backup, once per
simulation, so a selection step costs about a dozen NumPy calls whatever B is. (The pUCT score is
thus computed in a different but equivalent order from the pseudocode's: equal up to float
rounding.) Which action wins among equal scores is the q form's ``ties``.

Per simulation: selection (a Python loop over depth; a tree that has found its leaf steps into
its null node and stays there), one ``recurrent_fn`` call (``step`` = the leaf's depth, i.e. the
parent's depth + 1), expansion, then the backup of the whole
path matrix ``[depth + 1, B]`` at once (returns by the pseudocode's recursion, one row at a time,
so each tree's numbers are bit-for-bit those of a search run on that tree alone).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from experiments.base.errors import ConfigError
from experiments.muzero._puct import exploration_weight
from experiments.muzero.qtransforms import QForm

RecurrentFn = Callable[
    [np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
]
"""``(hidden [B, H] float32, action [B] int32, step [B] int32) -> (next_hidden [B, H], reward [B],
value [B], prior_logits [B, A])``; ``step`` is the 1-based index of the dynamics call along the
path (the parent's depth + 1: root children have step 1), what a placement needs to put a
variant's forward transform where training put it. Reward and value are scalars (the caller
converts from its categorical supports). Re-exported by
:mod:`experiments.muzero.reference_search`."""


_OUTPUT_NAMES = ("next_hidden", "reward", "value", "prior_logits")


def min_max_params(q_min: np.ndarray, q_max: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Offset and range implementing ``MinMaxStats.normalize`` as ``(q - lo) / rg``.

    Args:
      q_min: [B] tree-wide minimum so far (``+inf`` before any update).
      q_max: [B] tree-wide maximum so far (``-inf`` before any update).

    Returns:
      ``lo`` [B], ``rg`` [B]: ``(min, max - min)`` where ``max > min``, else ``(0, 1)`` (identity).
    """
    valid = q_max > q_min
    lo = np.where(valid, q_min, 0.0)
    return lo, np.where(valid, q_max - lo, 1.0)


def pick(score: np.ndarray, ties: str) -> np.ndarray:
    """``[B, K] -> [B]`` the index of each row's maximum: among equal maxima the lowest index
    (``ties="lowest"``, ``np.argmax``) or the highest (``"highest"``, the pseudocode's ``max`` over
    ``(score, action, child)`` tuples). A NaN counts as the maximum (the first NaN, or the last)."""
    if ties == "lowest":
        return score.argmax(axis=1)
    return score.shape[1] - 1 - score[:, ::-1].argmax(axis=1)


def softmax(logits: np.ndarray) -> np.ndarray:
    """[B, A] -> [B, A] float64 probabilities (max-shifted for stability)."""
    logits = np.asarray(logits, np.float64)
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def search_trees(
    root_hidden: np.ndarray,
    root_prior: np.ndarray,
    recurrent_fn: RecurrentFn,
    *,
    num_simulations: int,
    discount: float,
    pb_c_base: float,
    pb_c_init: float,
    q_form: QForm,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs the simulations on validated inputs.

    Args:
      root_hidden: [B, H] root hidden states.
      root_prior: [B, A] float64 root priors (noise already mixed in).
      recurrent_fn: the batched model, called once per simulation.
      num_simulations: >= 1.
      discount: in [0, 1].
      pb_c_base: c2, > 0.
      pb_c_init: c1, >= 0.
      q_form: the value form (what MinMaxStats sees, value scores, ties).

    Returns:
      visit_counts [B, A] int64, root_value [B] float64, q_values [B, A] float64 (0 unvisited).

    Raises:
      ConfigError: ``recurrent_fn`` returned arrays of the wrong shapes.
    """
    batch, width = root_hidden.shape
    num_actions = root_prior.shape[1]
    n_nodes = num_simulations + 1
    n_real = batch * n_nodes
    scratch = n_real + batch
    total = scratch + 1
    rows = np.arange(batch)
    roots = rows * n_nodes  # [B]
    nulls = n_real + rows  # [B]

    # Node arrays, [T] or [T, A] with T = B * N + B + 1 (real nodes, per-tree nulls, scratch).
    children = np.concatenate([np.repeat(nulls, n_nodes), nulls, [scratch]])  # null: absorbing
    children = np.repeat(children[:, None], num_actions, axis=1)  # [T, A] child ids
    prior = np.zeros((total, num_actions))  # [T, A] priors of each node's children
    explore_prior = np.zeros((total, num_actions))  # [T, A] exploration_weight(N) * prior
    visits = np.zeros(total, dtype=np.intp)  # [T]
    value_sum = np.zeros(total)  # [T]
    reward = np.zeros(total)  # [T] reward of the transition into the node (root, nulls: 0)
    q_node = np.zeros(total)  # [T] what MinMaxStats sees: q_form.node_q
    inv_visits = np.ones(total)  # [T] 1 / (visits + 1)
    hidden = np.empty((n_real, width), dtype=root_hidden.dtype)  # [B*N, H]
    value_sum[scratch] = np.nan

    counts = np.arange(num_simulations + 2)
    explore_table = exploration_weight(counts, pb_c_base, pb_c_init)[:, None]  # [S + 2, 1]
    inv_table = 1.0 / (counts + 1.0)
    hidden[roots] = root_hidden
    prior[roots] = root_prior
    # Simulation 0: the root has 0 visits and every score is 0: the form says whether its prior
    # ranks the children ("prior") or the all-zero scores do, the tie rule choosing ("score").
    fresh = root_prior if q_form.fresh == "prior" else np.zeros_like(root_prior)
    first_action = pick(fresh, q_form.ties)

    q_min = np.full(batch, np.inf)
    q_max = np.full(batch, -np.inf)
    lo2, rg2 = np.zeros((batch, 1)), np.ones((batch, 1))
    shapes = ((batch, width), (batch,), (batch,), (batch, num_actions))
    for sim in range(num_simulations):
        if sim == 0:
            path, actions = [roots, nulls], [first_action]
        else:
            # Selection, all trees a level at a time. A tree whose choice has no child yet steps
            # into its null node, whose every action leads back into itself.
            node = roots
            path, actions = [roots], []
            while True:
                child = children.take(node, axis=0)  # [B, A]
                score = explore_prior.take(node, axis=0) * inv_visits[child]
                normalized = q_node[child]  # a fresh [B, A] array: update it in place
                normalized -= lo2
                normalized /= rg2
                value_score = q_form.value_score(normalized, reward[child], discount)
                score += np.where(child < n_real, value_score, 0.0)  # unvisited: 0
                action = pick(score, q_form.ties)
                node = child[rows, action]
                path.append(node)
                actions.append(action)
                if node.min() >= n_real:
                    break
        path_ids = np.stack(path)  # [D + 1, B]: root .. parent of leaf, then nulls
        real = path_ids < n_real
        leaf_depth = real.sum(axis=0)  # [B], >= 1
        parent = path_ids[leaf_depth - 1, rows]
        action = np.stack(actions)[leaf_depth - 1, rows] if len(actions) > 1 else actions[0]

        step = leaf_depth.astype(np.int32)  # the parent's depth + 1
        outputs = tuple(
            np.asarray(x) for x in recurrent_fn(hidden[parent], action.astype(np.int32), step)
        )
        for name, arr, shape in zip(_OUTPUT_NAMES, outputs, shapes, strict=True):
            if arr.shape != shape:
                raise ConfigError(
                    f"recurrent_fn's {name} has shape {arr.shape}; expected {shape} "
                    "(one row per tree)"
                )
        next_hidden, leaf_reward, leaf_value, leaf_logits = outputs
        leaf = roots + (sim + 1)
        children[parent, action] = leaf
        hidden[leaf] = next_hidden
        reward[leaf] = leaf_reward
        prior[leaf] = softmax(leaf_logits)

        # Backup (pseudocode backpropagate) of every tree's path at once: column b of
        # `path_ids` becomes tree b's root .. leaf, then scratch.
        path_ids = np.where(real, path_ids, scratch)
        path_ids[leaf_depth, rows] = leaf
        path_reward = reward[path_ids]  # [D + 1, B]; scratch rows 0
        # The pseudocode's `value = node.reward + discount * value`, leaf to root: with each
        # tree's leaf value put one row below its leaf and zeros further down, the recursion
        # from the bottom row yields exactly v at the leaf and the discounted returns above it.
        tail = np.zeros((len(path) + 1, batch))  # [D + 2, B]
        tail[:-1] = path_reward
        tail[leaf_depth + 1, rows] = leaf_value
        returns = np.empty_like(path_reward)  # [D + 1, B] what each path node gets added
        ret = returns[-1] = tail[-1]
        for k in range(len(path) - 2, -1, -1):
            ret = tail[k + 1] + discount * ret
            returns[k] = ret
        new_sum = value_sum[path_ids] + returns
        value_sum[path_ids] = new_sum
        new_visits = visits[path_ids] + 1
        visits[path_ids] = new_visits
        value = new_sum / new_visits  # node.value(); scratch: NaN
        q = q_form.node_q(path_reward, value, discount)
        q_node[path_ids] = q
        flat_ids = path_ids.ravel()
        explore_prior[flat_ids] = explore_table[new_visits.ravel()] * prior.take(flat_ids, axis=0)
        inv_visits[path_ids] = inv_table[new_visits]
        q_min = np.fmin(q_min, np.fmin.reduce(q, axis=0))
        q_max = np.fmax(q_max, np.fmax.reduce(q, axis=0))
        lo, rg = min_max_params(q_min, q_max)
        lo2, rg2 = lo[:, None], rg[:, None]

    root_children = children[roots]  # [B, A]
    child_visits = visits[root_children]
    child_value = value_sum[root_children] / np.maximum(child_visits, 1)
    q_values = np.where(child_visits > 0, reward[root_children] + discount * child_value, 0.0)
    return child_visits.astype(np.int64), value_sum[roots] / visits[roots], q_values
