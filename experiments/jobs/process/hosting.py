"""Running a function in a process of its own, or in a long-lived host process, from a process
server that imported the heavy libraries once (the plumbing of
:mod:`experiments.jobs.process.isolation`).

:func:`run_isolated` forks each call from a ``multiprocessing`` forkserver that has imported the
``preload`` modules once (TensorFlow: several seconds saved per job), waits for it, and reports how
it ended (:class:`Ended`). The child gets the caller's environment and working directory, and dies
with its server.

A :class:`JobHost` is one such child that runs calls one after another, each with the caller's
environment and working directory, and hands every call the same ``session`` dict to keep things
in. A call that kills its host is reported like a killed child, and the next call gets a new host.
:func:`run_hosted` keeps a launcher worker's hosts by ``key``: the process settings (threads, XLA
cache, determinism, which a process can only set once) and the job's configuration (what its
compiled programs depend on), the last :data:`HOSTS` of them, the least recently used one ended.

One configuration per host: TensorFlow names each traced function with a counter that runs over
the whole process, and XLA's persistent cache keys a program by that name, so a configuration
traced after another in the same process gets names no fresh process gives it and compiles afresh
even when its programs are on disk (measured: docs/performance.md, "Start-up, per job"). In a host
of its own, forked from a server that has traced nothing, a configuration's functions get the same
names in every sweep, whatever else the worker ran before, and later sweeps load them.
"""

from __future__ import annotations

import collections
import dataclasses
import multiprocessing
import os
import signal
import sys
import traceback
from collections.abc import Callable, Hashable, Mapping, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from experiments.jobs.process.lifetime import die_with_parent

__all__ = ["Ended", "JobHost", "close_hosts", "run_hosted", "run_isolated"]


@dataclasses.dataclass(frozen=True)
class Ended:
    """How a job process ended.

    Attributes:
      pid: its process id.
      exitcode: its exit status (0: returned normally), or None when a signal ended it.
      signal: the signal that killed it, or None.
      value: what the target returned (None when it did not return).
    """

    pid: int
    exitcode: int | None
    signal: int | None
    value: Any = None

    @classmethod
    def of(cls, process: multiprocessing.process.BaseProcess, value: Any = None) -> Ended:
        """How a joined ``process`` ended (a negative exit code is the signal that killed it)."""
        code = process.exitcode
        return cls(
            pid=process.pid,
            exitcode=code if code is not None and code >= 0 else None,
            signal=-code if code is not None and code < 0 else None,
            value=value,
        )

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


