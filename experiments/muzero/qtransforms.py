"""The search's value forms (``muzero.q_form``) as functions: one registry entry each.

As google-deepmind/mctx passes its search a ``qtransform`` (``mctx/_src/qtransforms.py``), our two
searches, :func:`experiments.muzero.reference_search.run_search` (NumPy, the readable reference)
and :class:`experiments.muzero.search_tf.CompiledSearch` (one TensorFlow graph, what runs use),
take a :class:`QForm` and read everything form-specific from it; neither tests a form's name.
A form is four things:

* ``node_q(reward, value, discount)``: the quantity a node feeds ``MinMaxStats.update`` in the
  backup, from its reward (of the transition into it), ``value = node.value()`` (mean backed-up
  return) and the discount;
* ``value_score(normalized, reward, discount)``: the value score of a VISITED child in the pUCT
  score, from ``normalized = MinMaxStats.normalize(node_q of the child)`` and the child's reward
  (an unvisited child scores 0 in every form);
* ``ties``: which action wins among equal pUCT scores, ``"lowest"`` or ``"highest"`` index;
* ``fresh``: how a node with 0 visits chooses (only the root at the first simulation has none:
  every prior score is ``sqrt(0) * ... = 0`` there): ``"score"`` keeps those all-zero scores, so
  ``ties`` decides; ``"prior"`` ranks by prior instead (``ties`` among equal priors).

``node_q`` and ``value_score`` use only ``+`` and ``*`` on their arguments, so one function
serves NumPy arrays and TensorFlow tensors alike, and both searches compute each form with the
same operations. Adding a form is one entry in :data:`Q_FORMS` and one test
(``tests/muzero/test_qtransforms.py``); a :class:`QForm` not in the registry can also be passed to
either
search directly.

The two forms (docs/faithfulness.md):

* ``pseudocode``: Schrittwieser et al. (2020), arXiv:1911.08265, ancillary ``pseudocode.py`` as
  revised in 2020: ``ucb_score`` has ``value_score = child.reward + config.discount *
  min_max_stats.normalize(child.value())``, ``backpropagate`` feeds ``min_max_stats.update(
  node.value())``, and ``select_child`` is ``max((ucb_score(...), action, child) for action, child
  in node.children.items())``: among equal scores the tuples compare by action (``Action.__gt__``
  compares indices), so the HIGHEST index wins, and a fresh root (all scores 0) expands its last
  action whatever the priors.
* ``normalized``: werner-duvaud/muzero-general ``self_play.py`` (one player), also EfficientZero:
  ``value_score = normalize(child.reward + discount * child.value())``, ``update(node.reward +
  discount * node.value())``. Ties go to the lowest index (``np.argmax``), a fresh root expands its
  most probable action (lowest index among equal priors). muzero-general breaks ties at random;
  gradlab's rule is its own, kept as it was so that runs stay bit for bit what they were.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from experiments.base.registry import Registry

__all__ = ["FRESH", "Q_FORMS", "TIES", "QForm", "resolve"]

TIES = ("lowest", "highest")
"""Which action index wins among equal pUCT scores."""

FRESH = ("prior", "score")
"""How a node with 0 visits (all prior scores 0) chooses: by prior, or by its (all-zero) score."""

Combine = Callable[[Any, Any, float], Any]
"""``(x, reward, discount) -> y`` elementwise on NumPy arrays or TensorFlow tensors alike."""


@dataclasses.dataclass(frozen=True)
class QForm:
    """One form of the search's value score, read by both searches.

    Attributes:
      name: registry name (``muzero.q_form=<name>``).
      summary: one line, with its source.
      node_q: ``(reward, value, discount) -> q``, elementwise: what a node feeds MinMaxStats.
      value_score: ``(normalized, reward, discount) -> score``, elementwise: a visited child's value
        score from its normalised ``node_q`` and its reward.
      ties: one of :data:`TIES`.
      fresh: one of :data:`FRESH`.
    """

    name: str
    summary: str
    node_q: Combine
    value_score: Combine
    ties: str
    fresh: str

    def __post_init__(self) -> None:
        if self.ties not in TIES:
            raise ValueError(f"q form {self.name!r}: ties {self.ties!r} is not one of {TIES}")
        if self.fresh not in FRESH:
            raise ValueError(f"q form {self.name!r}: fresh {self.fresh!r} is not one of {FRESH}")


def _node_value(reward: Any, value: Any, discount: float) -> Any:
    """``node.value()``: the pseudocode's ``min_max_stats.update(node.value())``."""
    del reward, discount
    return value


def _discounted_return(reward: Any, value: Any, discount: float) -> Any:
    """``node.reward + discount * node.value()`` (muzero-general's update)."""
    return reward + discount * value


def _reward_plus_normalized(normalized: Any, reward: Any, discount: float) -> Any:
    """``child.reward + discount * normalize(child.value())`` (the pseudocode's ucb_score)."""
    return reward + discount * normalized


def _normalized(normalized: Any, reward: Any, discount: float) -> Any:
    """``normalize(child.reward + discount * child.value())`` (muzero-general's ucb_score)."""
    del reward, discount
    return normalized


Q_FORMS: Registry[QForm] = Registry(
    "q_form",
    [
        QForm("pseudocode", "reward + discount * normalize(value), MinMaxStats fed node values, "
              "ties to the highest action (the published pseudocode: ucb_score, backpropagate, "
              "select_child)", _node_value, _reward_plus_normalized, ties="highest",
              fresh="score"),
        QForm("normalized", "normalize(reward + discount * value), MinMaxStats fed those, ties "
              "to the lowest action (muzero-general, EfficientZero)", _discounted_return,
              _normalized, ties="lowest", fresh="prior"),
    ],
)  # fmt: skip
"""The search's value forms by name."""


def resolve(q_form: str | QForm) -> QForm:
    """The form itself, or the registry entry called ``q_form``.

    Raises:
      ConfigError: an unknown name (one line naming it and every choice).
    """
    if isinstance(q_form, QForm):
        return q_form
    return Q_FORMS.lookup(q_form)
