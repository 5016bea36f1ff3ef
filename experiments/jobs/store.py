"""The results folder: stable job names, atomic writes, append-only metrics, the summary file,
resume decisions (skip, lock) and the records of jobs that ended without a summary of their own.

Layout (the source of truth; the W&B run is a mirror): the whole of a job folder, every file of
which the job writes (the report only reads it)::

    results/<ablation>/<job name>/      one job of a sweep
    results/runs/<job name>/            a single ``gradlab run``
        config.yaml     the resolved config (written atomically)
        metrics.jsonl   one JSON object per training step, append-only (:class:`MetricsWriter`;
                        not committed: ``results/.gitignore``)
        summary.json    status and figures (written atomically; ``running`` while the job runs),
                        an :class:`experiments.jobs.summary.Summary`
        curves.csv.gz   the compact curves, small enough to commit (written atomically at the end
                        of a run: :mod:`experiments.jobs.curves`)
        error.txt       the traceback of a failed job (written atomically)
        wandb/          the W&B run (written by wandb)
        .lock           held (flock) by the process running the job; freed by the kernel on a kill
        .<file>.<hex>.tmp   an atomic write under way (a killed one's is cleared by
                        :func:`discard_attempt`)

Every file but ``metrics.jsonl`` is written by one writer, :func:`write_bytes_atomic` (or its text
and JSON forms): a temporary file beside it, fsynced, renamed; mode ``0o666`` less the umask; an
error names the file.

A job's name is derived from its overrides only (``variant=scale_gradient seed=0`` ->
``variant=scale_gradient__seed=0``), so the same sweep run twice maps every job to the same folder:
that is how a sweep resumes (Hydra's multirun cannot by itself).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import re
import secrets
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from experiments.base.errors import ConfigError
from experiments.jobs.summary import Summary, library_versions

__all__ = [
    "BOOKKEEPING_KEYS",
    "FINISHED",
    "MetricsWriter",
    "ablation_dir",
    "discard_attempt",
    "is_bookkeeping",
    "job_lock",
    "job_locked",
    "job_name",
    "load_summary",
    "mark_interrupted",
    "parse_overrides",
    "read_metrics",
    "read_summary",
    "record_failed",
    "should_run",
    "write_bytes_atomic",
    "write_config",
    "write_json_atomic",
    "write_summary",
    "write_text_atomic",
]

FINISHED = ("completed", "diverged", "timeout")
"""Statuses (:data:`experiments.jobs.summary.STATUSES`) of a job that is done: a re-run skips it
(``failed``, ``interrupted`` and ``running`` are re-run).
The report averages fewer (:data:`experiments.report.runs.results.AVERAGED`: a timed-out run is
done
but stopped short of its planned steps)."""

BOOKKEEPING_KEYS = ("ablation", "logger", "runtime")
"""Override keys (and key prefixes before a dot) that never change a job's numbers and so are left
out of its name: where results go, how they are logged, how many threads run them."""

RUNS = "runs"  # the folder of single runs, which belong to no ablation

SUMMARY_FILE = "summary.json"

_MAX_NAME = 200  # characters of a job's folder name

_UNSAFE = re.compile(r"[^A-Za-z0-9._=,+@%-]")


def parse_overrides(overrides: Iterable[str]) -> dict[str, str]:
    """Splits ``key=value`` override strings into a dict, in order.

    Hydra's prefixes (``+``, ``++``) are dropped; a deletion (``~key``) is kept as ``~key`` with an
    empty value.

    Raises:
      ConfigError: an override without ``=`` (other than a deletion).
    """
    out: dict[str, str] = {}
    for item in overrides:
        if item.startswith("~"):
            key, _, value = item.partition("=")
            out[key] = value
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.lstrip("+"):
            raise ConfigError(
                f"override {item!r} is not of the form key=value (e.g. seed=0, variant=none)"
            )
        out[key.lstrip("+")] = value
    return out


def is_bookkeeping(key: str) -> bool:
    """Whether an override key is bookkeeping (see :data:`BOOKKEEPING_KEYS`), not a setting."""
    head = key.lstrip("~").split(".", 1)[0].split("/", 1)[0]
    return head in BOOKKEEPING_KEYS or head == "hydra"


def _safe(text: str) -> str:
    text = _UNSAFE.sub("-", text.replace("/", "-"))
    return text.lstrip(".") or "_"


def job_name(overrides: Mapping[str, str] | Sequence[str]) -> str:
    """The stable, filesystem-safe folder name of a job.

    Bookkeeping keys (:data:`BOOKKEEPING_KEYS`, ``hydra...``) are dropped; the rest are sorted by
    key with ``seed`` last, joined as ``key=value`` with ``__``; characters outside
    ``[A-Za-z0-9._=,+@%-]`` become ``-``. No overrides gives ``default``. A name longer than
    200 characters keeps its start, a hash of the whole name and the seed (so distinct jobs keep
    distinct folders).

    Args:
      overrides: a mapping key -> value, or ``key=value`` strings (Hydra's job overrides).

    Returns:
      For example ``variant=scale_gradient__variant.scale=0.25__seed=0``.
    """
    items = parse_overrides(overrides) if not isinstance(overrides, Mapping) else overrides
    kept = {k: v for k, v in items.items() if not is_bookkeeping(k)}
    if not kept:
        return "default"
    keys = sorted(kept, key=lambda k: (k == "seed", k))
    parts = [_safe(f"{k}={kept[k]}") for k in keys]
    name = "__".join(parts)
    if len(name) <= _MAX_NAME:
        return name
    # Too long for a folder name: keep the start, make it unique with a hash of the whole name,
    # and keep the seed last, where a reader looks for it.
    tail = f"__{parts[-1]}" if keys[-1] == "seed" else ""
    head = name[: len(name) - len(tail)] if tail else name
    digest = hashlib.sha1(head.encode()).hexdigest()[:12]  # the seeds of a group share it
    return f"{head[: _MAX_NAME - len(tail) - 14]}__{digest}{tail}"


def ablation_dir(results_dir: str | Path, ablation: str | None) -> Path:
    """``results/<ablation>``, or ``results/runs`` for single runs (no ablation)."""
    return Path(results_dir) / (ablation if ablation else RUNS)


# --------------------------------------------------------------------------------------------
# Writing


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_text_atomic(path: str | Path, text: str) -> None:
    """Writes ``text`` (UTF-8) to ``path`` atomically (see :func:`write_bytes_atomic`)."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Writes ``data`` to ``path`` so that a reader (or a kill) sees the old file or the new one,
    never a half-written one: a temporary file in the same folder (mode ``0o666`` less the umask),
    flushed and fsynced, then renamed, and the folder fsynced. The one writer of every file of a
    job folder but ``metrics.jsonl`` (appended: :class:`MetricsWriter`).

    Raises:
      OSError: naming ``path`` (a full disk's failed write names no file by itself).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _new_temp(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise _naming(err, path) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _new_temp(path: Path) -> tuple[int, str]:
    """A new temporary file beside ``path``, open for writing: ``(fd, its path)``.

    Its mode is ``0o666`` less the process's umask, as for any file ``open`` creates (0644 under
    the usual umask 022, 0664 under a lab's 002): ``tempfile.mkstemp`` would make it 0600, and the
    rename would carry that mode to ``summary.json`` and ``config.yaml``, unreadable to the other
    members of a shared results folder.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), str(tmp)
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside '{path}'")


def _naming(err: OSError, path: Path) -> OSError:
    """``err`` with ``path`` as its file name when it has none (a failed ``write`` names no
    file: ``[Errno 28] No space left on device: 'results/.../metrics.jsonl'`` instead)."""
    if err.filename is not None or err.errno is None:
        return err
    return type(err)(err.errno, err.strerror, str(path))


def _jsonable(value: Any) -> Any:
    """Floats that JSON cannot hold (NaN, Inf) become strings ``"nan"``, ``"inf"``, ``"-inf"``."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Writes ``obj`` as indented JSON, atomically (see :func:`write_text_atomic`)."""
    write_text_atomic(path, json.dumps(_jsonable(obj), indent=2, sort_keys=False) + "\n")


class MetricsWriter:
    """Appends one JSON line per training step to ``metrics.jsonl``.

    Each row is written whole and flushed, so a kill leaves at most a torn last line, which
    :func:`read_metrics` skips. Opening starts a fresh file: a job that is re-run starts over and
    never duplicates the rows of an earlier, unfinished attempt.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: TextIO | None = open(self.path, "w", encoding="utf-8")  # noqa: SIM115
        self.rows = 0

    def append(self, row: Mapping[str, Any]) -> None:
        """Writes one row (non-finite floats as ``"nan"``/``"inf"`` strings) and flushes it."""
        if self._file is None:
            raise ValueError(f"{self.path} is closed")
        try:
            self._file.write(json.dumps(_jsonable(dict(row)), separators=(",", ":")) + "\n")
            self._file.flush()
        except OSError as err:
            raise _naming(err, self.path) from None
        self.rows += 1

    def close(self) -> None:
        """Flushes to disk and closes; safe to call twice."""
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.flush()
                os.fsync(file.fileno())
            except OSError as err:
                raise _naming(err, self.path) from None
            finally:
                with contextlib.suppress(OSError):
                    file.close()

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------------
# Reading


def _floatish(value: Any) -> Any:
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    return value


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """Reads ``metrics.jsonl`` back, tolerating a torn last line (a job killed mid-write).

    ``"nan"``/``"inf"``/``"-inf"`` strings come back as floats. A missing file gives ``[]``.

    Raises:
      ConfigError: a corrupt line anywhere but the last (the file was damaged, not torn).
    """
    path = Path(path)
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    rows = []
    for i, line in enumerate(lines):
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError("not an object")
        except ValueError:
            if i == len(lines) - 1:
                break  # torn last line: the job was killed while writing it
            raise ConfigError(
                f"{path}: line {i + 1} is not a JSON object; the metrics file is corrupt "
                "(delete the job folder to re-run it)"
            ) from None
        rows.append({k: _floatish(v) for k, v in row.items()})
    return rows


def load_summary(job_dir: str | Path) -> Summary:
    """The job's ``summary.json`` (:meth:`Summary.from_json`), for a report.

    Raises:
      ConfigError: the file is missing, unreadable or not a summary, naming it.
    """
    path = Path(job_dir) / SUMMARY_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ConfigError(f"corrupt summary file '{path}': {err}") from None
    return Summary.from_json(data, where=str(path))


def read_summary(job_dir: str | Path) -> Summary | None:
    """The job's ``summary.json``, or ``None`` when it is missing, unreadable or not a summary."""
    try:
        return load_summary(job_dir)
    except ConfigError:
        return None


def write_summary(job_dir: str | Path, summary: Summary) -> None:
    """Writes the job's ``summary.json`` (:meth:`Summary.to_json`), atomically."""
    write_json_atomic(Path(job_dir) / SUMMARY_FILE, summary.to_json())


def write_config(job_dir: str | Path, resolved: Mapping[str, Any]) -> None:
    """Writes the job's ``config.yaml`` (its resolved config, plain dicts), atomically."""
    import yaml

    text = yaml.safe_dump(dict(resolved), sort_keys=False, default_flow_style=False)
    write_text_atomic(Path(job_dir) / "config.yaml", text)


def should_run(job_dir: str | Path, *, force: bool = False) -> tuple[bool, str]:
    """Whether a job must (re-)run, and why.

    Args:
      job_dir: the job's folder.
      force: re-run even a finished job.

    Returns:
      ``(run, reason)``: ``(False, "completed")`` for a finished job (see :data:`FINISHED`),
      ``(True, "new" | "failed" | "interrupted" | "unfinished" | "forced")`` otherwise.
    """
    summary = read_summary(job_dir)
    if summary is None:
        return True, "new" if not Path(job_dir, SUMMARY_FILE).exists() else "unfinished"
    status = summary.status
    if status in FINISHED:
        return (True, "forced") if force else (False, status)
    return True, status if status in ("failed", "interrupted") else "unfinished"


def record_failed(
    job_dir: str | Path, job: str, error: str, *, ablation: str | None, trace: str
) -> Summary:
    """Records a job that ended without a summary of its own (before its start, or killed):
    status ``failed`` with ``error`` (one line), ``trace`` as its ``error.txt``; what an
    earlier summary of the job recorded is kept. Returns the summary written."""
    job_dir = Path(job_dir)
    previous = read_summary(job_dir) or Summary(status="failed")
    summary = previous.replace(
        status="failed",
        job=job,
        ablation=ablation,
        error=error,
        versions=previous.versions or library_versions(),
    )
    job_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(job_dir / "error.txt", trace)
    write_summary(job_dir, summary)
    return summary


def discard_attempt(job_dir: str | Path) -> None:
    """Clears what an earlier, unfinished (killed, failed or forced) attempt left in ``job_dir``:
    its traceback, the temporary files of an interrupted atomic write, and its W&B run (so that
    ``wandb sync`` uploads each job once). ``metrics.jsonl`` is started over by the writer."""
    job_dir = Path(job_dir)
    (job_dir / "error.txt").unlink(missing_ok=True)
    for tmp in job_dir.glob(".*.tmp"):
        tmp.unlink(missing_ok=True)
    shutil.rmtree(job_dir / "wandb", ignore_errors=True)


@contextlib.contextmanager
def job_lock(job_dir: str | Path) -> Iterator[bool]:
    """Holds an exclusive ``flock`` on ``<job_dir>/.lock`` while the job runs.

    Yields ``False`` when another live process holds it (the same job started twice, e.g. two
    invocations of one sweep). The kernel releases the lock when its holder dies, SIGKILL
    included, so a killed job never blocks its re-run.
    """
    job_dir = Path(job_dir)
    job_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(job_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def job_locked(job_dir: str | Path) -> bool:
    """Whether a live process holds the job's lock now (see :func:`job_lock`); takes nothing."""
    path = Path(job_dir) / ".lock"
    if not path.exists():
        return False
    with job_lock(job_dir) as locked:
        return not locked


def mark_interrupted(job_dir: str | Path, *, reason: str) -> bool:
    """Records a job whose process was killed while it ran (its summary still ``running``, its
    lock free: no live process holds it) as ``interrupted``, with ``reason`` as its error; its
    rows are kept. Returns whether it did (False: not running, held by a live process, or the
    folder cannot be written)."""
    first = read_summary(job_dir)
    if first is None or first.status != "running":
        return False
    try:
        with job_lock(job_dir) as locked:
            summary = read_summary(job_dir) if locked else None
            if summary is None or summary.status != "running":
                return False
            steps = len(read_metrics(Path(job_dir) / "metrics.jsonl"))
            write_summary(job_dir, summary.replace(status="interrupted", steps=steps, error=reason))
            return True
    except (OSError, ConfigError):
        return False
