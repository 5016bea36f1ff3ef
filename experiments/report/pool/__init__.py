"""``gradlab pool``: one endpoint across strata (folders, or the settings a folder varies), each
variant's contrast with the baseline pooled over them (``across``), and its text (``render``).

The face (``__all__``) is what the packages above the report use.
"""

from experiments.report.pool.across import across_table
from experiments.report.pool.family import FamilySpec, family_table, render_family
from experiments.report.pool.render import render_across
from experiments.report.pool.table import Registration

__all__ = [
    "FamilySpec",
    "Registration",
    "across_table",
    "family_table",
    "render_across",
    "render_family",
]
