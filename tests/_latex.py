"""Compiling a LaTeX table in a plain document, for the tests that check it fits: the engine
found on PATH (the tests skip without one), the document, and the problems its log reports."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

ENGINES = ("pdflatex", "lualatex", "tectonic")


def engine() -> str | None:
    """The first LaTeX engine on PATH, or None."""
    return next((e for e in ENGINES if shutil.which(e)), None)


def compile_table(table_tex: str, folder: Path, *, two_column: bool = False) -> str:
    """Compiles ``table_tex`` in a plain ``article`` with booktabs (``two_column``: the
    ``twocolumn`` option, each ``table`` float as ``table*``); returns the log. Overfull boxes
    are reported from 0pt on (``\\hfuzz=0pt``), so any excess width shows."""
    if two_column:
        table_tex = table_tex.replace(r"\begin{table}", r"\begin{table*}")
        table_tex = table_tex.replace(r"\end{table}", r"\end{table*}")
    options = "twocolumn" if two_column else ""
    doc = (
        f"\\documentclass[{options}]{{article}}\n\\usepackage{{booktabs}}\n\\hfuzz=0pt\n"
        f"\\begin{{document}}\n{table_tex}\n\\end{{document}}\n"
    )
    (folder / "doc.tex").write_text(doc)
    name = engine()
    args = (
        ["--keep-logs", "doc.tex"]
        if name == "tectonic"
        else ["-interaction=nonstopmode", "-halt-on-error", "doc.tex"]
    )
    done = subprocess.run([name, *args], cwd=folder, capture_output=True, text=True, timeout=180)
    log = (folder / "doc.log").read_text(errors="replace")
    assert done.returncode == 0, log[-3000:]
    assert (folder / "doc.pdf").stat().st_size > 1000
    return log


def problems(log: str) -> list[str]:
    """The log's lines saying a float is taller than the page or a box overfull."""
    return re.findall(r"^(?:LaTeX Warning: Float too large.*|Overfull \\[hv]box.*)$", log, re.M)


def pages(log: str) -> int:
    """The pages the PDF has, from the log's last line about it."""
    return int(re.search(r"Output written on \S+ \((\d+) pages?", log).group(1))
