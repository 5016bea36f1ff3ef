"""The import graph of experiments/ and cli/, computed from the source (ast): no cycle, and no
import back up (the library never imports the command line; a job never imports the report).

An edge is every ``import``/``from ... import`` a module makes, at its top or inside a function (a
lazy import closes a loop as surely as a top-level one), to a module of these two packages:
``from pkg import name`` goes to ``pkg.name`` when that is a module, else to ``pkg`` (its
``__init__``). The package a module sits in is not an edge of its own (every submodule would
otherwise "import" its package's ``__init__``, which re-exports it).

Imports under ``if TYPE_CHECKING:`` are left out: they never run, so they cannot meet a half-
initialised module, and with ``from __future__ import annotations`` they only name the types of
annotations (``tasks/registry.py`` names ``TaskConfig``, the argument its makers read, while
``tasks/config.py`` asks the registry for a task's facts: a type named both ways, not a loop of
code).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("experiments", "cli")


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources(root: Path = ROOT) -> dict[str, Path]:
    """Module name -> file, for every module of :data:`PACKAGES` under ``root``."""
    return {
        _module_name(path, root): path
        for package in PACKAGES
        for path in sorted((root / package).rglob("*.py"))
    }


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree`` but those under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of :data:`PACKAGES` it imports (see the module docstring)."""
    sources = _sources(root)
    graph: dict[str, set[str]] = {}
    for name, path in sources.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
                continue
            base = node.module or ""
            if node.level:  # relative: from the module's package, up level - 1 more
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in sources else base)
        # `import a.b.c` names a.b.c; keep the longest known module of each target
        resolved = set()
        for target in targets:
            parts = target.split(".")
            while parts and ".".join(parts) not in sources:
                parts.pop()
            if parts:
                resolved.add(".".join(parts))
        graph[name] = resolved - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(found)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_graph_finds_a_lazy_cycle_and_leaves_type_checking_out(tmp_path):
    """A hand-made tree: a <-> b through a function's import is a cycle; c -> d under
    TYPE_CHECKING with d -> c is not; relative and from-package imports resolve to modules."""
    _write(
        tmp_path,
        {
            "experiments/__init__.py": "",
            "experiments/p/__init__.py": "from experiments.p.a import x\n",
            "experiments/p/a.py": "from experiments.p.b import y\nx = 1\n",
            "experiments/p/b.py": "def f():\n    from experiments.p import a\ny = 2\n",
            "experiments/c.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from experiments.d import D\nelse:\n    import os\n"
            ),
            "experiments/d.py": "from . import c\nfrom .p import a\n",
            "cli/__init__.py": "",
            "cli/main.py": "import experiments.p.a\n",
        },
    )
    graph = import_graph(tmp_path)
    assert graph["experiments.p.b"] == {"experiments.p.a"}
    assert graph["experiments.c"] == set()
    assert graph["experiments.d"] == {"experiments.c", "experiments.p.a"}
    assert graph["cli.main"] == {"experiments.p.a"}
    assert graph["experiments.p"] == {"experiments.p.a"}
    assert cycles(graph) == [["experiments.p.a", "experiments.p.b"]]


def test_no_import_cycle():
    assert cycles(import_graph()) == []


@pytest.mark.parametrize(
    ("lower", "higher"),
    [
        ("experiments", "cli"),  # the library never drives the command line
        ("experiments.jobs", "experiments.report"),  # a job writes its folder; the report reads it
    ],
)
def test_no_import_back_up(lower, higher):
    back_up = sorted(
        f"{source} -> {target}"
        for source, targets in import_graph().items()
        if source == lower or source.startswith(f"{lower}.")
        for target in targets
        if target == higher or target.startswith(f"{higher}.")
    )
    assert back_up == []


PROCESS_ROOM = "experiments.jobs.process"
"""The job's process plumbing (its own process, the process server, how its processes end)."""


def process_room_breaches(graph: dict[str, set[str]]) -> list[str]:
    """Edges into :data:`PROCESS_ROOM` not through its door: a module of the job's own work (the
    rest of ``experiments.jobs``) importing it at all, or any module outside it importing a
    module inside it rather than the package (its ``__init__``'s public names)."""
    room = PROCESS_ROOM

    def inside(module: str) -> bool:
        return module == room or module.startswith(f"{room}.")

    def breach(source: str, target: str) -> bool:
        if target.startswith(f"{room}."):
            return True
        return target == room and source.startswith("experiments.jobs.")

    return sorted(
        f"{source} -> {target}"
        for source, targets in graph.items()
        if not inside(source)
        for target in targets
        if breach(source, target)
    )


