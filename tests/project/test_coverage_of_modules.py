"""Every module of gradlab's code is imported by some test, or named in :data:`THROUGH` with the
test that exercises it and why no test imports it directly.

Modules: every ``.py`` of ``experiments/``, ``cli/``, ``gradlab/`` and ``hydra_plugins/`` but a
package's ``__init__`` (the package's face; importing any of its modules imports it). A test
imports a module (read with ``ast``, anywhere in the file, in ``tests/`` and its helpers) by
``import a.b.c``, ``from a.b.c import name``, ``from a.b import c``, or a name a package's
``__init__`` re-exports from it (``from experiments.report import name``, ``import gradlab`` then
``gradlab.scores``), followed through the ``__init__`` to the module that defines it.

An entry of :data:`THROUGH` is checked too: its module exists, no test imports it (else the entry
goes), and it is reached from the test it names: through the imports of the code the test
imports (every ``import``, top-level or inside a function), or a module's name as a string there
(a module the job process server preloads by name; ``python -m cli`` runs ``cli.__main__``).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
PACKAGES = ("experiments", "cli", "gradlab", "hydra_plugins")

_CLI = "tests/cli/test_cli_jobs.py"
THROUGH: dict[str, tuple[str, str]] = {
    # the command line: each command module is reached through cli.main's app (CliRunner)
    "cli.__main__": ("tests/cli/test_outputs_refuse_inputs.py", "python -m cli --help"),
    "cli._live": ("tests/cli/test_cli_explain.py", "gradlab explain's (and bench's) start"),
    "cli.explain": ("tests/cli/test_cli_explain.py", "gradlab explain through CliRunner"),
    "cli.export": ("tests/report/test_export.py", "gradlab export through CliRunner"),
    "cli.jobs": (_CLI, "gradlab run, sweep and list through CliRunner"),
    "cli.pool": ("tests/report/test_pooled.py", "gradlab pool through CliRunner"),
    "cli.report": ("tests/cli/test_cli_report.py", "gradlab table and plot through CliRunner"),
    # the library behind a command, checked through that command or its entry function
    "experiments.bench.end_to_end": ("tests/bench/test_bench.py", "gradlab bench's quick suite"),
    "experiments.protocols.calibration.counts": (
        "tests/protocols/test_calibrate.py", "a rung's counts by hand, through the protocol"),
    "experiments.protocols.calibration.plan": (
        "tests/protocols/test_calibrate.py", "gradlab calibrate's checks before anything runs"),
    "experiments.protocols.study.rate_plan": (
        "tests/protocols/test_study.py", "gradlab study plan on a rate endpoint"),
    "experiments.protocols.study.value_plan": (
        "tests/protocols/test_reference.py", "gradlab study plan on a value endpoint"),
    "experiments.report.export.files": (
        "tests/report/test_export.py", "the CSV/parquet files of gradlab export"),
    "experiments.report.figures.drawing": (
        "tests/report/test_report_plots.py", "every figure's lines and bands, by hand"),
    "experiments.report.figures.final_returns": (
        "tests/report/test_report_plots.py", "the final-return figure, by hand"),
    "experiments.report.pool.table": ("tests/report/test_pooled.py", "gradlab pool's table"),
    "experiments.report.runs.declared": (
        "tests/report/test_pooled.py", "a study's registered primary, read by gradlab pool"),
    "experiments.report.runs.endpoints": (
        "tests/verdicts/test_outcome.py", "the endpoint columns on hand-built and committed runs"),
    "experiments.report.table.caption": (
        "tests/report/test_report_render.py", "captions rendered and compared"),
    "experiments.report.table.cells": (
        "tests/report/test_report_tables.py", "hand-computed cells through summarize"),
    "experiments.report.table.design": (
        "tests/report/test_report_tables.py", "the table's design through summarize"),
    "experiments.report.table.latex": (
        "tests/report/test_report_latex.py", "the LaTeX table through render, compiled"),
    # a job's own steps and process plumbing, run by the runner or a job process
    "experiments.jobs.start": ("tests/jobs/test_runner.py", "a job's start, through run_job"),
    "experiments.jobs.finish": ("tests/jobs/test_runner.py", "a job's summary, through run_job"),
    "experiments.jobs.process._dies_with_parent": (
        "tests/jobs/test_hosting.py", "preloaded by name by the job process server"),
    "experiments.jobs.process._preload_tensorflow": (
        "tests/jobs/test_isolation.py", "preloaded by name in a job's own process"),
    "experiments.muzero.runtime._worker": (
        "tests/muzero/test_batches.py", "the worker thread of batches and deferred evaluations"),
}  # fmt: skip
"""Module -> (the test that exercises it, how), for modules no test imports directly."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _sources() -> dict[str, Path]:
    """Module name -> file, packages' ``__init__`` included."""
    return {
        _module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def _modules() -> list[str]:
    """The modules to cover: every one but a package's ``__init__``."""
    return [name for name, path in _sources().items() if path.name != "__init__.py"]


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _absolute(module: str | None, level: int, package: str) -> str:
    """A ``from`` import's module, absolute (``package``: the importing package)."""
    if not level:
        return module or ""
    base = package.split(".")[: len(package.split(".")) - level + 1]
    return ".".join([*base, *([module] if module else [])])


@cache
def _reexports(package: str) -> dict[str, tuple[str, str]]:
    """Name -> (module, name there) for each ``from ... import`` of a package's ``__init__``."""
    path = _sources().get(package)
    if path is None or path.name != "__init__.py":
        return {}
    found = {}
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            for alias in node.names:
                found[alias.asname or alias.name] = (base, alias.name)
    return found


def _resolve(module: str, name: str, seen: frozenset = frozenset()) -> set[str]:
    """The modules ``from module import name`` imports: ``module.name`` when that is a module,
    else ``module`` and, where its ``__init__`` re-exports ``name``, the module defining it."""
    sources = _sources()
    if f"{module}.{name}" in sources:
        return {f"{module}.{name}"}
    found = {module} if module in sources else set()
    origin = _reexports(module).get(name)
    if origin and (module, name) not in seen:
        found |= {origin[0]} & set(sources)
        found |= _resolve(*origin, seen | {(module, name)})
    return found


@cache
def imported_by(path: Path, package: str = "") -> frozenset[str]:
    """The modules of :data:`PACKAGES` the file at ``path`` imports (see the module docstring)."""
    sources = _sources()
    found: set[str] = set()
    aliases: dict[str, str] = {}
    tree = _tree(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in sources:
                    found.add(alias.name)
                    if alias.asname or "." not in alias.name:
                        aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node.module, node.level, package)
            if module in sources:
                found.add(module)
            for alias in node.names:
                found |= _resolve(module, alias.name)
    for node in ast.walk(tree):  # ``import gradlab`` then ``gradlab.scores``
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in aliases:
                found |= _resolve(aliases[node.value.id], node.attr)
    return frozenset(found)


@cache
def _named_by_string(path: Path) -> frozenset[str]:
    """Modules whose dotted name is a string constant of the file (loaded by name), and the
    ``__main__`` of a package so named (``python -m``)."""
    sources = _sources()
    found = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in sources:
            found |= {node.value, f"{node.value}.__main__"} & set(sources)
    return frozenset(found)


def _test_files() -> list[Path]:
    return sorted(TESTS.rglob("*.py"))


@cache
def _imported_by_tests() -> frozenset[str]:
    return frozenset(name for path in _test_files() for name in imported_by(path))


def _reached_from(test: Path) -> set[str]:
    """Every module reached from the test file: its imports, then theirs (a code module's own
    imports, and the names it loads by string), transitively."""
    sources = _sources()
    frontier = set(imported_by(test) | _named_by_string(test))
    reached: set[str] = set()
    while frontier:
        name = frontier.pop()
        if name in reached:
            continue
        reached.add(name)
        path = sources[name]
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        frontier |= imported_by(path, package) | _named_by_string(path)
        parts = name.split(".")  # importing a.b.c runs a/__init__ and a/b/__init__ first
        frontier |= {".".join(parts[:i]) for i in range(1, len(parts))} & set(sources)
    return reached


def test_every_module_is_imported_by_a_test_or_listed():
    missing = [m for m in _modules() if m not in _imported_by_tests() and m not in THROUGH]
    assert missing == [], (
        f"no test imports {missing}: add a test, or an entry to THROUGH naming the test that "
        "exercises it and how"
    )


def test_each_listed_module_exists_and_is_imported_by_no_test():
    assert [m for m in THROUGH if m not in _modules()] == [], "listed, but no such module"
    imported = sorted(m for m in THROUGH if m in _imported_by_tests())
    assert imported == [], f"a test imports these now: drop them from THROUGH: {imported}"


def test_each_listed_module_is_reached_from_its_test():
    unreached = {}
    for module, (test, _) in THROUGH.items():
        path = ROOT / test
        assert path.is_file(), f"{module}: {test} is no test file"
        if module not in _reached_from(path):
            unreached[module] = test
    assert unreached == {}, "these tests do not reach the module they are said to exercise"


def test_the_import_reader_by_hand(tmp_path):
    """The reader on a hand-written file: each form of import, and a re-export followed to the
    module that defines the name."""
    source = tmp_path / "test_x.py"
    source.write_text(
        "import experiments.jobs.store\n"
        "from experiments.report.runs import counting\n"
        "from experiments.muzero.support_sizes import h_scalar\n"
        "import gradlab\n"
        "def f():\n"
        "    from cli import _errors\n"
        "    return gradlab.scores\n",
        encoding="utf-8",
    )
    assert imported_by(source) == {
        "experiments.jobs.store",
        "experiments.report.runs",
        "experiments.report.runs.counting",
        "experiments.muzero.support_sizes",
        "gradlab",
        "gradlab._export",
        "cli",
        "cli._errors",
    }


def test_reach_follows_imports_and_names_only():
    """A test of the replay buffer reaches no table code; the job host's test reaches the module
    the server preloads by name; ``python -m cli`` reaches ``cli.__main__``."""
    replay = _reached_from(TESTS / "muzero" / "test_replay.py")
    assert "experiments.muzero.replay" in replay
    assert not {"experiments.report.table.latex", "cli.report"} & replay
    hosting = _reached_from(TESTS / "jobs" / "test_hosting.py")
    assert "experiments.jobs.process._dies_with_parent" in hosting
    assert "cli.__main__" in _reached_from(TESTS / "cli" / "test_outputs_refuse_inputs.py")
