"""Reading a W&B run file (``run-*.wandb``) back, independently of the W&B client's reader (W&B
0.31 has no public one): the ``wandb_internal_pb2.Record`` objects it holds."""

from __future__ import annotations

import struct
import time
from pathlib import Path


def record_objects(run_file: Path):
    """The ``wandb_internal_pb2.Record`` objects of a W&B run file: a 7-byte header, then
    LevelDB-log records (32 KiB blocks; each piece has a 7-byte header: CRC, length, type 1
    full / 2 first / 3 middle / 4 last)."""
    from wandb.proto import wandb_internal_pb2

    data = Path(run_file).read_bytes()
    assert data[:4] == b":W&B"
    block, pos, pieces = 32768, 7, []
    while pos + 7 <= len(data):
        left = block - pos % block
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if left < 7 or (kind == 0 and length == 0):  # block trailer / padding
            pos += left
            continue
        pieces.append(data[pos + 7 : pos + 7 + length])
        pos += 7 + length
        if kind in (1, 4):
            yield wandb_internal_pb2.Record.FromString(b"".join(pieces))
            pieces = []


def records(run_file: Path) -> list[tuple[str, int]]:
    """The records of a W&B run file as ``(type, step)`` pairs (step 0 for all but history)."""
    out = []
    for record in record_objects(run_file):
        which = record.WhichOneof("record_type")
        out.append((which, record.history.step.num if which == "history" else 0))
    return out


def wait_for_exit(run_file: Path, timeout_s: float = 30.0) -> list[tuple[str, int]]:
    """The records of a finished run's file, once its ``exit`` record is there. W&B's service
    process writes the file, and ``run.finish()`` can return before it has written all of it
    (seen about once in 20 first runs of a process), so this waits, at most ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    found = records(run_file)
    while ("exit", 0) not in found and time.monotonic() < deadline:
        time.sleep(0.05)
        found = records(run_file)
    assert ("exit", 0) in found, f"{run_file} has no exit record after {timeout_s} s"
    return found
