"""Which CPU a figure was measured on: its model and the instruction set the libraries may use.

Speed ratios, and even numbers, depend on the CPU type: TensorFlow's oneDNN and XLA's CPU code
pick kernels by instruction set (AVX-512 where the CPU has it, else AVX2, ...). Both can be held
below what the CPU has, to try an AVX2 machine's code on an AVX-512 one:
``ONEDNN_MAX_CPU_ISA=AVX2`` (oneDNN) and ``XLA_FLAGS=--xla_cpu_max_isa=AVX2`` (XLA), both read
when the library starts. :func:`describe` is the one line a benchmark prints beside its ratios;
it says what the CPU has and what each library was held to (a hold on one library and not the
other is named as such, since then the two run different code).
"""

from __future__ import annotations

import dataclasses
import os
import platform
import re
from collections.abc import Mapping

__all__ = ["CpuType", "cpu_type", "cpuinfo", "describe", "isa_of_flags"]

# From the widest down: the first family whose flag the CPU has is its instruction set.
_FAMILIES = (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"), ("sse4_2", "SSE4.2"))


def isa_of_flags(flags: set[str]) -> str:
    """The widest vector instruction set among ``/proc/cpuinfo`` flags (``"other"`` if none)."""
    for flag, name in _FAMILIES:
        if flag in flags:
            return name
    return "other"


@dataclasses.dataclass(frozen=True)
class CpuType:
    """A CPU as a figure's reader needs it.

    Attributes:
      model: the model name (``/proc/cpuinfo``'s ``model name``; else ``platform.processor()``).
      isa: the widest instruction set the CPU has (:func:`isa_of_flags`).
      onednn_hold: ``ONEDNN_MAX_CPU_ISA`` if set, else None.
      xla_hold: ``--xla_cpu_max_isa`` from ``XLA_FLAGS`` if set, else None.
    """

    model: str
    isa: str
    onednn_hold: str | None
    xla_hold: str | None

    def __str__(self) -> str:
        return describe(self)


def cpuinfo(text: str | None = None) -> tuple[str | None, set[str]]:
    """The first ``model name`` (None if none) and ``flags`` of a ``/proc/cpuinfo`` text (this
    machine's when None; an unreadable file reads as empty)."""
    if text is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            text = ""
    model = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    flags = re.search(r"^flags\s*:\s*(.+)$", text, re.MULTILINE)
    return (
        model.group(1).strip() if model else None,
        set(flags.group(1).split()) if flags else set(),
    )


def _xla_hold(xla_flags: str) -> str | None:
    """The last ``--xla_cpu_max_isa=VALUE`` of an ``XLA_FLAGS`` string (XLA keeps the last)."""
    found = re.findall(r"--xla_cpu_max_isa=(\S+)", xla_flags)
    return found[-1] if found else None


def cpu_type(*, text: str | None = None, environ: Mapping[str, str] | None = None) -> CpuType:
    """This machine's CPU type and the holds in force (``text``: a ``/proc/cpuinfo`` text, and
    ``environ``, for tests)."""
    env = os.environ if environ is None else environ
    model, flags = cpuinfo(text)
    return CpuType(
        model=model or platform.processor() or "unknown CPU",
        isa=isa_of_flags(flags),
        onednn_hold=env.get("ONEDNN_MAX_CPU_ISA") or None,
        xla_hold=_xla_hold(env.get("XLA_FLAGS", "")),
    )


def describe(cpu: CpuType | None = None) -> str:
    """One line: ``"<model>, AVX-512"``, or with holds ``"<model>, AVX-512, held to AVX2 (oneDNN
    AVX2, XLA AVX2)"``; a hold on one library only says the other is not held."""
    cpu = cpu_type() if cpu is None else cpu
    line = f"{cpu.model}, {cpu.isa}"
    if cpu.onednn_hold is None and cpu.xla_hold is None:
        return line
    onednn = cpu.onednn_hold or "not held"
    xla = cpu.xla_hold or "not held"
    if cpu.onednn_hold and cpu.xla_hold and cpu.onednn_hold.upper() == cpu.xla_hold.upper():
        return f"{line}, held to {cpu.xla_hold.upper()} (oneDNN {onednn}, XLA {xla})"
    return f"{line}, held unevenly (oneDNN {onednn}, XLA {xla})"
