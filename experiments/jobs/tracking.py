"""The W&B mirror of a job: one W&B run per job, and never a reason to lose or stop a result.

The results folder is the source of truth; W&B is a mirror for browsing. Every call into W&B is
guarded: the first failure prints one warning and the tracker turns itself off, so the job and its
local files carry on untouched.

Modes (``conf/logger/``): ``offline`` (the default; no account or network; ``wandb sync`` uploads
later), ``online`` (needs an API key and network; without them it warns once and falls back to
offline), ``none`` (no W&B at all).
"""

from __future__ import annotations

import math
import os
import socket
import sys
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "NAMESPACES",
    "NullTracker",
    "Tracker",
    "WandbTracker",
    "make_tracker",
    "namespaced",
    "online_problem",
]

NAMESPACES = ("loss", "grad", "eval", "hidden", "selfplay", "env", "time", "stability")
"""Metric key prefixes; a key without a ``/`` is put under ``train/``."""


class Tracker(Protocol):
    """What the runner calls: ``log`` once per step, ``finish`` once at the end.

    ``warning`` is the one warning it printed (W&B fell back to offline, or stopped), or None:
    the runner keeps it in ``summary.json``.
    """

    warning: str | None

    def log(self, row: Mapping[str, float], *, step: int) -> None:
        """Mirrors one metrics row."""

    def finish(self, summary: Mapping[str, Any]) -> None:
        """Stores the summary figures in the run's summary and closes the run."""


class NullTracker:
    """``logger=none``: does nothing."""

    warning: str | None = None

    def log(self, row: Mapping[str, float], *, step: int) -> None:
        del row, step

    def finish(self, summary: Mapping[str, Any]) -> None:
        del summary


def namespaced(row: Mapping[str, Any]) -> dict[str, float]:
    """The row's numeric values with namespaced keys (``nonfinite`` -> ``train/nonfinite``).

    ``step`` is dropped (it is W&B's step); keys already holding a ``/`` are kept.
    """
    out = {}
    for key, value in row.items():
        if key == "step" or isinstance(value, bool) or not isinstance(value, int | float):
            continue
        out[key if "/" in key else f"train/{key}"] = float(value)
    return out


def _warn(message: str) -> None:
    print(f"warning: W&B: {message}; the local results are unaffected", file=sys.stderr)


DEFAULT_BASE_URL = "https://api.wandb.ai"
PROBE_TIMEOUT_S = 3.0  # seconds to wait for a TCP connection to the W&B server
ONLINE_INIT_TIMEOUT_S = 20.0  # seconds wandb.init may take online before we fall back


