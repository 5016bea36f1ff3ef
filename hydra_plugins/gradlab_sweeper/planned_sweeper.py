"""``hydra/sweeper=planned``: Hydra's basic sweeper for a sweep gradlab has already planned.

Before it launches a batch, Hydra's ``BasicSweeper`` composes every job's config once more to
catch composition errors early (``Sweeper.validate_batch_is_legal``; its own comment: "This can
be a bit slow for large jobs"). Its cost per job is measured in docs/performance_private.md, and no
launcher worker exists yet during it. ``gradlab sweep`` has done that work already, and more:
:func:`experiments.launch.plan.plan` composes and validates every job (Hydra's composition, then
gradlab's schema) and stops the sweep before anything is written if one is bad. So
:data:`PlannedSweeper` is the basic sweeper itself without that second validation: the same
expansion of ``params`` and the command line, the same batches and the same ``multirun.yaml``.
``gradlab sweep`` chooses it unless the command line names a sweeper; ``python -m
experiments.launch.hydra_app --multirun`` (no plan) keeps Hydra's default.

``BasicSweeper`` lives in Hydra's private ``hydra._internal`` package and appears only in
:func:`planned_sweeper_class`. If it is gone, or Hydra's sweepers no longer have the
``validate_batch_is_legal`` hook, one :class:`~experiments.base.private_api.PrivateAPIWarning` is
given. ``PlannedSweeper`` is then Hydra's basic sweeper as ``hydra/sweeper=basic`` names it
(public: Hydra's config store and ``hydra.utils.get_class``). The sweep gives the same jobs and
results, and each job is composed a second time.

Either way it adds one thing: ``seed_group`` (set by ``gradlab sweep`` when the jobs train on the
seed axis, ``muzero.seed_axis=true``) launches the seeds of each configuration in groups, one
Hydra job per group (:func:`experiments.launch.groups.group_batch`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hydra.core.config_store import ConfigStore
from hydra.plugins.sweeper import Sweeper
from hydra.utils import get_class

from experiments.base.private_api import BROKEN, warn_fallback

__all__ = ["PlannedSweeper", "planned_sweeper_class"]


def _private_basic_sweeper() -> type:
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    return BasicSweeper


def _configured_basic_sweeper() -> type:
    """The class Hydra's own ``hydra/sweeper=basic`` config node names (public APIs only)."""
    node = ConfigStore.instance().load("hydra/sweeper/basic.yaml").node
    return get_class(node["_target_"])


def _skip_validation(self: Sweeper, batch: Sequence[Sequence[str]]) -> None:
    """Nothing to do: ``gradlab sweep`` composed and validated every job in its plan."""


def planned_sweeper_class(
    private: Callable[[], type] = _private_basic_sweeper,
    public: Callable[[], type] = _configured_basic_sweeper,
) -> type:
    """Hydra's ``BasicSweeper`` without re-composing each job before launch, or, if the private
    class or its hook is unavailable, Hydra's basic sweeper as its config names it (one warning).

    Args:
      private: returns the private class (a stand-in in tests).
      public: returns the basic sweeper through Hydra's public APIs.
    """
    members: dict[str, object] = {"__module__": __name__}
    try:
        base = private()
        if not callable(getattr(base, "validate_batch_is_legal", None)):
            raise AttributeError(f"{base.__name__} has no validate_batch_is_legal hook")
    except BROKEN as err:
        warn_fallback(
            "Hydra's hydra._internal BasicSweeper",
            "Hydra's basic sweeper as hydra/sweeper=basic names it",
            "each job composed once more before launch",
            err,
        )
        base = public()
        members["__doc__"] = "Hydra's basic sweeper, seeds grouped on the seed axis."
    else:
        members["__doc__"] = "Hydra's ``BasicSweeper`` without re-composing each job."
        members["validate_batch_is_legal"] = _skip_validation
    members.update(_grouping(base))
    return type("PlannedSweeper", (base,), members)


def _grouping(base: type) -> dict[str, object]:
    """The methods that group seeds (``seed_group``) on top of ``base``."""

    def __init__(self: Sweeper, max_batch_size=None, params=None, seed_group=None) -> None:
        """The basic sweeper's arguments, and ``seed_group``: group the seeds of each
        configuration in launched jobs of at most that many (``muzero.seed_axis``; None: a job
        per seed)."""
        base.__init__(self, max_batch_size=max_batch_size, params=params)
        self.seed_group = seed_group

    def get_job_batch(self: Sweeper) -> list[list[str]]:
        """The basic sweeper's next batch, seeds grouped (:func:`experiments.launch.groups.
        group_batch`)."""
        from experiments.launch.groups import group_batch

        return group_batch(base.get_job_batch(self), self.seed_group)

    return {"__init__": __init__, "get_job_batch": get_job_batch}


PlannedSweeper = planned_sweeper_class()
"""What ``hydra/sweeper=planned`` instantiates (:func:`planned_sweeper_class`)."""
