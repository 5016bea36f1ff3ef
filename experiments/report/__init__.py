"""The report: a results folder -> seed statistics, contrasts, tables and figures.

``results`` loads a folder into DataFrames (with the ``failed`` endpoint and the
intention-to-treat returns), ``stats`` holds the seed statistics, intervals and effect sizes,
``significance`` the tests and the Holm correction, ``competing`` reaching the threshold with
divergence as a competing risk (Aalen-Johansen cumulative incidence, Gray's test), ``contrasts``
the declared family of contrasts, ``tables`` builds the numeric table, ``caption`` says what it
holds, ``render`` writes it out, ``plots`` draws the figures (import it explicitly: it loads
matplotlib).
"""

from experiments.report.competing import (
    GrayTest,
    Incidence,
    competing_times,
    cumulative_incidence,
    gray_test,
)
from experiments.report.contrasts import ANALYSES, RATE_TESTS, Confirmatory
from experiments.report.render import FORMATS, render
from experiments.report.results import (
    AVERAGED,
    Results,
    diverged_return,
    intention_to_treat,
    load_curves,
    load_results,
)
from experiments.report.significance import (
    barnard_p,
    fisher_p,
    holm,
    mann_whitney_p,
    mcnemar_p,
    wilcoxon_p,
)
from experiments.report.stats import (
    binomial_ci,
    bootstrap_ci,
    difference_ci,
    risk_difference_ci,
    statistic,
)
from experiments.report.tables import ALPHA, DEFAULT_METRICS, METRICS, summarize

__all__ = [
    "ALPHA",
    "ANALYSES",
    "AVERAGED",
    "DEFAULT_METRICS",
    "FORMATS",
    "METRICS",
    "RATE_TESTS",
    "Confirmatory",
    "GrayTest",
    "Incidence",
    "Results",
    "barnard_p",
    "binomial_ci",
    "bootstrap_ci",
    "competing_times",
    "cumulative_incidence",
    "difference_ci",
    "diverged_return",
    "fisher_p",
    "gray_test",
    "holm",
    "intention_to_treat",
    "load_curves",
    "load_results",
    "mann_whitney_p",
    "mcnemar_p",
    "render",
    "risk_difference_ci",
    "statistic",
    "summarize",
    "wilcoxon_p",
]
