"""How a job's processes end with their sweep: a stop request, a parent's death (the job side).

A sweep is a tree of processes: the command line (the *main* process, which holds
:class:`experiments.launch.lifetime.Sweep`), the launcher's workers (joblib/loky workers,
submitit's job processes, Ray's instance and workers), the process server and job host each worker
forks its jobs from (:mod:`experiments.jobs.process.hosting`), and each job's W&B service. Below
the main process, two roles keep that tree from outliving it:

* **A launcher worker** calls :func:`as_worker` before each job: it asks Linux to kill it when
  its parent dies (``prctl(PR_SET_PDEATHSIG)``), which covers a SIGKILL of the main process,
  which nothing can catch. The process server then sees its worker's pipe close and exits, and
  the job host, which asked the same of the process server, is killed with it.
* **The job's process** holds :class:`JobStop` while it trains: the runner asks it before each
  step whether to stop (the sweep's stop file, :data:`STOP_FILE_ENV`, or a SIGINT/SIGTERM/SIGHUP
  sent to the job's process itself, as a cluster's scheduler does), and then records the job
  ``interrupted`` with the rows it has.

Linux only for the parent-death request (elsewhere a SIGKILLed sweep may leave its workers).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

__all__ = [
    "MAIN_PID_ENV",
    "STOP_FILE_ENV",
    "STOP_SIGNALS",
    "JobStop",
    "as_worker",
    "die_with_parent",
    "stop_requested",
]

STOP_FILE_ENV = "GRADLAB_STOP_FILE"
"""The environment variable naming the running sweep's stop file (exists: stop)."""

MAIN_PID_ENV = "GRADLAB_SWEEP_PID"
"""The environment variable holding the pid of the running sweep's main process."""

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that ask a sweep, or a job's process, to stop."""

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Asks Linux to send this process ``sig`` when its parent ends (``PR_SET_PDEATHSIG``).

    The request follows the parent *thread* that started this process; gradlab's processes are
    started from their parent's main thread. A parent that already died before the request
    (this process was re-parented) gets the signal sent at once. No-op off Linux.
    """
    if not sys.platform.startswith("linux"):  # pragma: no cover
        return
    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no prctl: this process may outlive it
        return
    if os.getppid() != parent:  # the parent ended between the two reads
        os.kill(os.getpid(), sig)


def stop_requested() -> bool:
    """Whether the sweep this process belongs to was asked to stop (its stop file exists)."""
    path = os.environ.get(STOP_FILE_ENV)
    return bool(path) and os.path.exists(path)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def as_worker() -> None:
    """Makes this process a launcher worker of the running sweep (:data:`MAIN_PID_ENV`): it is
    killed when its parent ends, and a Ctrl-C (the main process decides) never raises in it.
    Does nothing in the sweep's main process itself (the basic launcher runs jobs there), nor
    outside a sweep (no :data:`MAIN_PID_ENV`)."""
    main_pid = os.environ.get(MAIN_PID_ENV)
    if not main_pid or int(main_pid) == os.getpid():
        return
    die_with_parent(signal.SIGKILL)
    if _main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


class JobStop:
    """Whether the job in this process should stop at its next step (call it).

    True once the sweep's stop file exists (:data:`STOP_FILE_ENV`) or, while the context is held
    in the main thread, once this process got SIGINT, SIGTERM or SIGHUP (which then raise
    nothing: the job ends at its next step, its summary written). The previous handlers are put
    back on exit.

    Args:
      stop_file: the stop file; default ``$GRADLAB_STOP_FILE`` (none: signals only).
    """

    def __init__(self, stop_file: str | os.PathLike[str] | None = None) -> None:
        path = stop_file if stop_file is not None else os.environ.get(STOP_FILE_ENV)
        self._file = os.fspath(path) if path else None
        self.signal: int | None = None
        self._saved: dict[int, Any] = {}

    def __call__(self) -> bool:
        if self.signal is not None:
            return True
        return self._file is not None and os.path.exists(self._file)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        del frame
        if self.signal is None:
            self.signal = signum

    def __enter__(self) -> JobStop:
        if _main_thread():
            for sig in STOP_SIGNALS:
                self._saved[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)
        self._saved.clear()
