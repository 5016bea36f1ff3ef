"""What one run's metric rows say: why it stopped (stopping), its stability figures (stability),
its outcome class and endpoints (outcome). Pure Python and NumPy.

The face (``__all__``) is what the packages above use.
"""

from experiments.verdicts.outcome import (
    CLASSES,
    ENDPOINT_CLASSES,
    endpoint_value,
    learned_step,
    run_outcome,
)
from experiments.verdicts.stability import COLLAPSE_FRACTION, STABILITY_KEYS, stability_summary
from experiments.verdicts.stopping import Budget, DivergenceCheck, DivergenceRule

__all__ = [
    "Budget",
    "CLASSES",
    "COLLAPSE_FRACTION",
    "DivergenceCheck",
    "DivergenceRule",
    "ENDPOINT_CLASSES",
    "STABILITY_KEYS",
    "endpoint_value",
    "learned_step",
    "run_outcome",
    "stability_summary",
]
