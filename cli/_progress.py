"""The progress bar a single run draws on a terminal (the job reports rows; this draws them)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["RichProgress"]


class RichProgress:
    """A rich progress bar: steps, loss and the last evaluation return; nothing off a terminal.

    Built in the job's own process by :func:`experiments.jobs.process.isolation.execute`'s progress
    factory (this class, passed by reference), drawing on that process's stderr.

    Args:
      name: the job's name.
      total: the number of steps, or None when unknown.
    """

    def __init__(self, name: str, total: int | None) -> None:
        self._bar = None
        self._eval = float("nan")
        if not sys.stderr.isatty():
            return
        from rich.progress import (  # deferred: rich.progress (~35 ms), on a terminal only
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            transient=True,
        )
        self._task = self._bar.add_task(name, total=total, info="")
        self._bar.start()

    def update(self, row: Mapping[str, Any]) -> None:
        """Advances one step."""
        if self._bar is None:
            return
        self._eval = row.get("eval/return", self._eval)
        info = f"loss {row.get('loss/total', float('nan')):.4g}  eval {self._eval:.3g}"
        self._bar.update(self._task, advance=1, info=info)

    def close(self) -> None:
        """Removes the bar."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
