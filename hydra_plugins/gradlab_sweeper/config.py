"""``hydra/sweeper=planned`` in Hydra's ConfigStore (Hydra imports this when it scans its plugins,
as it does for its own launchers' configs), so any config folder can choose it."""

# No ``from __future__ import annotations``: OmegaConf reads these field types at run time, and
# Hydra's plugin scan imports this module without registering it in ``sys.modules``.
from dataclasses import dataclass
from typing import Optional

from hydra.core.config_store import ConfigStore


@dataclass
class PlannedSweeperConf:
    """The fields of Hydra's ``BasicSweeperConf``, with :class:`PlannedSweeper` as the target."""

    _target_: str = "hydra_plugins.gradlab_sweeper.planned_sweeper.PlannedSweeper"
    max_batch_size: Optional[int] = None  # noqa: UP045 - OmegaConf's supported spelling
    params: Optional[dict[str, str]] = None  # noqa: UP045


ConfigStore.instance().store(
    group="hydra/sweeper", name="planned", node=PlannedSweeperConf, provider="gradlab"
)