def test_the_process_room_has_one_door():
    assert process_room_breaches(import_graph()) == []
    made = {
        "experiments.jobs.runner": {"experiments.jobs.process"},
        "experiments.launch.a": {"experiments.jobs.process.hosting"},
        "experiments.launch.b": {"experiments.jobs.process"},
        "experiments.jobs.process.isolation": {"experiments.jobs.process.hosting"},
    }
    assert process_room_breaches(made) == [
        "experiments.jobs.runner -> experiments.jobs.process",
        "experiments.launch.a -> experiments.jobs.process.hosting",
    ]


LAYERS = (
    ("experiments.base",),
    ("experiments.gradients", "experiments.tasks"),
    ("experiments.muzero",),
    ("experiments.verdicts",),
    ("experiments.config",),
    ("experiments.jobs",),
    ("experiments.launch",),
    ("experiments.report",),
    ("experiments.protocols", "experiments.bench"),
    ("cli",),
)
"""The packages, low to high: a module imports only from its own layer or a lower one."""

REPORT_LAYERS = (
    ("experiments.report.runs", "experiments.report.statistics"),
    ("experiments.report.table",),
    ("experiments.report.pool", "experiments.report.figures", "experiments.report.export"),
)
"""Within the report, by role: reading the runs and the statistics (arrays and counts, no folder)
at the bottom, the table on both, the pooled table, the figures and the export on top."""


def _layer(module: str, layers) -> int | None:
    for level, packages in enumerate(layers):
        if any(module == p or module.startswith(f"{p}.") for p in packages):
            return level
    return None


def _unplaced(root: Path, layers) -> list[str]:
    """The packages (and loose modules) of ``experiments/`` that no layer names."""
    names = [
        f"experiments.{p.stem if p.suffix else p.name}"
        for p in sorted((root / "experiments").iterdir())
        if (p.is_dir() and (p / "__init__.py").is_file())
        or (p.suffix == ".py" and p.stem != "__init__")
    ]
    return [n for n in names if _layer(n, layers) is None]


def back_up(graph: dict[str, set[str]], layers) -> list[str]:
    """Every edge from a module to a higher layer's, as ``source -> target``."""
    found = []
    for source, targets in graph.items():
        low = _layer(source, layers)
        for target in targets:
            high = _layer(target, layers)
            if low is not None and high is not None and high > low:
                found.append(f"{source} -> {target}")
    return sorted(found)


def test_every_package_has_a_layer():
    assert _unplaced(ROOT, LAYERS) == []
    report = sorted(p.name for p in (ROOT / "experiments" / "report").iterdir() if p.is_dir()
                    and (p / "__init__.py").is_file())  # fmt: skip
    placed = [n for n in report if _layer(f"experiments.report.{n}", REPORT_LAYERS) is None]
    assert placed == []


def test_no_import_from_a_higher_layer():
    graph = import_graph()
    assert back_up(graph, LAYERS) == []
    assert back_up(graph, REPORT_LAYERS) == []


def test_the_layer_test_finds_an_import_back_up_and_an_unplaced_package(tmp_path):
    """A hand-made tree: the report importing a protocol lazily is an import back up; a package
    that no layer names is reported."""
    _write(
        tmp_path,
        {
            "experiments/__init__.py": "",
            "experiments/base/__init__.py": "",
            "experiments/report/__init__.py": "",
            "experiments/report/pool/__init__.py": "",
            "experiments/report/pool/across.py": (
                "def f():\n    from experiments.protocols.study import analysis\n"
            ),
            "experiments/report/table/__init__.py": "",
            "experiments/report/table/render.py": "from experiments.report.pool import across\n",
            "experiments/protocols/__init__.py": "",
            "experiments/protocols/study/__init__.py": "",
            "experiments/protocols/study/analysis.py": "from experiments.base import x\n",
            "experiments/stray/__init__.py": "",
            "cli/__init__.py": "",
        },
    )
    graph = import_graph(tmp_path)
    assert back_up(graph, LAYERS) == [
        "experiments.report.pool.across -> experiments.protocols.study.analysis"
    ]
    assert back_up(graph, REPORT_LAYERS) == [
        "experiments.report.table.render -> experiments.report.pool.across"
    ]
    assert _unplaced(tmp_path, LAYERS) == ["experiments.stray"]