def _child(
    conn: Connection,
    target: Callable[..., Any],
    args: tuple,
    kwargs: Mapping[str, Any],
    env: Mapping[str, str],
    cwd: str,
) -> None:
    die_with_parent()  # the process server; it ends when the worker that started it does
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    conn.send(target(*args, **kwargs))


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
      How the process ended, with what ``target`` returned (picklable) as ``value``.
    """
    # The child re-applies its parent's start method; inside a launcher's worker that may be the
    # launcher's own (joblib's "loky"), so the server imports the module that registers it.
    context = _context(preload)
    receive, send = context.Pipe(duplex=False)
    process = context.Process(
        target=_child,
        args=(send, target, args, kwargs, dict(os.environ), os.getcwd()),
        daemon=False,
    )
    process.start()
    send.close()
    if on_start is not None:
        on_start(process.pid)
    try:
        value = receive.recv()
    except (EOFError, OSError):  # it ended without returning
        value = None
    receive.close()
    process.join()
    return Ended.of(process, value)


def _serve(conn: Connection) -> None:
    """A host's loop: run each ``(target, args, kwargs, env, cwd)`` it receives, answer
    ``(True, value)`` (returned) or ``(False, None)`` (raised: the host then exits, its state is
    not trusted), until EOF. A Ctrl-C does nothing here: the sweep's main process decides, and
    a job stops at its next step (:class:`experiments.jobs.process.lifetime.JobStop`)."""
    die_with_parent()  # the process server; it ends when the worker that started it does
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    session: dict[str, Any] = {}
    while True:
        try:
            target, args, kwargs, env, cwd = conn.recv()
        except (EOFError, OSError):
            return
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        try:
            value = target(*args, session=session, **kwargs)
        except BaseException as err:  # noqa: BLE001 - reported as a failed job, the host exits
            if not isinstance(err, OSError):  # a full disk: the caller, who cannot write either,
                traceback.print_exc()  # says so in one line
            conn.send((False, None))
            sys.exit(1)
        conn.send((True, value))


class JobHost:
    """A process, forked from the process server, that runs jobs one after another.

    Args:
      preload: modules the process server imports once.
    """

    def __init__(self, *, preload: Sequence[str] = ()) -> None:
        context = _context(preload)
        self._conn, child_conn = context.Pipe()
        self._process = context.Process(target=_serve, args=(child_conn,), daemon=True)
        self._process.start()
        child_conn.close()

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def alive(self) -> bool:
        return self._process.is_alive()

    def run(self, target: Callable[..., Any], *args: Any, **kwargs: Any) -> Ended:
        """Runs ``target(*args, session=..., **kwargs)`` in the host and waits for it.

        Returns:
          How it ended: ``exitcode`` 0 when it returned (the host lives on), with what it
          returned as ``value``; else how the host process ended (killed by a signal, or exited
          after an exception).
        """
        try:
            self._conn.send((target, args, kwargs, dict(os.environ), os.getcwd()))
            ready = wait([self._conn, self._process.sentinel])
            if self._conn in ready:
                returned, value = self._conn.recv()
                if returned:
                    return Ended(pid=self.pid, exitcode=0, signal=None, value=value)
        except (EOFError, OSError):  # the host died before answering
            pass
        self._process.join()
        return Ended.of(self._process)

    def close(self) -> None:
        """Ends the host (it exits at EOF) and waits for it."""
        self._conn.close()
        self._process.join(timeout=10)
        if self._process.is_alive():  # pragma: no cover - a job that ignores EOF
            self._process.kill()
            self._process.join()


_DIES_WITH_PARENT = "experiments.jobs.process._dies_with_parent"
"""The module every process server imports first (a name: the forkserver imports it)."""


def _context(preload: Sequence[str]):
    context = multiprocessing.get_context("forkserver")
    method_module = type(multiprocessing.get_context()).__module__
    context.set_forkserver_preload([_DIES_WITH_PARENT, method_module, *preload])
    return context


HOSTS = 2
"""Job hosts a launcher worker keeps (each a TensorFlow process with its configuration's agent):
a worker dealt two configurations in turn restarts both agents instead of building them again."""

_hosts: collections.OrderedDict[Hashable, JobHost] = collections.OrderedDict()
"""This worker process's hosts by key, least recently used first (see :func:`run_hosted`)."""


def run_hosted(
    target: Callable[..., Any],
    *args: Any,
    key: Hashable,
    preload: Sequence[str] = (),
    **kwargs: Any,
) -> Ended:
    """Runs ``target(*args, session=..., **kwargs)`` in this process's :class:`JobHost` for
    ``key``, starting one when there is none (and ending the least recently used beyond
    :data:`HOSTS`); a host that died with its job is replaced by the next call.

    The one piece of module state in gradlab: a launcher worker calls this once per job, and the
    hosts must outlive the call to be of use. They end with the worker (daemon processes).
    """
    host = _hosts.pop(key, None)
    if host is not None and not host.alive:
        host.close()
        host = None
    if host is None:
        while len(_hosts) >= HOSTS:
            _hosts.popitem(last=False)[1].close()
        host = JobHost(preload=preload)
    _hosts[key] = host  # the most recently used, last
    ended = host.run(target, *args, **kwargs)
    if ended.exitcode != 0:
        _hosts.pop(key, None)
    return ended


def close_hosts() -> None:
    """Ends this process's job hosts, if any (they end with the process anyway; a sweep's main
    process ends them when the sweep is done, so that nothing it started outlives the sweep)."""
    while _hosts:
        _hosts.popitem(last=False)[1].close()
