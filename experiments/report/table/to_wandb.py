"""``gradlab table --wandb``: the table into a W&B run of its sweep's group, a mirror that can
never change the table or a results folder.

One W&B run per call (job type ``table``, group: the ablation, so it sits beside the sweep's job
runs), holding ``table``: a ``wandb.Table`` of the typed table's rows (every number, as
``--format csv`` writes them), and an artifact ``table-<ablation>`` (type ``table``) with the
Markdown (``table.md``, the bytes ``gradlab table`` prints) and the CSV (``table.csv``).

The run is written under ``wandb_dir`` (outside any results folder; the caller checks) and is
offline unless ``WANDB_MODE`` says otherwise (``online`` without an API key or network falls back
to offline with a warning, as the jobs' runs do); ``wandb sync <wandb_dir>/wandb/offline-run-*``
uploads it. Any W&B failure is one warning, returned, never raised: the table is printed or
written before this runs.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiments.base.errors import unknown_choice

if TYPE_CHECKING:
    from experiments.report.table.summarize import Table

__all__ = ["MODES", "Logged", "log_table", "wandb_mode"]

MODES = ("offline", "online", "disabled")
_ALIASES = {"dryrun": "offline", "run": "online"}


def wandb_mode(env: Mapping[str, str]) -> str:
    """``WANDB_MODE`` from ``env`` (``offline`` when unset), W&B's old names mapped to theirs.

    Raises:
      ConfigError: a mode W&B does not know.
    """
    mode = (env.get("WANDB_MODE") or "offline").strip().lower()
    mode = _ALIASES.get(mode, mode)
    if mode not in MODES:
        raise unknown_choice("WANDB_MODE", mode, MODES)
    return mode


@dataclasses.dataclass(frozen=True)
class Logged:
    """What :func:`log_table` did: ``run_dir``, the run's folder (``wandb sync`` takes it; None
    when no run was written), ``mode`` (``offline`` or ``online``) and ``warnings`` (one line
    each)."""

    run_dir: Path | None
    mode: str | None
    warnings: tuple[str, ...]


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"[:200]


def _init(wandb: Any, mode: str, wandb_dir: Path, group: str, config: dict) -> Any:
    settings = wandb.Settings(
        mode=mode, silent=True, console="off", x_disable_stats=True,
        x_disable_machine_info=True, disable_git=True, save_code=False,
        x_save_requirements=False, init_timeout=20.0 if mode == "online" else 30.0,
    )  # fmt: skip
    return wandb.init(project="gradlab", group=group, job_type="table", name=f"table__{group}",
                      tags=["table"], config=config, dir=str(wandb_dir), settings=settings,
                      reinit="create_new")  # fmt: skip


def _open(wandb: Any, mode: str, wandb_dir: Path, group: str, config: dict, warn) -> Any:
    """The run, online when asked and possible, else offline (a warning says why)."""
    if mode == "online":
        from experiments.jobs import online_problem

        why = online_problem()
        if why is None:
            try:
                return _init(wandb, "online", wandb_dir, group, config)
            except Exception as err:  # noqa: BLE001 - W&B never stops the table
                why = f"online init failed ({_one_line(err)})"
        warn(f"WANDB_MODE=online but {why}; logging offline")
    return _init(wandb, "offline", wandb_dir, group, config)


def log_table(
    table: Table,
    *,
    markdown: str,
    csv: str,
    wandb_dir: Path,
    mode: str,
    folder: Path,
) -> Logged:
    """Logs ``table`` into a new W&B run (module docstring).

    Args:
      table: the typed table (its ``rows`` become the ``wandb.Table``).
      markdown: the table as ``gradlab table`` prints it.
      csv: the table as ``--format csv`` writes it.
      wandb_dir: W&B writes ``<wandb_dir>/wandb/offline-run-*`` (made if missing).
      mode: ``offline``, ``online`` or ``disabled`` (:func:`wandb_mode`).
      folder: the results folder (the group when it has no ablation; the run's config).

    Returns:
      Where the run went, and the warnings: a :class:`Logged`.
    """
    if mode == "disabled":
        return Logged(None, None, ("WANDB_MODE=disabled: the table was not logged to W&B",))
    warnings: list[str] = []
    group = table.ablation or Path(folder).resolve().name
    config = {"folder": str(folder), "metrics": list(table.metrics), "stat": table.stat,
              "baseline": table.baseline, "analysis": table.analysis,
              "rate_test": table.rate_test, "alpha": table.alpha}  # fmt: skip
    run = None
    try:
        import wandb

        Path(wandb_dir).mkdir(parents=True, exist_ok=True)
        run = _open(wandb, mode, Path(wandb_dir), group, config, warnings.append)
        run.log({"table": wandb.Table(dataframe=table.rows.reset_index(drop=True))})
        artifact = wandb.Artifact(re.sub(r"[^A-Za-z0-9._-]", "_", f"table-{group}"), "table",
                                  metadata=config)  # fmt: skip
        for name, text in (("table.md", markdown), ("table.csv", csv)):
            with artifact.new_file(name, encoding="utf-8") as handle:
                handle.write(text)
        run.log_artifact(artifact)
        where, how = Path(run.settings.sync_dir), "offline" if run.offline else "online"
        run.finish()
        return Logged(where, how, tuple(warnings))
    except Exception as err:  # noqa: BLE001 - W&B never changes the table or stops the command
        warnings.append(f"{_one_line(err)}; the table was not logged to W&B")
        if run is not None:
            try:
                run.finish(exit_code=1)
            except Exception:  # noqa: BLE001, S110 - already warned
                pass
    return Logged(None, None, tuple(warnings))
