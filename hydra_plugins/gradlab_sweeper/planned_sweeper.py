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
given. ``PlannedSweeper`` is then Hydra's basic sweeper unchanged, as ``hydra/sweeper=basic``
names it (public: Hydra's config store and ``hydra.utils.get_class``). The sweep gives the same
jobs and results, and each job is composed a second time.
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
        return public()
    return type(
        "PlannedSweeper",
        (base,),
        {
            "__module__": __name__,
            "__doc__": "Hydra's ``BasicSweeper`` without re-composing each job (planned already).",
            "validate_batch_is_legal": _skip_validation,
        },
    )


PlannedSweeper = planned_sweeper_class()
"""What ``hydra/sweeper=planned`` instantiates (:func:`planned_sweeper_class`)."""
