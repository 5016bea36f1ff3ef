"""A results folder read: one row per run (``results``), every run counted once (``counting``),
each run's outcome endpoints (``endpoints``).

The face (``__all__``) is what the packages above the report use.
"""

from experiments.report.runs.declared import ENDPOINTS_VERSION, Declared
from experiments.report.runs.endpoints import declared_threshold, first_reach
from experiments.report.runs.normalised import add_normalised
from experiments.report.runs.results import (
    diverged_return,
    intention_to_treat,
    load_results,
    registered_task,
)

__all__ = [
    "Declared",
    "ENDPOINTS_VERSION",
    "add_normalised",
    "declared_threshold",
    "diverged_return",
    "first_reach",
    "intention_to_treat",
    "load_results",
    "registered_task",
]
