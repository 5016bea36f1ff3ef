"""The report: a results folder -> seed statistics, tests, tables and figures.

``results`` loads a folder into DataFrames, ``stats`` holds the seed statistics and intervals,
``significance`` the tests and the Holm correction, ``tables`` builds the numeric table,
``render`` writes it out, ``plots`` draws the figures (import it explicitly: it loads matplotlib).
"""

from experiments.report.render import FORMATS, render
from experiments.report.results import AVERAGED, Results, load_curves, load_results
from experiments.report.significance import fisher_p, holm, mann_whitney_p
from experiments.report.stats import (
    binomial_ci,
    bootstrap_ci,
    probability_of_improvement,
    statistic,
)
from experiments.report.tables import DEFAULT_METRICS, METRICS, summarize

__all__ = [
    "AVERAGED",
    "DEFAULT_METRICS",
    "FORMATS",
    "METRICS",
    "Results",
    "binomial_ci",
    "bootstrap_ci",
    "fisher_p",
    "holm",
    "load_curves",
    "load_results",
    "mann_whitney_p",
    "probability_of_improvement",
    "render",
    "statistic",
    "summarize",
]
