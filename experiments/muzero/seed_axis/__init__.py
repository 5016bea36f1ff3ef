"""The seed axis: S runs of one configuration, differing only in their seed, trained and searched
as one computation with S sets of weights (issue 41; docs/performance.md)."""

from experiments.muzero.seed_axis.learner import GroupLearner
from experiments.muzero.seed_axis.networks import (
    SEED_AXIS_NORMALISATIONS,
    StackedNetworks,
    StackedPart,
)

__all__ = ["GroupLearner", "SEED_AXIS_NORMALISATIONS", "StackedNetworks", "StackedPart"]
