"""Each job in a process of its own, so that a job killed by a signal is one failed job.

A launcher worker (joblib's, Ray's, submitit's, or the main process for the basic launcher) runs
many jobs. If a job ran inside it, a kill of the job (the out-of-memory killer, a user's
``kill``) would kill the worker and, with joblib, stop the whole sweep. Instead the worker forks
the job from a process server (``multiprocessing``'s forkserver) that has imported the heavy
libraries once (TensorFlow: several seconds saved per job), waits for it, and reports how it
ended. The child gets the caller's environment and working directory, and dies with its server.
"""

from __future__ import annotations

import ctypes
import dataclasses
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["Ended", "run_isolated"]

_PR_SET_PDEATHSIG = 1


@dataclasses.dataclass(frozen=True)
class Ended:
    """How a job process ended.

    Attributes:
      pid: its process id.
      exitcode: its exit status (0: returned normally), or None when a signal ended it.
      signal: the signal that killed it, or None.
    """

    pid: int
    exitcode: int | None
    signal: int | None

    @property
    def description(self) -> str:
        """``'killed by signal 9 (SIGKILL)'``, ``'exited with status 1'``, ``'exited normally'``."""
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = "unknown"
            return f"killed by signal {self.signal} ({name})"
        if self.exitcode:
            return f"exited with status {self.exitcode}"
        return "exited normally"


def _die_with_parent() -> None:
    """Asks Linux to SIGKILL this process when its parent (the process server) exits."""
    if not sys.platform.startswith("linux"):  # pragma: no cover
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # pragma: no cover - no prctl: the job may outlive it
        pass


def _child(
    target: Callable[..., Any],
    args: tuple,
    kwargs: Mapping[str, Any],
    env: Mapping[str, str],
    cwd: str,
) -> None:
    _die_with_parent()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    target(*args, **kwargs)


def run_isolated(
    target: Callable[..., Any],
    *args: Any,
    preload: Sequence[str] = (),
    on_start: Callable[[int], None] | None = None,
    **kwargs: Any,
) -> Ended:
    """Runs ``target(*args, **kwargs)`` in a new process and waits for it.

    Args:
      target: a module-level function (it is pickled by reference); its return value is dropped:
        the job reports through its results folder.
      *args: its positional arguments (picklable).
      preload: modules the process server imports once when it starts (only the first call of a
        process sets them).
      on_start: called with the child's pid once it runs.
      **kwargs: its keyword arguments (picklable).

    Returns:
      How the process ended.
    """
    context = multiprocessing.get_context("forkserver")
    # The child re-applies its parent's start method; inside a launcher's worker that may be the
    # launcher's own (joblib's "loky"), so the server imports the module that registers it.
    method_module = type(multiprocessing.get_context()).__module__
    context.set_forkserver_preload([method_module, *preload])
    process = context.Process(
        target=_child, args=(target, args, kwargs, dict(os.environ), os.getcwd()), daemon=False
    )
    process.start()
    if on_start is not None:
        on_start(process.pid)
    process.join()
    code = process.exitcode
    return Ended(
        pid=process.pid,
        exitcode=code if code is not None and code >= 0 else None,
        signal=-code if code is not None and code < 0 else None,
    )