def _unreachable(timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """Why the W&B server (``WANDB_BASE_URL``) cannot be reached, or ``None`` when it can.

    One TCP connection with a short timeout: without it, ``wandb.init`` retries for its whole
    ``init_timeout`` before failing, which would stall every job of a sweep.
    """
    url = os.environ.get("WANDB_BASE_URL") or DEFAULT_BASE_URL
    parts = urllib.parse.urlsplit(url if "://" in url else f"https://{url}")
    try:
        port = parts.port or (80 if parts.scheme == "http" else 443)
    except ValueError:
        return f"bad WANDB_BASE_URL {url!r}"
    if not parts.hostname:
        return f"bad WANDB_BASE_URL {url!r}"
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return None
    except OSError as err:
        return f"cannot reach {url} ({err.strerror or type(err).__name__})"


def _has_api_key() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    try:
        import netrc

        path = os.environ.get("NETRC", str(Path.home() / ".netrc"))
        auth = netrc.netrc(path).authenticators("api.wandb.ai")
        return bool(auth and auth[2])
    except (OSError, netrc.NetrcParseError):
        return False


def online_problem() -> str | None:
    """Why logging to W&B online cannot work here (no API key, or the server cannot be reached
    within :data:`PROBE_TIMEOUT_S`), or None when it can."""
    if not _has_api_key():
        return "no W&B API key is set"
    return _unreachable()


class WandbTracker:
    """One W&B run per job, offline or online; any W&B exception warns once and disables it.

    Args:
      job_dir: the job's folder; the run goes to ``<job_dir>/wandb/``.
      mode: ``"offline"`` or ``"online"``.
      project: W&B project (``gradlab``).
      entity: W&B entity (team or user), or ``None``.
      group: the ablation (``None`` for single runs).
      job_type: the variant's name.
      name: the job's name.
      tags: W&B tags.
      config: the resolved config (plain dicts).
      every: log the rows of steps that are multiples of ``every``, and the last row (at
        :meth:`finish`); 1: every row.
    """

    def __init__(
        self,
        job_dir: str | Path,
        *,
        mode: str,
        project: str,
        entity: str | None,
        group: str | None,
        job_type: str,
        name: str,
        tags: Sequence[str],
        config: Mapping[str, Any],
        every: int = 1,
    ) -> None:
        self._run: Any = None
        self.warning: str | None = None
        self._every = every
        self._held: tuple[Mapping[str, float], int] | None = None  # the last row, not yet logged
        if mode == "online" and not _has_api_key():
            self._warn_once("logger=wandb_online but no W&B API key is set; logging offline")
            mode = "offline"
        if mode == "online" and (why := _unreachable()) is not None:
            self._warn_once(f"logger=wandb_online but {why}; logging offline")
            mode = "offline"
        try:
            self._run = self._init(job_dir, mode, project, entity, group, job_type, name, tags,
                                   config)  # fmt: skip
        except Exception as err:  # noqa: BLE001 - W&B must never stop a job
            if mode == "online":
                self._warn_once(f"online init failed ({_one_line(err)}); logging offline")
                try:
                    self._run = self._init(job_dir, "offline", project, entity, group, job_type,
                                           name, tags, config)  # fmt: skip
                except Exception as err2:  # noqa: BLE001
                    self._warn_once(f"offline init failed too ({_one_line(err2)})")
            else:
                self._warn_once(f"init failed ({_one_line(err)}); continuing without W&B")

    @staticmethod
    def _init(job_dir, mode, project, entity, group, job_type, name, tags, config) -> Any:
        import wandb

        Path(job_dir).mkdir(parents=True, exist_ok=True)
        settings = wandb.Settings(
            mode=mode,
            silent=True,
            console="off",
            x_disable_stats=True,
            x_disable_machine_info=True,
            disable_git=True,
            save_code=False,
            x_save_requirements=False,
            init_timeout=ONLINE_INIT_TIMEOUT_S if mode == "online" else 30.0,
        )
        return wandb.init(
            project=project,
            entity=entity,
            group=group,
            job_type=job_type,
            name=name,
            tags=list(tags),
            config=dict(config),
            dir=str(job_dir),
            settings=settings,
            reinit="create_new",
        )

    def _warn_once(self, message: str) -> None:
        if self.warning is None:
            self.warning = message
            _warn(message)

    @property
    def active(self) -> bool:
        """Whether a W&B run is open."""
        return self._run is not None

    def log(self, row: Mapping[str, float], *, step: int) -> None:
        if self._run is None:
            return
        if step % self._every:
            self._held = (row, step)
            return
        self._held = None
        self._log(row, step)

    def _log(self, row: Mapping[str, float], step: int) -> None:
        try:
            self._run.log(namespaced(row), step=step)
        except Exception as err:  # noqa: BLE001
            self._warn_once(f"log failed ({_one_line(err)}); stopped mirroring this run")
            self._close(1)

    def finish(self, summary: Mapping[str, Any]) -> None:
        if self._held is not None and self._run is not None:
            self._log(*self._held)  # the run's last row, whatever its step
            self._held = None
        if self._run is None:
            return
        try:
            flat = {"status": summary.get("status"), "steps": summary.get("steps")}
            for key in ("diverged_step", "wall_time_s"):
                if summary.get(key) is not None:
                    flat[key] = summary[key]
            for key, value in (summary.get("stability") or {}).items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    flat[f"stability/{key}"] = value if math.isfinite(value) else str(value)
            flat.update(outcome_fields(summary))
            self._run.summary.update(flat)
        except Exception as err:  # noqa: BLE001
            self._warn_once(f"summary update failed ({_one_line(err)})")
        self._close(0 if summary.get("status") != "failed" else 1)

    def _close(self, exit_code: int) -> None:
        run, self._run = self._run, None
        try:
            run.finish(exit_code=exit_code)
        except Exception as err:  # noqa: BLE001
            self._warn_once(f"finish failed ({_one_line(err)})")


def outcome_fields(summary: Mapping[str, Any]) -> dict[str, Any]:
    """What a finished run was, as the tables count it, for its W&B summary (so runs can be
    grouped and filtered there by what the tables count): ``outcome/class`` (held, lost,
    diverged before or after learning, never learned; :mod:`experiments.verdicts.outcome`),
    ``outcome/threshold`` and ``outcome/threshold_source`` (the task registry's rule),
    ``outcome/reached_step`` (its first evaluation at or above the threshold before diverging)
    and ``outcome/diverged`` (``no``, ``before_learning``, ``after_learning``). Empty for a run
    without a threshold or without the figures a class needs."""
    from experiments.verdicts import learned_step, run_outcome

    st = summary.get("stability") or {}
    threshold = summary.get("threshold")
    if not isinstance(threshold, int | float) or isinstance(threshold, bool):
        return {}
    figures = {k: st.get(k) for k in ("steps_to_threshold", "diverged", "diverged_step")}
    outcome = run_outcome(threshold=float(threshold), final_return=st.get("final_return"),
                          **figures)  # fmt: skip
    if outcome is None:
        return {}
    reached = learned_step(**figures)
    diverged = "no"
    if st.get("diverged") == 1:
        diverged = "after_learning" if outcome == "diverged_after_learning" else "before_learning"
    out: dict[str, Any] = {"outcome/class": outcome, "outcome/threshold": float(threshold),
                           "outcome/diverged": diverged}  # fmt: skip
    source = _threshold_source(summary)
    if source:
        out["outcome/threshold_source"] = source
    if reached is not None:
        out["outcome/reached_step"] = int(reached)
    return out


def _threshold_source(summary: Mapping[str, Any]) -> str | None:
    """The task registry's source of the run's threshold (its game for MinAtar), or None."""
    from experiments.base.errors import ConfigError
    from experiments.tasks import task_facts

    name = (summary.get("overrides") or {}).get("task") or summary.get("task")
    try:
        return task_facts(str(name)).threshold_source
    except ConfigError:
        return None


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"[:200]


def make_tracker(
    job_dir: str | Path,
    *,
    mode: str,
    project: str = "gradlab",
    entity: str | None = None,
    group: str | None = None,
    job_type: str = "",
    name: str = "",
    tags: Sequence[str] = (),
    config: Mapping[str, Any] | None = None,
    every: int = 1,
) -> Tracker:
    """The tracker for ``mode`` (``offline`` | ``online`` | ``none``); see :class:`WandbTracker`."""
    if mode == "none":
        return NullTracker()
    return WandbTracker(
        job_dir,
        mode=mode,
        project=project,
        entity=entity,
        group=group,
        job_type=job_type,
        name=name,
        tags=tags,
        config=config or {},
        every=every,
    )
