"""Imported first by every job process server (multiprocessing's forkserver preloads it, see
:func:`experiments.jobs.process.hosting._context`): the server is killed the moment the launcher
worker that started it ends (``PR_SET_PDEATHSIG``). Without it the server would notice its worker's
end only at end-of-file on a pipe and then finalize an interpreter holding TensorFlow, seconds on a
busy machine; its job hosts are killed with it (they ask the same of the server)."""

from experiments.jobs.process.lifetime import die_with_parent

die_with_parent()
