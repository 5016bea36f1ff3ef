"""

The face (``__all__``) is what the command line and the notebook face use
(:func:`experiments.protocols.study.audit.audit`, named as its module, is imported from it); its
names load at first use, each from its module (PEP 562: :func:`experiments.base.faces.lazy_face`),
so that importing the package loads none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from experiments.base.faces import lazy_face

if TYPE_CHECKING:
    from experiments.protocols.study.analysis import (
        audit_note,
        declared_family,
        declared_normalisation,
        registered_contrast,
    )
    from experiments.protocols.study.design import load_study
    from experiments.protocols.study.pooled import pool_folders
    from experiments.protocols.study.rate_plan import plan_study
    from experiments.protocols.study.record import (
        RECORD,
        check,
        check_folder,
        register,
        study_folder,
    )
    from experiments.protocols.study.run import run_study

__all__ = [
    "RECORD",
    "audit_note",
    "check",
    "check_folder",
    "declared_family",
    "declared_normalisation",
    "load_study",
    "plan_study",
    "pool_folders",
    "register",
    "registered_contrast",
    "run_study",
    "study_folder",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "analysis": (
            "audit_note",
            "declared_family",
            "declared_normalisation",
            "registered_contrast",
        ),
        "design": ("load_study",),
        "pooled": ("pool_folders",),
        "rate_plan": ("plan_study",),
        "record": (
            "RECORD",
            "check",
            "check_folder",
            "register",
            "study_folder",
        ),
        "run": ("run_study",),
    },
    __all__,
)
