"""Module-level job targets for tests/jobs/test_hosting.py (a host unpickles them by reference)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path


def record(out: str, *, session: dict) -> None:
    """Writes what the job saw (pid, cwd, one environment variable, the session's count)."""
    session["jobs"] = session.get("jobs", 0) + 1
    Path(out).write_text(
        json.dumps(
            {
                "pid": os.getpid(),
                "cwd": os.getcwd(),
                "env": os.environ.get("GRADLAB_HOST_TEST"),
                "jobs": session["jobs"],
            }
        )
    )


def kill_self(*, session: dict) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def raise_error(*, session: dict) -> None:
    raise RuntimeError("a job that raises")


def _double(x):
    return x * 2.0


def _square(x):
    return x * x


def compile_programs(names: list[str], cache_dir: str, *, session: dict) -> list[str]:
    """Traces, compiles and runs ``names`` (``"double"``, ``"square"``: ``tf.function`` with
    ``jit_compile``) in this order, XLA's persistent cache in ``cache_dir`` as a job sets it
    (``use_xla_cache`` first); returns the traced functions' names."""
    from experiments.base.process import use_xla_cache

    use_xla_cache(cache_dir)
    import tensorflow as tf

    functions = {"double": _double, "square": _square}
    traced = []
    for name in names:
        compiled = tf.function(functions[name], jit_compile=True)
        concrete = compiled.get_concrete_function(tf.TensorSpec([2], tf.float32))
        concrete(tf.constant([1.0, 2.0]))
        traced.append(str(concrete.name))
    return traced
