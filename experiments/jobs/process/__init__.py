"""A job in its own process: the plumbing around a job, apart from the job's own work.

:func:`execute` is the one way to run a job (a sweep's or a single run's): it skips a finished job
(or one a live process holds), runs it in a process of its own, or in this launcher worker's job
host (:mod:`~experiments.jobs.process.isolation`, on a process server that imported the heavy
libraries once: :mod:`~experiments.jobs.process.hosting`), and records how it ended: a job killed
by a signal is one failed job, and the sweep goes on. :mod:`~experiments.jobs.process.lifetime` is
how a worker and a job's process end with their sweep (the main process's side is
:mod:`experiments.launch.lifetime`); ``_preload_tensorflow`` and ``_dies_with_parent`` are
modules a process server imports by name when it starts. Besides :func:`execute` (and its
:class:`Skipped`), the package exports the names a sweep's main process shares with the processes
below it: the environment variables naming the sweep's stop file and its main process, and the
signals that ask for a stop.

The job's own work (its folder, rows, summary, W&B run) is the rest of :mod:`experiments.jobs`,
which never imports this package.
"""

from experiments.jobs.process.isolation import Skipped, execute
from experiments.jobs.process.lifetime import MAIN_PID_ENV, STOP_FILE_ENV, STOP_SIGNALS

__all__ = ["MAIN_PID_ENV", "STOP_FILE_ENV", "STOP_SIGNALS", "Skipped", "execute"]
