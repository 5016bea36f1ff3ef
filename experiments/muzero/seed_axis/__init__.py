"""The seed axis: S runs of one configuration, differing only in their seed, trained and searched
as one computation with S sets of weights (issue 41; docs/performance.md)."""

from experiments.muzero.seed_axis.acting import GroupSelfPlay, evaluate_group, group_act
from experiments.muzero.seed_axis.learner import GroupLearner
from experiments.muzero.seed_axis.networks import (
    SEED_AXIS_NORMALISATIONS,
    StackedNetworks,
    StackedPart,
)

__all__ = [
    "GroupLearner",
    "GroupSelfPlay",
    "SEED_AXIS_NORMALISATIONS",
    "StackedNetworks",
    "StackedPart",
    "evaluate_group",
    "group_act",
]
