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
