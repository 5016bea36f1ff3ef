"""From a command line to running jobs: the plan (compose, validate, locate), Hydra's entry and
task function, and the one sweep service (:mod:`experiments.launch.sweep`: launcher settings and
the deal of jobs to workers (:mod:`~experiments.launch.dealing`), counting, stops held by
:mod:`~experiments.launch.lifetime`) that ``gradlab sweep``, ``calibrate`` and ``study run`` call
in-process.

The face (``__all__``): the sweep service (:class:`SweepRequest`, :func:`prepare_sweep`,
:func:`run_sweep`), planning (:func:`experiments.launch.plan.plan`, named as its module, is
imported from it), gradlab's config folder and the launcher settings; its names load at first use,
each from its module (PEP 562: :func:`experiments.base.faces.lazy_face`), so that importing the
package loads none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from experiments.base.faces import lazy_face

if TYPE_CHECKING:
    from experiments.launch.counting import Stopped
    from experiments.launch.hydra_app import CONF_DIR
    from experiments.launch.lifetime import STOPPED_EXIT_CODES
    from experiments.launch.plan import PlannedJob, compose, group_options
    from experiments.launch.settings import launcher_given, parallel_jobs
    from experiments.launch.sweep import Launched, SweepRequest, prepare_sweep, run_sweep

__all__ = [
    "CONF_DIR",
    "Launched",
    "PlannedJob",
    "STOPPED_EXIT_CODES",
    "Stopped",
    "SweepRequest",
    "compose",
    "group_options",
    "launcher_given",
    "parallel_jobs",
    "prepare_sweep",
    "run_sweep",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "counting": ("Stopped",),
        "hydra_app": ("CONF_DIR",),
        "lifetime": ("STOPPED_EXIT_CODES",),
        "plan": (
            "PlannedJob",
            "compose",
            "group_options",
        ),
        "settings": (
            "launcher_given",
            "parallel_jobs",
        ),
        "sweep": (
            "Launched",
            "SweepRequest",
            "prepare_sweep",
            "run_sweep",
        ),
    },
    __all__,
)
