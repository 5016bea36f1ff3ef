"""gradlab calibrate: a declared ladder run rung by rung on the baseline alone, counted against a
rule, recorded.

The face (``__all__``): a calibration prepared, run and recorded; its names load at first use, each
from its module (PEP 562: :func:`experiments.base.faces.lazy_face`), so that importing the package
loads none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from experiments.base.faces import lazy_face

if TYPE_CHECKING:
    from experiments.protocols.calibration.calibrate import run_calibration
    from experiments.protocols.calibration.plan import Calibration, prepare
    from experiments.protocols.calibration.record import RungRecord

__all__ = [
    "Calibration",
    "RungRecord",
    "prepare",
    "run_calibration",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "calibrate": ("run_calibration",),
        "plan": (
            "Calibration",
            "prepare",
        ),
        "record": ("RungRecord",),
    },
    __all__,
)
