"""The import graph of gradlab's code (``experiments/``, ``cli/``, ``gradlab/``,
``hydra_plugins/``, ``benchmarks/``), computed from the source (ast): no cycle, and every arrow
between packages one the picture of docs/architecture.md allows (:data:`ALLOWED`).

An edge is every ``import``/``from ... import`` a module makes, at its top, inside a function (a
lazy import closes a loop as surely as a top-level one) or under ``if TYPE_CHECKING:`` (an
annotation names a type of another module: a circle there is still two modules that each need
the other to be read), to a module of these packages: ``from pkg import name`` goes to
``pkg.name`` when that is a module, else to ``pkg`` (its ``__init__``). The package a module sits
in is not an edge of its own (every submodule would otherwise "import" its package's
``__init__``, which re-exports it).

``python tests/project/test_import_graph.py`` prints the figures docs/architecture.md quotes
(modules, edges, cycles); :func:`test_the_documented_figures_are_the_graphs` holds them equal.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("experiments", "cli", "gradlab", "hydra_plugins", "benchmarks")


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


def _imports(tree: ast.AST, *, annotations: bool = True) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree``; with ``annotations=False``, not those under
    ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if not annotations and isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph(root: Path = ROOT, *, annotations: bool = True) -> dict[str, set[str]]:
    """Module -> the modules of :data:`PACKAGES` it imports (see the module docstring); with
    ``annotations=False``, imports under ``if TYPE_CHECKING:`` left out."""
    sources = _sources(root)
    graph: dict[str, set[str]] = {}
    for name, path in sources.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _imports(tree, annotations=annotations):
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
    graph = import_graph(tmp_path, annotations=False)
    assert graph["experiments.p.b"] == {"experiments.p.a"}
    assert graph["experiments.c"] == set()
    assert import_graph(tmp_path)["experiments.c"] == {"experiments.d"}  # an annotation's edge
    assert graph["experiments.d"] == {"experiments.c", "experiments.p.a"}
    assert graph["cli.main"] == {"experiments.p.a"}
    assert graph["experiments.p"] == {"experiments.p.a"}
    assert cycles(graph) == [["experiments.p.a", "experiments.p.b"]]


ANNOTATION_CYCLES = [
    [
        "experiments.report.table.caption",
        "experiments.report.table.latex",
        "experiments.report.table.render",
        "experiments.report.table.summarize",
    ]
]
"""The one circle left that only annotations close: ``Table`` (summarize) renders itself in
Jupyter and as text (``_repr_html_``, ``to_markdown``: a lazy import of render), and the renderers
name ``Table`` as their argument's type (``if TYPE_CHECKING``). Breaking it needs the renderers
to take a structural type of the table's two dozen fields; kept, named here, and no other."""


def test_no_import_cycle():
    assert cycles(import_graph(annotations=False)) == []  # no circle of code
    assert cycles(import_graph()) == ANNOTATION_CYCLES  # and none of annotations but this one


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


ALLOWED: dict[str, frozenset[str]] = {
    name: frozenset(targets)
    for name, targets in {
        "experiments.base": (),
        "experiments.gradients": ("experiments.base",),
        "experiments.tasks": ("experiments.base",),
        "experiments.verdicts": ("experiments.base",),
        "experiments.muzero": ("experiments.base", "experiments.gradients", "experiments.tasks"),
        "experiments.config": ("experiments.base", "experiments.gradients", "experiments.tasks",
                               "experiments.verdicts"),
        "experiments.jobs": ("experiments.base", "experiments.config", "experiments.gradients",
                             "experiments.muzero", "experiments.tasks", "experiments.verdicts"),
        # launch and report are siblings: neither imports the other
        "experiments.launch": ("experiments.base", "experiments.config", "experiments.jobs"),
        "experiments.report": ("experiments.base", "experiments.gradients", "experiments.jobs",
                               "experiments.tasks", "experiments.verdicts"),
        "experiments.bench": ("experiments.base", "experiments.config", "experiments.gradients",
                              "experiments.jobs", "experiments.launch", "experiments.muzero",
                              "experiments.tasks"),
        "experiments.protocols": ("experiments.base", "experiments.config",
                                  "experiments.gradients", "experiments.jobs",
                                  "experiments.launch", "experiments.report",
                                  "experiments.tasks", "experiments.verdicts"),
        # the notebook face: reads results, never runs a job or a sweep
        "gradlab": ("experiments.base", "experiments.jobs", "experiments.protocols",
                    "experiments.report"),
        "cli": ("experiments.base", "experiments.bench", "experiments.gradients",
                "experiments.jobs", "experiments.launch", "experiments.muzero",
                "experiments.protocols", "experiments.report", "experiments.tasks", "gradlab"),
        # Hydra's sweeper plug-in: only the library's floor (its plans come from launch's caller)
        "hydra_plugins": ("experiments.base",),
        "benchmarks": ("experiments.base", "experiments.bench", "experiments.config",
                       "experiments.jobs", "experiments.launch", "experiments.muzero",
                       "experiments.report", "experiments.tasks"),
    }.items()
}  # fmt: skip
"""The arrows between packages docs/architecture.md's picture allows: a package imports only
these (and itself). Anything else, e.g. ``report -> launch`` between the two siblings, fails."""


