"""``gradlab plot``: the figures of a results folder (``plots``), their layout, drawing and style,
bootstrap bands, the intention-to-treat matrix, curves, run status, final returns and the
performance profile. Loads matplotlib.

The face (``__all__``): the two entry points of ``gradlab plot``; its names load at first use, each
from its module (PEP 562: :func:`experiments.base.faces.lazy_face`), so that importing the package
loads none of them. (matplotlib)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from experiments.base.faces import lazy_face

if TYPE_CHECKING:
    from experiments.report.figures.plots import plot_across, plot_all

__all__ = [
    "plot_across",
    "plot_all",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "plots": (
            "plot_across",
            "plot_all",
        ),
    },
    __all__,
)
