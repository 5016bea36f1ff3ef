"""Whether a hold on the instruction set takes effect: what oneDNN and XLA really run.

``ONEDNN_MAX_CPU_ISA=AVX2`` and ``XLA_FLAGS=--xla_cpu_max_isa=AVX2`` are read when each library
starts, and a misspelt value is ignored without a word. :func:`library_isas` starts a fresh
interpreter with the given environment, runs one oneDNN matmul (eager TensorFlow) and one
XLA-compiled function, and reports:

* ``onednn``: the ISA oneDNN says it dispatches to (its ``ONEDNN_VERBOSE`` info line, e.g.
  ``Intel AVX2``, ``Intel AVX-512 ...``); ``None`` if oneDNN printed none;
* ``xla_avx512``: whether XLA's object code for the function uses AVX-512 state (a ``zmm``
  register, an opmask ``k1``-``k7`` or ``ymm16``-``ymm31``, which only AVX-512 encodes), read
  with ``objdump -d`` from XLA's dump; ``None`` without ``objdump``.

The function has a compare and a select, so that its code needs masks: XLA vectorises for
256-bit registers (``prefer-vector-width=256``), and on an AMD EPYC (family 25, AVX-512) a
function without them (``reduce_max(relu(x @ y) * 3 + 1)``) compiled to VEX-encoded AVX2 alone,
held or not, while the same function on an Intel Xeon used AVX-512 state (2026-11-28); with
the select, its unheld code on that AMD uses opmasks and its held code none (2026-12-07; the
select was not tried on the Intel, where tests/base/test_cpu.py holds it next time it runs).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

__all__ = ["LibraryIsas", "library_isas", "uses_avx512"]

_PROGRAM = """
import tensorflow as tf
a = tf.ones([128, 64])
b = tf.ones([64, 64])
print(float(tf.linalg.matmul(a, b)[0, 0]))
f = tf.function(
    lambda x, y: tf.reduce_max(tf.where(x @ y > 2.0, tf.nn.relu(x @ y) * 3.0, 1.0), axis=1),
    jit_compile=True)
print(float(f(a, b)[0]))
"""

_AVX512_STATE = re.compile(r"zmm\d|%k[1-7]\b|ymm(1[6-9]|2\d|3[01])\b")


@dataclasses.dataclass(frozen=True)
class LibraryIsas:
    """What :func:`library_isas` found (see the module docstring)."""

    onednn: str | None
    xla_avx512: bool | None


def uses_avx512(disassembly: str) -> bool:
    """Whether ``objdump -d`` text touches AVX-512 state (zmm, opmasks, ymm16-31)."""
    return bool(_AVX512_STATE.search(disassembly))


def library_isas(environ: Mapping[str, str] | None = None, *, timeout: float = 300) -> LibraryIsas:
    """Runs the probe in a fresh interpreter with ``environ`` (this one's by default) plus
    ``ONEDNN_VERBOSE=1`` and an XLA dump folder appended to its ``XLA_FLAGS``.

    Raises:
      RuntimeError: the probe failed (its stderr's last line).
    """
    env = dict(os.environ if environ is None else environ)
    with tempfile.TemporaryDirectory(prefix="gradlab-isa-") as tmp:
        env["ONEDNN_VERBOSE"] = "1"
        env["TF_CPP_MIN_LOG_LEVEL"] = "3"
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_dump_to={tmp}".strip()
        done = subprocess.run(
            [sys.executable, "-c", _PROGRAM],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"the ISA probe failed: {last}")
        found = re.search(r"onednn_verbose,(?:v\d+,)?info,cpu,isa:(.+)", done.stdout)
        objdump = shutil.which("objdump")
        xla = None
        if objdump is not None:
            objects = sorted(Path(tmp).glob("*.o"))
            text = "".join(
                subprocess.run([objdump, "-d", str(o)], capture_output=True, text=True).stdout
                for o in objects
            )
            xla = uses_avx512(text) if objects else None
    return LibraryIsas(found.group(1).strip() if found else None, xla)
