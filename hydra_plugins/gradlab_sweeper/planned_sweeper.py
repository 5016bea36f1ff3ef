"""``hydra/sweeper=planned``: Hydra's basic sweeper for a sweep gradlab has already planned.

Before it launches a batch, Hydra's ``BasicSweeper`` composes every job's config once more to
catch composition errors early (``Sweeper.validate_batch_is_legal``; its own comment: "This can
be a bit slow for large jobs"): about 0.1 s a job on 2 cores, 4.5 s for the main job's 50 jobs,
during which no launcher worker exists yet. ``gradlab sweep`` has done that work already, and
more: :func:`experiments.plan.plan` composes and validates every job (Hydra's composition, then
gradlab's schema) and stops the sweep before anything is written if one is bad. So
:class:`PlannedSweeper` is the basic sweeper itself (the same expansion of ``params`` and the
command line, the same batches, the same ``multirun.yaml``) without that second validation.
``gradlab sweep`` chooses it unless the command line names a sweeper; ``python -m
experiments.hydra_app --multirun`` (no plan) keeps Hydra's default.
"""

from __future__ import annotations

from collections.abc import Sequence

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

__all__ = ["PlannedSweeper"]


class PlannedSweeper(BasicSweeper):
    """Hydra's ``BasicSweeper`` without re-composing each job before launch (planned already)."""

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        """Nothing to do: ``gradlab sweep`` composed and validated every job in its plan."""
