"""The CPU type beside every speed figure, and whether an instruction-set hold takes effect."""

from __future__ import annotations

import shutil

import pytest

from experiments.base.cpu import CpuType, cpu_type, describe, isa_of_flags
from experiments.bench.isa import library_isas, uses_avx512

XEON = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu sse4_2 avx avx2 avx512f avx512bw
processor\t: 1
model name\t: Intel(R) Xeon(R) Processor
"""
EPYC = """model name\t: AMD EPYC 7B13
flags\t\t: fpu sse4_2 avx avx2 fma
"""


@pytest.mark.parametrize(
    ("flags", "isa"),
    [
        ({"sse4_2", "avx", "avx2", "avx512f"}, "AVX-512"),
        ({"sse4_2", "avx", "avx2"}, "AVX2"),
        ({"sse4_2", "avx"}, "AVX"),
        ({"sse4_2"}, "SSE4.2"),
        ({"neon"}, "other"),
    ],
)
def test_the_widest_family_names_the_instruction_set(flags, isa):
    assert isa_of_flags(flags) == isa


def test_cpu_type_reads_model_flags_and_both_holds():
    env = {
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "XLA_FLAGS": "--xla_cpu_max_isa=SSE4_2 --xla_cpu_max_isa=AVX2",
    }
    cpu = cpu_type(text=XEON, environ=env)
    # the last --xla_cpu_max_isa is the one XLA keeps
    assert cpu == CpuType("Intel(R) Xeon(R) Processor", "AVX-512", "AVX2", "AVX2")
    assert describe(cpu) == (
        "Intel(R) Xeon(R) Processor, AVX-512, held to AVX2 (oneDNN AVX2, XLA AVX2)"
    )


def test_describe_without_holds_and_with_an_uneven_hold():
    assert describe(cpu_type(text=EPYC, environ={})) == "AMD EPYC 7B13, AVX2"
    uneven = cpu_type(text=XEON, environ={"ONEDNN_MAX_CPU_ISA": "AVX2"})
    assert describe(uneven) == (
        "Intel(R) Xeon(R) Processor, AVX-512, held unevenly (oneDNN AVX2, XLA not held)"
    )


def test_a_missing_cpuinfo_still_names_something():
    cpu = cpu_type(text="", environ={})
    assert cpu.isa == "other" and cpu.model


@pytest.mark.parametrize(
    ("line", "avx512"),
    [
        ("vfmadd231ps %zmm1,%zmm2,%zmm3", True),
        ("vmovups %ymm17,(%rax)", True),
        ("vaddps %ymm1,%ymm2,%ymm3{%k1}", True),
        ("vfmadd231ps %ymm1,%ymm2,%ymm15", False),
        ("vmovaps %xmm0,%xmm1", False),
    ],
)
def test_avx512_state_in_a_disassembly(line, avx512):
    assert uses_avx512(line) is avx512


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump (binutils)")
def test_an_avx2_hold_reaches_onednn_and_xla(monkeypatch):
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_max_isa=AVX2")
    held = library_isas()
    assert held.onednn is not None and "AVX2" in held.onednn and "512" not in held.onednn
    assert held.xla_avx512 is False
    if cpu_type().isa == "AVX-512":  # the same probe unheld uses AVX-512: the check can fail
        monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")
        monkeypatch.delenv("XLA_FLAGS")
        native = library_isas()
        assert native.xla_avx512 is True
        assert native.onednn is not None and "512" in native.onednn
