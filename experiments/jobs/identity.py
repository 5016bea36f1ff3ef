"""What a run or a study record is: the code's identity, a run config's hash, UTC times.

One definition each, used by the runs (:mod:`experiments.jobs.summary`) and the study records
(:mod:`experiments.protocols.study.record`) alike, so that the audit
(:mod:`experiments.protocols.study.audit`)
compares like with like.

* **Code identity** (:func:`code_identity`): the git commit of the tree holding the code (None
  where there is no git or no repository), whether that tree is dirty in the paths that define a
  run (:data:`PINNED_PATHS`; None without git), and ``tree_sha256``: SHA-256 over every file of
  ``experiments/`` and ``conf/`` (``__pycache__`` folders, ``*.pyc`` and hidden files left out),
  in sorted path order, each contributing ``path`` (POSIX, relative to the root, e.g.
  ``conf/config.yaml``), a NUL byte, the file's own SHA-256 (32 bytes). It needs no git.
* **Config hash** (:func:`config_fingerprint`): SHA-256 of the canonical JSON (sorted keys, no
  spaces) of a run config flattened to dotted keys, without ``runtime.*``, ``logger.*`` and the
  seed: what an arm is, the same object a study record stores per arm (``arm_configs``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

__all__ = [
    "PINNED_PATHS",
    "CodeIdentity",
    "code_identity",
    "config_fingerprint",
    "file_sha256",
    "flat_config",
    "package_root",
    "utc_now",
]

PINNED_PATHS = ("experiments", "conf", "cli", "hydra_plugins", "pyproject.toml")
"""The paths whose uncommitted changes make a tree dirty: everything that decides what a run
does or how it is counted (the code, the configs, the command line, the sweeper, the package's
dependencies). Other paths (docs, tests, results) never change a run."""

_HASHED = ("experiments", "conf")


@dataclasses.dataclass(frozen=True)
class CodeIdentity:
    """The code a run ran with or a record was registered from.

    Attributes:
      commit: the git commit (40 hex digits), or None without git or a repository.
      dirty: uncommitted changes in :data:`PINNED_PATHS`; None without git.
      tree_sha256: the hash of ``experiments/`` and ``conf/`` (module docstring).
    """

    commit: str | None
    dirty: bool | None
    tree_sha256: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> CodeIdentity | None:
        """The identity of a summary's or record's ``code`` object; None for anything else."""
        if not isinstance(data, dict) or not isinstance(data.get("tree_sha256"), str):
            return None
        commit, dirty = data.get("commit"), data.get("dirty")
        return cls(
            commit=commit if isinstance(commit, str) else None,
            dirty=dirty if isinstance(dirty, bool) else None,
            tree_sha256=data["tree_sha256"],
        )


def package_root() -> Path:
    """The folder holding ``experiments/`` and ``conf/`` of this gradlab."""
    return Path(__file__).resolve().parents[2]


def utc_now() -> str:
    """Now, UTC, ISO 8601 to the microsecond: ``2026-11-27T03:04:05.123456Z``."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_utc(text: Any) -> dt.datetime | None:
    """An ISO 8601 UTC time (``...Z`` or ``+00:00``) as an aware datetime; None if not one."""
    if not isinstance(text, str):
        return None
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def file_sha256(data: bytes | str) -> str:
    """SHA-256 (hex) of a file's bytes (text is encoded as UTF-8)."""
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def _files(root: Path) -> list[tuple[str, Path]]:
    out = []
    for top in _HASHED:
        base = root / top
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            rel = path.relative_to(root)
            if (
                not path.is_file()
                or path.suffix == ".pyc"
                or any(p == "__pycache__" or p.startswith(".") for p in rel.parts)
            ):
                continue
            out.append((rel.as_posix(), path))
    return sorted(out)


def tree_sha256(root: str | Path) -> str:
    """SHA-256 over the files of ``root/experiments`` and ``root/conf`` (module docstring)."""
    digest = hashlib.sha256()
    for rel, path in _files(Path(root)):
        digest.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=False, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def code_identity(root: str | Path | None = None) -> CodeIdentity:
    """The identity of the code under ``root`` (default :func:`package_root`).

    Args:
      root: the folder holding ``experiments/`` and ``conf/`` (a missing one hashes as empty).
    """
    root = Path(root) if root is not None else package_root()
    head = _git(root, "rev-parse", "HEAD")
    commit = head.strip() if head and head.strip() else None
    dirty = None
    if commit is not None:
        status = _git(root, "status", "--porcelain", "--", *PINNED_PATHS)
        dirty = None if status is None else bool(status.strip())
    return CodeIdentity(commit=commit, dirty=dirty, tree_sha256=tree_sha256(root))


def dirty_paths(root: str | Path) -> list[str]:
    """The paths of :data:`PINNED_PATHS` with uncommitted changes (``git status --porcelain``
    lines); empty without git."""
    status = _git(Path(root), "status", "--porcelain", "--", *PINNED_PATHS)
    return [line[3:] for line in (status or "").splitlines() if line.strip()]


def flat_config(value: Any) -> dict[str, Any]:
    """A run config (a :class:`~experiments.config.RunConfig` or its ``asdict``) as the dotted
    keys an arm is compared on: JSON values, ``runtime.*``, ``logger.*`` and ``seed`` left out."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    plain = json.loads(json.dumps(value))

    def flatten(item: Any, prefix: str) -> dict[str, Any]:
        if isinstance(item, dict):
            out: dict[str, Any] = {}
            for key, sub in item.items():
                out.update(flatten(sub, f"{prefix}{key}."))
            return out
        return {prefix[:-1]: item}

    flat = flatten(plain, "")
    return {
        k: v for k, v in flat.items() if not k.startswith(("runtime.", "logger.")) and k != "seed"
    }


def config_fingerprint(flat: dict[str, Any]) -> str:
    """SHA-256 of a flat config's canonical JSON (:func:`flat_config`)."""
    return file_sha256(json.dumps(flat, sort_keys=True, separators=(",", ":")))
