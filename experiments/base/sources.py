"""The ``experiments`` package's source files as one SHA-256, read when the package is imported.

:mod:`experiments.muzero.runtime.graph_store` keys a stored graph by the code that traced it. The
package's ``__init__`` reads :func:`fingerprint_or_none` first thing, before any module that
shapes a graph is imported, so the value names the code this process runs (a file edited after
that is caught when a graph is written: the files are read again then).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["PACKAGE", "fingerprint", "fingerprint_or_none"]

PACKAGE = Path(__file__).resolve().parents[1]
"""The ``experiments`` package's folder."""


def fingerprint(root: Path = PACKAGE) -> str:
    """SHA-256 of every ``.py`` file under ``root`` (relative paths and bytes, in sorted order)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def fingerprint_or_none(root: Path = PACKAGE) -> str | None:
    """:func:`fingerprint`, or None where a file cannot be read (a dangling link, permissions)."""
    try:
        return fingerprint(root)
    except OSError:
        return None
