"""One worker thread beside a run's training steps, or none (the work runs in the caller)."""

from __future__ import annotations

import concurrent.futures
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["Worker"]


class Worker:
    """A single worker thread named ``gradlab-<name>``, made only if ``enabled``.

    Work submitted runs in order. :meth:`close` waits for the work running, drops the rest, and
    does nothing while the interpreter finalizes: a run's generator left unfinished at exit is
    closed while modules are torn down, after ``concurrent.futures`` joined its threads.
    """

    def __init__(self, name: str, *, enabled: bool) -> None:
        self._pool = (
            concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"gradlab-{name}")
            if enabled
            else None
        )

    @property
    def enabled(self) -> bool:
        """Whether there is a worker thread (``False`` once closed)."""
        return self._pool is not None

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future:
        """Runs ``fn(*args)`` on the worker thread (which must be enabled)."""
        if self._pool is None:
            raise RuntimeError("no worker thread: not enabled, or closed")
        return self._pool.submit(fn, *args)

    def close(self) -> None:
        """Waits for the running work, drops the queued, stops the thread (idempotent)."""
        if sys is None or sys.is_finalizing():
            return
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
