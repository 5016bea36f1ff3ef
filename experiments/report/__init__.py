"""The report: a results folder -> seed statistics, tables and figures.

``results`` loads a folder into DataFrames, ``stats`` holds the seed statistics, ``tables`` builds
and renders the tables, ``plots`` draws the figures (import it explicitly: it loads matplotlib).
"""

from experiments.report.results import FINISHED, STATUSES, Results, load_curves, load_results
from experiments.report.stats import bootstrap_ci, probability_of_improvement, statistic
from experiments.report.tables import DEFAULT_METRICS, FORMATS, METRICS, render, summarize

__all__ = [
    "DEFAULT_METRICS",
    "FINISHED",
    "FORMATS",
    "METRICS",
    "STATUSES",
    "Results",
    "bootstrap_ci",
    "load_curves",
    "load_results",
    "probability_of_improvement",
    "render",
    "statistic",
    "summarize",
]
