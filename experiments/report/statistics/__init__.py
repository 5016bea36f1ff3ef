"""The tests and intervals of the report, over arrays and counts (no folder, no table): estimates,
intervals and the one percentile bootstrap (``intervals``), the tests and Holm (``significance``),
a contrast and its family (``contrasts``), competing risks (``competing``), equivalence
(``equivalence``), pooled over strata (``pooled_rates``: Cochran-Mantel-Haenszel;
``pooled_ranks``: van Elteren).

The face (``__all__``) is what the packages above the report use.
"""

from experiments.report.statistics.contrasts import ANALYSES, RATE_TESTS, check_choice
from experiments.report.statistics.equivalence import (
    Margin,
    parse_margins,
    parse_pool_margin,
    score_pvalues,
)

__all__ = [
    "ANALYSES",
    "Margin",
    "RATE_TESTS",
    "check_choice",
    "parse_margins",
    "parse_pool_margin",
    "score_pvalues",
]
