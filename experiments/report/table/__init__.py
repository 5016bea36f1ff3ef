"""``gradlab table``: the runs of one folder -> one typed ``Table`` (``summarize``), its metrics
(``metrics``), its caption (``caption``) and its text: Markdown, LaTeX, CSV, JSON (``render``,
``markup``).

The face (``__all__``) is what the packages above the report use.
:func:`~experiments.report.table.summarize.summarize` and
:func:`~experiments.report.table.render.render`, named as their modules, are imported from them.
"""

from experiments.report.table.latex import LAYOUTS, METHODS
from experiments.report.table.metrics import DEFAULT_METRICS, METRICS
from experiments.report.table.to_wandb import log_table, wandb_mode

__all__ = [
    "DEFAULT_METRICS",
    "LAYOUTS",
    "METHODS",
    "METRICS",
    "log_table",
    "wandb_mode",
]
