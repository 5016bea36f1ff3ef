"""Process-wide settings of a job, in one place: cores, TensorFlow threads, seeds, determinism,
and a TensorFlow import without its C++ start-up chatter.

Each job runs in a process of its own (:mod:`experiments.jobs.process.isolation`), so these
settings are made once per job, before its first TensorFlow operation, and never leak into
another job.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = [
    "cores",
    "limit_threads",
    "quiet_tensorflow",
    "seed_everything",
    "use_xla_cache",
    "xla_cache_dir",
]


def cores() -> int:
    """The CPU cores this process may run on (its affinity; ``os.cpu_count()`` elsewhere)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


@contextlib.contextmanager
def _stderr_silenced() -> Iterator[None]:
    """Points file descriptor 2 at /dev/null (C++ libraries write there, not to sys.stderr)."""
    try:
        saved = os.dup(2)
    except OSError:  # no stderr at all
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def quiet_tensorflow() -> None:
    """Imports TensorFlow with its C++ start-up lines silenced (CUDA probing on a CPU machine,
    oneDNN and CPU-feature notes, absl's "before InitializeLog" warning).

    Sets ``TF_CPP_MIN_LOG_LEVEL=3`` (unless set: an explicit value wins) for the lines TensorFlow
    logs later, and holds stderr's file descriptor on /dev/null while the library loads. A
    Python exception during the import is raised as usual. Child processes inherit the setting.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if "tensorflow" in sys.modules:
        return
    with _stderr_silenced():
        import tensorflow  # noqa: F401


def limit_threads(threads: int | None) -> None:
    """Gives this process ``threads`` TensorFlow threads (intra- and inter-op) and OpenMP threads.

    Call it before the first TensorFlow operation (TensorFlow may already be imported: the
    thread pools are made at the first operation). ``None`` leaves the defaults (all cores).
    """
    if threads is None:
        return
    for var in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"):
        os.environ[var] = str(threads)
    if "tensorflow" in sys.modules:
        tf = sys.modules["tensorflow"]
        try:
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(threads)
        except (RuntimeError, AttributeError):
            pass  # already initialised: keep what it has


def use_xla_cache(directory: str | os.PathLike[str] | None) -> None:
    """Keeps XLA's compiled programs in ``directory`` and reuses them across processes.

    A job's XLA compilations (the train step, the search) cost seconds; jobs of the same shapes
    (e.g. the seeds of one sweep cell) compile the very same programs, so the second one loads
    them (TensorFlow's ``--tf_xla_persistent_cache_directory``, keyed by the program's
    fingerprint: a program is only reused for itself, so numbers do not change). Call it before
    the first compiled call. ``None`` turns nothing on.
    """
    if directory is None:
        return
    path = os.path.abspath(os.path.expanduser(os.fspath(directory)))
    os.makedirs(path, exist_ok=True)
    name = "--tf_xla_persistent_cache_directory"
    flags = [f for f in os.environ.get("TF_XLA_FLAGS", "").split() if not f.startswith(name)]
    os.environ["TF_XLA_FLAGS"] = " ".join([*flags, f"{name}={path}"])


def xla_cache_dir() -> str | None:
    """The folder :func:`use_xla_cache` gave this process's XLA programs (read back from
    ``TF_XLA_FLAGS``), or None where it gave none."""
    name = "--tf_xla_persistent_cache_directory="
    found = [f for f in os.environ.get("TF_XLA_FLAGS", "").split() if f.startswith(name)]
    return found[-1][len(name) :] or None if found else None


def seed_everything(seed: int, *, deterministic: bool = True, tensorflow: bool = True) -> None:
    """Seeds every library-level generator from ``seed`` and turns on TensorFlow op determinism.

    gradlab's own randomness comes from generators built from the job's seed; this is the safety
    net for library code (Keras initialisers and TensorFlow ops without an explicit seed): it sets
    the Python, NumPy and TensorFlow global seeds (``keras.utils.set_random_seed``) and, with
    ``deterministic``, ``tf.config.experimental.enable_op_determinism()``, so the same config and
    seed give bit-identical numbers on the same machine and thread count.

    Args:
      seed: the job's seed.
      deterministic: turn on TensorFlow op determinism (process-wide, stays on once enabled).
      tensorflow: False: seed Python's and NumPy's global generators only (what Keras' call
        does for them), importing neither Keras nor TensorFlow; ``deterministic`` is then moot.
    """
    if not tensorflow:
        import random

        import numpy as np

        random.seed(seed)
        np.random.seed(seed)
        return
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(seed)
    if deterministic:
        tf.config.experimental.enable_op_determinism()
