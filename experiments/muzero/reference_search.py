"""The reference MuZero search: B trees in flat NumPy arrays, one model call per simulation.

Runs do not use it: they search with :class:`experiments.muzero.search_tf.CompiledSearch`, one
compiled TensorFlow graph per move. This module is the readable statement of the same algorithm
that the compiled search is checked against, visit for visit (``tests/muzero/test_search_tf.py``),
and
that is itself checked against the published pseudocode run unchanged (``tests/_pseudocode.py``,
``tests/muzero/test_search.py``); ``gradlab bench`` times it beside the compiled search.

The algorithm is the pseudocode of Schrittwieser et al. (2020), "Mastering Atari, Go, chess and
shogi by planning with a learned model", Appendix "Pseudocode" (``run_mcts``, ``select_child``,
``ucb_score``, ``expand_node``, ``backpropagate``, ``add_exploration_noise``, ``MinMaxStats``),
run for B independent roots at once, the layout taken from google-deepmind/mctx: every per-node
quantity of every tree is one array, node ``n`` of tree ``b`` is row ``b * N + n`` with
``N = num_simulations + 1`` (node 0 is the root, node ``s + 1`` the leaf added by simulation
``s``). Per simulation: selection descends all B trees at once (a Python loop over depth, never
over B), then ONE call ``recurrent_fn(hidden [B, H], action [B], step [B])`` for all B leaves,
then vectorised expansion and backup.

The value score is a :class:`~experiments.muzero.qtransforms.QForm` (keyword ``q_form``, a form or
its name in :data:`~experiments.muzero.qtransforms.Q_FORMS`): what a node feeds MinMaxStats, a
visited child's value score, the tie rule and how a node with 0 visits chooses. The two registered
forms, each exactly as its source writes it, are described in :mod:`~experiments.muzero.qtransforms`
and docs/faithfulness.md: ``"pseudocode"`` (default here; the published pseudocode, ties to the
highest action index as its ``max`` over ``(score, action, child)`` tuples) and ``"normalized"``
(muzero-general, EfficientZero; ties to the lowest index, a fresh root by prior; what runs use by
default). The forms are not interchangeable: at 25 simulations on the random models of
``tests/muzero/test_search.py`` they give different root visit counts for most trees.

The backup of values and visits is the same in every form; so are ``SearchOutput.q_values``
(``reward + discount * child.value()``, unnormalised) and ``root_value``.

Choices where the sources leave room (or where we deviate), all deliberate:

* Unvisited child: value score 0 (both sources). In the ``normalized`` form that is the bottom of
  the normalised [0, 1] range once the tree has a spread of values. Its prior score uses
  ``N_child = 0``.
* ``MinMaxStats``: tree-wide, no known bounds, updated with the form's ``node_q`` for every node
  on the backed-up path (the root included, whose reward is 0); ``normalize`` returns the value
  unchanged until ``max > min`` (both sources).
* The root's own network value is NOT backed up (pseudocode ``expand_node`` / ``run_mcts``): the
  root starts with 0 visits, so after ``num_simulations`` simulations it has exactly that many, and
  ``SearchOutput.root_value`` is the mean of the backed-up returns only. ``root_value`` is accepted
  (and shape-checked) so callers hold one calling convention, but it does not enter the search.
* Dirichlet noise: ``rng.dirichlet([alpha] * A, size=B)``, row ``b`` for tree ``b``, drawn once
  before the first simulation and only when ``dirichlet_fraction > 0`` (so evaluation consumes no
  randomness). NumPy draws the rows in order, so B trees searched one at a time with one shared
  generator get the same noise as one batched search: batched == B independent searches, exactly.
* Numerics: tree statistics are float64; hidden states keep the dtype of ``root_hidden``. The
  pUCT score is evaluated in a rearranged but equivalent order (see ``_reference_tree.py``):
  equal to the pseudocode's up to float rounding; the backed-up returns follow its recursion
  exactly. Non-finite network outputs are not checked (a diverging run must not crash here; the
  learner's ``nonfinite`` flag reports it).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from experiments.base.errors import ConfigError
from experiments.muzero._acting import select_action, visit_softmax_temperature
from experiments.muzero._checks import check_count, check_positive, check_unit
from experiments.muzero._puct import exploration_weight
from experiments.muzero._reference_tree import RecurrentFn, min_max_params, search_trees, softmax
from experiments.muzero.qtransforms import Q_FORMS, QForm, resolve

__all__ = [
    "Q_FORMS",
    "QForm",
    "RecurrentFn",
    "SearchOutput",
    "min_max_normalize",
    "puct_scores",
    "root_priors",
    "run_search",
    "select_action",
    "visit_softmax_temperature",
]


@dataclasses.dataclass(frozen=True)
class SearchOutput:
    """What one batched search returns."""

    visit_counts: np.ndarray  # [B, A] int64, visits of the root's children
    root_value: np.ndarray  # [B] float64, the root's mean backed-up value (node.value())
    q_values: np.ndarray  # [B, A] float64, reward + discount * child.value(); 0 if unvisited
    # (unnormalised, whichever q form searched)


def min_max_normalize(q: np.ndarray, q_min: np.ndarray, q_max: np.ndarray) -> np.ndarray:
    """The pseudocode's ``MinMaxStats.normalize`` for B trees.

    Args:
      q: [B, A] values to normalise.
      q_min: [B] each tree's minimum so far.
      q_max: [B] each tree's maximum so far.

    Returns:
      [B, A] ``(q - min) / (max - min)`` for trees with ``max > min``; ``q`` unchanged otherwise.
    """
    lo, rg = min_max_params(np.asarray(q_min, np.float64), np.asarray(q_max, np.float64))
    return (np.asarray(q, np.float64) - lo[:, None]) / rg[:, None]


def puct_scores(
    parent_visits: np.ndarray,
    child_visits: np.ndarray,
    child_reward: np.ndarray,
    child_value: np.ndarray,
    prior: np.ndarray,
    q_min: np.ndarray,
    q_max: np.ndarray,
    *,
    discount: float,
    q_form: str | QForm = "pseudocode",
    pb_c_base: float = 19652.0,
    pb_c_init: float = 1.25,
) -> np.ndarray:
    """The ``ucb_score`` of every child of B nodes, in either q form.

    ``score = prior * sqrt(N_parent) / (N_child + 1) * (log((N_parent + pb_c_base + 1) /
    pb_c_base) + pb_c_init) + value_score``, ``value_score`` 0 where ``N_child == 0``, else the
    form's ``value_score(normalize(node_q(reward, value)), reward)``: ``reward + discount *
    normalize(value)`` (``pseudocode``) or ``normalize(reward + discount * value)``
    (``normalized``); see :mod:`~experiments.muzero.qtransforms`.

    Args:
      parent_visits: [B] visit count of each node.
      child_visits: [B, A] visit counts of its children.
      child_reward: [B, A] reward of the transition into each child.
      child_value: [B, A] ``child.value()``, the mean backed-up value (ignored where unvisited).
      prior: [B, A] the children's priors.
      q_min: [B] tree-wide minimum of what MinMaxStats saw.
      q_max: [B] tree-wide maximum.
      discount: gamma.
      q_form: a :class:`QForm` or its name in :data:`Q_FORMS`.
      pb_c_base: c2 of the paper.
      pb_c_init: c1 of the paper.

    Returns:
      [B, A] float64 scores; the search picks the argmax.

    Raises:
      ConfigError: an unknown ``q_form``.
    """
    form = resolve(q_form)
    child_visits = np.asarray(child_visits, np.float64)
    explore = exploration_weight(parent_visits, float(pb_c_base), float(pb_c_init))  # [B]
    prior_score = (explore[:, None] * np.asarray(prior, np.float64)) / (child_visits + 1.0)
    reward = np.asarray(child_reward, np.float64)
    value = np.asarray(child_value, np.float64)
    normalized = min_max_normalize(form.node_q(reward, value, discount), q_min, q_max)
    value_score = form.value_score(normalized, reward, discount)
    return prior_score + np.where(child_visits > 0, value_score, 0.0)


def root_priors(
    root_logits: np.ndarray,
    *,
    rng: np.random.Generator,
    dirichlet_alpha: float = 0.25,
    dirichlet_fraction: float = 0.25,
) -> np.ndarray:
    """Root priors: softmax of the logits mixed with Dirichlet noise (``add_exploration_noise``).

    ``prior = softmax(logits) * (1 - fraction) + Dirichlet([alpha] * A) * fraction``, one noise
    row per tree, drawn as ``rng.dirichlet(..., size=B)`` only when ``fraction > 0``.

    Args:
      root_logits: [B, A] policy logits at the roots.
      rng: the source of the noise (untouched when ``dirichlet_fraction == 0``).
      dirichlet_alpha: concentration, > 0.
      dirichlet_fraction: weight of the noise, in [0, 1].

    Returns:
      [B, A] float64 priors, each row summing to 1.
    """
    fraction = check_unit("dirichlet_fraction", dirichlet_fraction)
    alpha = check_positive("dirichlet_alpha", dirichlet_alpha)
    prior = softmax(np.asarray(root_logits))
    if fraction > 0.0:
        noise = rng.dirichlet(np.full(prior.shape[1], alpha), size=prior.shape[0])  # [B, A]
        prior = prior * (1.0 - fraction) + noise * fraction
    return prior


def _check_shape(name: str, array: np.ndarray, expected: tuple[int, ...], meaning: str) -> None:
    if array.shape != expected:
        raise ConfigError(f"{name} has shape {array.shape}; expected {expected} ({meaning})")


def _validate(
    root_hidden: np.ndarray,
    root_value: np.ndarray,
    root_logits: np.ndarray,
    num_simulations: int,
    rng: np.random.Generator,
) -> None:
    check_count("num_simulations", num_simulations)
    if not isinstance(rng, np.random.Generator):
        raise ConfigError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if root_hidden.ndim != 2 or root_hidden.shape[0] < 1:
        raise ConfigError(f"root_hidden has shape {root_hidden.shape}; expected [B, H] with B >= 1")
    if root_logits.ndim != 2 or root_logits.shape[1] < 1:
        raise ConfigError(f"root_logits has shape {root_logits.shape}; expected [B, A] with A >= 1")
    batch = root_hidden.shape[0]
    _check_shape("root_logits", root_logits, (batch, root_logits.shape[1]), "[B, A], B from hidden")
    _check_shape("root_value", root_value, (batch,), "[B]")


def run_search(
    root_hidden: np.ndarray,
    root_value: np.ndarray,
    root_logits: np.ndarray,
    recurrent_fn: RecurrentFn,
    *,
    num_simulations: int,
    discount: float,
    rng: np.random.Generator,
    dirichlet_alpha: float = 0.25,
    dirichlet_fraction: float = 0.25,
    pb_c_base: float = 19652.0,
    pb_c_init: float = 1.25,
    q_form: str | QForm = "pseudocode",
) -> SearchOutput:
    """Runs ``num_simulations`` MuZero simulations on B roots at once.

    Args:
      root_hidden: [B, H] hidden states from ``initial_inference``.
      root_value: [B] the network's value of each root; not backed up (see the module docstring).
      root_logits: [B, A] the network's policy logits at each root; priors = softmax.
      recurrent_fn: the batched ``recurrent_inference``; called once per simulation with all B
        leaves' parents' hidden states, actions and steps (the parent's depth + 1).
      num_simulations: simulations per tree, >= 1.
      discount: in [0, 1]; rewards and values are discounted on the way up (one player).
      rng: the only source of randomness (the Dirichlet noise).
      dirichlet_alpha: concentration of the root noise, > 0.
      dirichlet_fraction: weight of the noise in the root priors, in [0, 1]; 0 = no noise (eval).
      pb_c_base: c2 of the pUCT formula, > 0.
      pb_c_init: c1 of the pUCT formula, >= 0.
      q_form: the value score, a :class:`QForm` or its name in :data:`Q_FORMS`: ``"pseudocode"``
        (the published pseudocode) or ``"normalized"`` (muzero-general, EfficientZero); see
        :mod:`~experiments.muzero.qtransforms`.

    Returns:
      The root children's visit counts and Q values and the root's mean value, per tree.

    Raises:
      ConfigError: a bad hyper-parameter, or arrays (inputs or ``recurrent_fn`` outputs) of
        inconsistent shapes.
    """
    root_hidden = np.asarray(root_hidden)
    root_value = np.asarray(root_value)
    root_logits = np.asarray(root_logits)
    _validate(root_hidden, root_value, root_logits, num_simulations, rng)
    gamma = check_unit("discount", discount)
    fraction = check_unit("dirichlet_fraction", dirichlet_fraction)
    alpha = check_positive("dirichlet_alpha", dirichlet_alpha)
    base = check_positive("pb_c_base", pb_c_base)
    init = check_positive("pb_c_init", pb_c_init, allow_zero=True)
    form = resolve(q_form)

    root_prior = root_priors(
        root_logits, rng=rng, dirichlet_alpha=alpha, dirichlet_fraction=fraction
    )
    visit_counts, mean_value, q_values = search_trees(
        root_hidden,
        root_prior,
        recurrent_fn,
        num_simulations=int(num_simulations),
        discount=gamma,
        pb_c_base=base,
        pb_c_init=init,
        q_form=form,
    )
    return SearchOutput(visit_counts=visit_counts, root_value=mean_value, q_values=q_values)
