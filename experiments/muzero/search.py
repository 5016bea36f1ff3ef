"""Kept for old imports only: the NumPy search is :mod:`experiments.muzero.reference_search`.

Runs search with :class:`experiments.muzero.search_tf.CompiledSearch`; the NumPy search is the
readable reference it is checked against (tests, ``gradlab bench``). This module re-exports the
names :mod:`experiments.muzero.selfplay` still imports from here; new code imports
:mod:`~experiments.muzero.reference_search` (the search) or :mod:`~experiments.muzero._acting`
(the action draw and the temperature schedule).
"""

from __future__ import annotations

from experiments.muzero._acting import select_action, visit_softmax_temperature
from experiments.muzero.reference_search import run_search

__all__ = ["run_search", "select_action", "visit_softmax_temperature"]