def package_of(module: str) -> str:
    """``experiments.report.pool.across`` -> ``experiments.report``; ``cli.main`` -> ``cli``."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "experiments" and len(parts) > 1 else parts[0]


def disallowed(graph: dict[str, set[str]]) -> list[str]:
    """Every edge whose packages' arrow :data:`ALLOWED` does not hold, as ``source -> target``;
    a package it does not name is listed as ``source -> ? (unplaced)``."""
    found = []
    for source, targets in graph.items():
        mine = package_of(source)
        if mine == "experiments":
            continue  # the package's own __init__
        if mine not in ALLOWED:
            found.append(f"{source} -> ? (unplaced package {mine})")
            continue
        for target in targets:
            theirs = package_of(target)
            if theirs not in (mine, "experiments") and theirs not in ALLOWED[mine]:
                found.append(f"{source} -> {target}")
    return sorted(found)


def test_every_arrow_is_one_the_picture_allows():
    assert disallowed(import_graph()) == []


def test_the_allow_list_finds_report_importing_launch_and_an_unplaced_package():
    made = {
        "experiments.report.table.render": {"experiments.launch.sweep"},  # siblings
        "experiments.report.runs.results": {"experiments.jobs.store"},  # allowed
        "experiments.stray.x": {"experiments.base.errors"},
        "experiments.jobs.runner": {"experiments.report.runs.results"},  # a job reading reports
    }
    assert disallowed(made) == [
        "experiments.jobs.runner -> experiments.report.runs.results",
        "experiments.report.table.render -> experiments.launch.sweep",
        "experiments.stray.x -> ? (unplaced package experiments.stray)",
    ]


def figures(root: Path = ROOT) -> tuple[int, int, int]:
    """``(modules, import edges, cycles of code)`` as docs/architecture.md quotes them: every
    import counted, annotations' too; cycles among the imports that run."""
    graph = import_graph(root)
    return (
        len(graph),
        sum(len(t) for t in graph.values()),
        len(cycles(import_graph(root, annotations=False))),
    )


def test_the_documented_figures_are_the_graphs():
    import re

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    found = re.search(r"(\d+) modules, (\d+) import edges, (no|\d+) cycles?", text)
    assert found, "docs/architecture.md quotes no '<N> modules, <M> import edges, no cycle'"
    modules, edges, cycle = found.groups()
    assert (int(modules), int(edges), 0 if cycle == "no" else int(cycle)) == figures()


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


def _unplaced_packages(root: Path) -> list[str]:
    """The packages (and loose modules) of ``experiments/``, to check each is placed."""
    return [
        f"experiments.{p.stem if p.suffix else p.name}"
        for p in sorted((root / "experiments").iterdir())
        if (p.is_dir() and (p / "__init__.py").is_file())
        or (p.suffix == ".py" and p.stem != "__init__")
    ]


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
    assert [n for n in _unplaced_packages(ROOT) if n not in ALLOWED] == []
    report = sorted(p.name for p in (ROOT / "experiments" / "report").iterdir() if p.is_dir()
                    and (p / "__init__.py").is_file())  # fmt: skip
    placed = [n for n in report if _layer(f"experiments.report.{n}", REPORT_LAYERS) is None]
    assert placed == []


def test_no_import_from_a_higher_layer_within_the_report():
    assert back_up(import_graph(), REPORT_LAYERS) == []


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
    assert disallowed(graph) == [
        "experiments.report.pool.across -> experiments.protocols.study.analysis",
        "experiments.stray -> ? (unplaced package experiments.stray)",
    ]
    assert back_up(graph, REPORT_LAYERS) == [
        "experiments.report.table.render -> experiments.report.pool.across"
    ]
    assert _unplaced_packages(tmp_path) == [
        "experiments.base", "experiments.protocols", "experiments.report", "experiments.stray"
    ]  # fmt: skip


if __name__ == "__main__":  # the figures docs/architecture.md quotes
    modules, edges, found = figures()
    print(f"{modules} modules, {edges} import edges, {'no' if not found else found} cycle(s)")
