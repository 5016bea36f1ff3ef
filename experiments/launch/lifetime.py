"""How the processes of a sweep end together: the main process's side (a stop request, the last
reap).

A sweep is a tree of processes: the command line (the *main* process), the launcher's workers,
the process server and job host each worker forks its jobs from, and each job's W&B service
(:mod:`experiments.jobs.process.lifetime` holds the workers' and jobs' side).

**The main process** holds :class:`Sweep` while the launcher runs. SIGINT (Ctrl-C), SIGTERM and
SIGHUP never raise there: a watcher thread takes them, creates the sweep's *stop file* (its path
is in ``$GRADLAB_STOP_FILE`` for every process the sweep starts), and gives the jobs
:data:`GRACE_S` seconds to stop at their next step; a second signal, or the grace running out,
kills every process left below the main one at once. SIGINT and SIGHUP stay blocked in the main
thread, and so in every process it starts (a signal mask survives ``fork`` and ``exec``): a
Ctrl-C or a closed terminal, which reach every process of the terminal's foreground group, reach
only the main process's decision, so no worker dies in the middle of a job or prints a
traceback.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType
from typing import Any

from experiments.jobs.process import MAIN_PID_ENV, STOP_FILE_ENV, STOP_SIGNALS

__all__ = ["GRACE_S", "STOPPED_EXIT_CODES", "Sweep", "end_processes"]

GRACE_S = 10.0
"""Seconds the jobs have, after the first stop signal, to stop at their next step and write their
summaries, before the main process kills what is left (a job whose step outlasts it, e.g. its
first compilation, is then recorded ``interrupted`` by the main process, its rows kept)."""

_ENV = {
    # Ray's processes would print a stack dump for the SIGTERM that ends them (absl's handler)
    "RAY_DISABLE_FAILURE_SIGNAL_HANDLER": "1",
}
_TERMINAL = (signal.SIGINT, signal.SIGHUP)  # blocked in the main thread, so in its children
STOPPED_EXIT_CODES = frozenset(128 + s for s in STOP_SIGNALS)
"""The exit codes of a sweep a stop signal ended (``128 + signal``: 129, 130, 143)."""


def _descendants(pid: int) -> list[Any]:
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def end_processes(processes: Iterable[Any], *, timeout: float) -> list[Any]:
    """Waits up to ``timeout`` seconds for ``processes`` (``psutil.Process``) to end, then
    SIGKILLs the ones left and waits for them; returns those killed."""
    import psutil

    processes = list(processes)
    _, alive = psutil.wait_procs(processes, timeout=timeout)
    for process in alive:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(alive, timeout=5)
    return alive


def _ignore(signum: int, frame: FrameType | None) -> None:
    del signum, frame  # the watcher thread acts on it (set_wakeup_fd)


class Sweep:
    """The main process's side (see the module docstring): hold it while the launcher runs.

    After the block, :attr:`signal` is the first stop signal (None: not stopped), and every
    process the block started has ended: pools are given ``reap_s`` seconds to end by
    themselves (loky's workers end theirs at exit), then the rest is killed.

    Args:
      grace_s: seconds between the first signal and killing what is left.
      on_hard_stop: called with the first signal after a hard stop killed the sweep's processes
        (a second signal, or the grace ran out), before this process exits with
        ``128 + signal``; e.g. records the jobs it killed and prints the sweep's last line.
      reap_s: seconds the processes left after the block get to end by themselves.
    """

    def __init__(
        self,
        *,
        grace_s: float = GRACE_S,
        on_hard_stop: Callable[[int], None] | None = None,
        reap_s: float = 5.0,
    ) -> None:
        self.grace_s = grace_s
        self.reap_s = reap_s
        self.signal: int | None = None
        self._on_hard_stop = on_hard_stop
        self._lock = threading.Lock()
        self._closed = False
        self._timer: threading.Timer | None = None
        self._signalled = threading.Event()

    def stopped(self, timeout: float = 0.0) -> bool:
        """Whether a stop signal came, waiting up to ``timeout`` seconds for one (a library's
        own handler may act on it in the main thread before the watcher thread has)."""
        return self._signalled.wait(timeout)

    @property
    def exit_code(self) -> int | None:
        """``128 + signal`` (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP), or None."""
        return None if self.signal is None else 128 + self.signal

    def __enter__(self) -> Sweep:
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("a sweep's signals can only be taken in the main thread")
        self._dir = tempfile.mkdtemp(prefix="gradlab-sweep-")
        self.stop_file = os.path.join(self._dir, "stop")
        names = (*_ENV, STOP_FILE_ENV, MAIN_PID_ENV)
        self._saved_env = {name: os.environ.get(name) for name in names}
        os.environ.update(_ENV)
        os.environ[STOP_FILE_ENV] = self.stop_file
        os.environ[MAIN_PID_ENV] = str(os.getpid())
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self._saved_wakeup = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._saved_handlers = {sig: signal.signal(sig, _ignore) for sig in STOP_SIGNALS}
        self._saved_mask = signal.pthread_sigmask(signal.SIG_BLOCK, _TERMINAL)
        self._thread = threading.Thread(target=self._watch, name="gradlab-stop", daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        # This thread alone takes SIGINT and SIGHUP (blocked in the main thread); whatever thread
        # a signal lands on, Python's handler writes its number to the wakeup pipe read here.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _TERMINAL)
        while True:
            try:
                data = os.read(self._read, 64)
            except OSError:
                return
            if not data:
                return
            for signum in data:
                if signum in STOP_SIGNALS:
                    self._request(signum)

    def _request(self, signum: int) -> None:
        with self._lock:
            if self._closed:
                return
            if self.signal is not None:
                hard = True
            else:
                hard = False
                self.signal = signum
                Path(self.stop_file).touch()
                self._signalled.set()
                self._timer = threading.Timer(self.grace_s, self._hard_stop)
                self._timer.daemon = True
                self._timer.start()
        if hard:
            self._hard_stop()

    def _hard_stop(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        end_processes(_descendants(os.getpid()), timeout=0)
        code = 128 + (self.signal or signal.SIGTERM)
        try:
            if self._on_hard_stop is not None:
                self._on_hard_stop(self.signal or signal.SIGTERM)
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
        signal.set_wakeup_fd(self._saved_wakeup)
        os.close(self._write)  # the watcher reads end-of-file and returns
        self._thread.join(timeout=5)
        os.close(self._read)
        for sig, handler in self._saved_handlers.items():
            signal.signal(sig, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, self._saved_mask)
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(self._dir, ignore_errors=True)
        self.reap()

    def reap(self) -> None:
        """Ends what this process started and keeps for reuse (its job host, joblib's loky
        workers, a local Ray instance), then gives every other process still below this one
        ``reap_s`` seconds and kills it. Python's own helpers (the process server and resource
        trackers) are left to end with this process, at end-of-file on their pipes."""
        hosting = sys.modules.get("experiments.jobs.process.hosting")  # none imported: no host
        if hosting is not None:
            hosting.close_hosts()
        executor = _loky_executor()
        if executor is not None:
            with contextlib.suppress(Exception):
                executor.shutdown(wait=True)
        ray = sys.modules.get("ray")
        if ray is not None:
            with contextlib.suppress(Exception):
                if ray.is_initialized():
                    ray.shutdown()
        left = [p for p in _descendants(os.getpid()) if not _python_helper(p)]
        end_processes(left, timeout=self.reap_s)


_HELPERS = ("multiprocessing.forkserver", "resource_tracker")


def _python_helper(process: Any) -> bool:
    """Whether ``process`` is one of Python's multiprocessing helpers (ends with its parent)."""
    import psutil

    try:
        own = " ".join(process.cmdline())
        parent = process.parent()
        above = " ".join(parent.cmdline()) if parent is not None else ""
    except psutil.Error:
        return True
    # a job host is forked from the process server: same command line, but under the server
    return any(h in own for h in _HELPERS) and _HELPERS[0] not in above


def _loky_executor() -> Any:
    """joblib's reusable loky executor of this process, if one was started (else None)."""
    module = sys.modules.get("joblib.externals.loky.reusable_executor")
    return getattr(module, "_executor", None)
