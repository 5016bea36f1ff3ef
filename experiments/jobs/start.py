"""A job's start, before its first step: the folder readied, the first summary, the W&B mirror.

:func:`start_job` discards what an earlier attempt left in the job's folder, writes the resolved
``config.yaml`` and a ``summary.json`` of status ``running`` (so a job killed from here on is seen
as unfinished), and makes the job's :class:`~experiments.jobs.tracking.Tracker` from
``cfg.logger`` unless one is given. Files are the store's (:mod:`experiments.jobs.store`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from experiments.config import RunConfig
from experiments.jobs import store
from experiments.jobs.summary import Summary

__all__ = ["Started", "start_job"]


@dataclasses.dataclass(frozen=True)
class Started:
    """A started job.

    Attributes:
      summary: the summary written at the start (status from :meth:`Summary.start`).
      tracker: the job's :class:`~experiments.jobs.tracking.Tracker`.
    """

    summary: Summary
    tracker: Any


def start_job(
    cfg: RunConfig,
    job_dir: Path,
    *,
    job: str,
    overrides: Mapping[str, str],
    choices: Mapping[str, str | None],
    resolved: Mapping[str, Any],
    ablation: str | None,
    tracker: Any = None,
) -> Started:
    """Readies ``job_dir`` (created) and writes the job's first summary.

    Args:
      cfg: the validated config.
      job_dir: the job's folder.
      job: the job's name.
      overrides: the job's overrides; the store's bookkeeping keys are left out of the summary.
      choices: Hydra's config-group choices, recorded.
      resolved: the resolved config, saved as ``config.yaml`` and sent to W&B.
      ablation: the sweep's ablation, or None for a single run.
      tracker: the tracker to use; None: one made from ``cfg.logger``.

    Returns:
      The starting summary and the tracker.
    """
    job_dir.mkdir(parents=True, exist_ok=True)
    store.discard_attempt(job_dir)
    store.write_config(job_dir, resolved)
    overrides = {k: v for k, v in overrides.items() if not store.is_bookkeeping(k)}
    summary = Summary.start(
        cfg, job=job, overrides=overrides, choices=choices, ablation=ablation, folder=job_dir.parent
    )
    store.write_summary(job_dir, summary)
    if tracker is None:
        tracker = _tracker(cfg, job_dir, job=job, ablation=ablation, resolved=resolved)
    return Started(summary, tracker)


def _tracker(
    cfg: RunConfig, job_dir: Path, *, job: str, ablation: str | None, resolved: Mapping[str, Any]
) -> Any:
    """The job's :class:`~experiments.jobs.tracking.Tracker`, from ``cfg.logger``."""
    from experiments.jobs.tracking import make_tracker

    return make_tracker(
        job_dir,
        mode=cfg.logger.mode,
        project=cfg.logger.project,
        entity=cfg.logger.entity,
        group=ablation,
        job_type=cfg.variant.name,
        name=job,
        tags=(*cfg.logger.tags, cfg.task.name, cfg.variant.name, cfg.variant.placement),
        config=resolved,
        every=cfg.logger.every,
    )
