"""The registry of placements: where a variant's hidden-state transform goes in the unroll.

Three places the hidden-state handling is put in practice, each a pair of pure functions, as
:data:`PLACEMENTS`: the published pseudocode's (after each recurrent step), the paper's Appendix G
text (at the start of every dynamics call) and the PyTorch ports' (a hook on the dynamics
output). Importable without TensorFlow: the ``pseudocode`` placement imports it only when the
search gives it a tensor of steps. Adding one is one :class:`Placement` entry plus one test.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from experiments.base.registry import Registry
from experiments.gradients.seams import HiddenFn

__all__ = ["PLACEMENTS", "Placement", "PlacementFn", "get_placement"]

PlacementFn = Callable[[Any, HiddenFn, Any], Any]
"""``(h [B, H], transform, step) -> h [B, H]``; ``step``: 1-based index of the dynamics call, a
Python int (the training unroll: the same for every row) or an int tensor ``[B]`` (the search:
each row's leaf is at its own depth, ``step = depth of the parent + 1``)."""


def _untouched(h: Any, transform: HiddenFn, step: Any) -> Any:
    del transform, step
    return h


def _pseudocode_input(h: Any, transform: HiddenFn, step: Any) -> Any:
    # The pseudocode scales `hidden_state` after recurrent_inference returns it, so the first
    # dynamics call sees the representation's output untouched and every later one sees T(h).
    if isinstance(step, int):
        return h if step == 1 else transform(h)
    import tensorflow as tf

    first = tf.reshape(tf.equal(step, 1), [-1, 1])  # [B, 1]
    return tf.where(first, h, transform(h))


def _always(h: Any, transform: HiddenFn, step: Any) -> Any:
    del step
    return transform(h)


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where the hidden-state transform goes in the K-step unroll (and in the search's model).

    One function applies it for the learner, the search and self-play alike,
    ``experiments.muzero.networks.recurrent_step``; unrolling ``h_k, r_k = dynamics(h_in, a_k)``
    for ``k = 1..K`` it calls::

        h_in = placement.dynamics_input(h_prev, variant.hidden, k)
        h_k, r_k = dynamics(h_in, a_k)
        h_k = placement.dynamics_output(h_k, variant.hidden, k)   # what step k's heads see
        h_prev = h_k

    Attributes:
      name: registry name.
      summary: one line.
      dynamics_input: applied to the state fed into dynamics call ``k``.
      dynamics_output: applied to the output of dynamics call ``k``.
    """

    name: str
    summary: str
    dynamics_input: PlacementFn
    dynamics_output: PlacementFn


PLACEMENTS: Registry[Placement] = Registry(
    "placement",
    [
        Placement(
            "pseudocode",
            "after each recurrent step, on the state fed to the next dynamics call "
            "(step k's own heads see the untouched state)",
            _pseudocode_input,
            _untouched,
        ),
        Placement(
            "paper",
            "at the start of every dynamics call, the first one included (Appendix G's text)",
            _always,
            _untouched,
        ),
        Placement(
            "hook",
            "on the dynamics output itself, so all gradient into h_k is scaled "
            "(register_hook in the PyTorch ports)",
            _untouched,
            _always,
        ),
    ],
)
"""Registry of placements by name."""


def get_placement(name: str) -> Placement:
    """Looks up a placement by name; raises :class:`ConfigError` naming the valid choices."""
    return PLACEMENTS.lookup(name)
