"""Each package's public face (issue 50, item 5): every package of ``experiments/`` but ``base/``
exports in its ``__init__``'s ``__all__`` what other packages use from it, and callers outside a
package import from the package, never from its modules.

Computed from the source (ast) of every module of ``experiments/``, ``cli/``, ``gradlab/``,
``hydra_plugins/`` and ``benchmarks/``, every import counted (at the top, in a function, under
``if TYPE_CHECKING:``). A module's *home* is the innermost package holding it; a caller outside
its home's top-level package (``experiments.report`` for ``experiments/report/table/render.py``)
must import the home package (``from experiments.report.table import METHODS``), and only names
of its ``__all__``. Within one top-level package the modules import each other directly: a
subpackage's siblings are its own package's inside (their faces would close circles, e.g.
``protocols.study`` and ``protocols.calibration`` through ``protocols.seeds``).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("experiments", "cli", "gradlab", "hydra_plugins", "benchmarks")
FLOOR = "experiments.base"
"""Imported by everything, importing nothing of ours: its modules are its face."""

NAMED_AS_THEIR_MODULE = {
    ("experiments.launch.plan", "plan"),
    ("experiments.muzero.train", "train"),
    ("experiments.protocols.study.audit", "audit"),
    ("experiments.report.table.render", "render"),
    ("experiments.report.table.summarize", "summarize"),
}
"""Functions named as their module, imported from it: a face exporting ``plan`` would hide the
module ``experiments.launch.plan`` (``from experiments.launch import plan``, which tests and
``monkeypatch`` use, would give the function; with a lazy face, whichever was loaded first)."""

PROBES = {
    ("benchmarks.phases", "experiments.muzero.learner"),
    ("benchmarks.phases", "experiments.muzero.selfplay"),
    ("benchmarks.phases", "experiments.muzero.train"),
    ("benchmarks.phases", "experiments.muzero.runtime.batches"),
    ("benchmarks.plan_cost", "experiments.launch.plan"),
    ("benchmarks.startup_builds", "experiments.muzero.learner"),
    ("benchmarks.startup_builds", "experiments.muzero.train"),
}
"""Benchmarks that time a module's insides: ``phases`` and ``startup_builds`` wrap the training
loop's calls where the loop looks them up (the modules' attributes), ``plan_cost`` times the
plan's private composition against its own."""


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources(root: Path) -> dict[str, Path]:
    return {
        _module_name(path, root): path
        for package in SCANNED
        if (root / package).is_dir()
        for path in sorted((root / package).rglob("*.py"))
    }


def _all_of(path: Path) -> list[str] | None:
    """The literal ``__all__`` of a module's source, or None when it has none."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return list(ast.literal_eval(node.value))
    return None


def faces(root: Path = ROOT) -> dict[str, list[str] | None]:
    """Every package of ``experiments/`` but the floor and the root -> its ``__all__``."""
    return {
        name: _all_of(path)
        for name, path in _sources(root).items()
        if path.name == "__init__.py"
        and name.startswith("experiments.")
        and not (name == FLOOR or name.startswith(f"{FLOOR}."))
    }


def _top(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "experiments" else parts[0]


def _imports(tree: ast.AST) -> list[tuple[str, str | None]]:
    """``(module, name)`` per imported name: ``from m import n`` -> ``(m, n)``, ``import m``
    -> ``(m, None)``; relative imports are not used in gradlab and are refused."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert not node.level, "a relative import"
            found += [(node.module or "", alias.name) for alias in node.names]
    return found


def breaches(root: Path = ROOT) -> list[str]:
    """Every import from outside a package's top-level package that passes its face by: a
    module imported (or imported from), or a name its package's ``__all__`` does not list."""
    sources = _sources(root)
    packages = {n for n, p in sources.items() if p.name == "__init__.py"}
    public = faces(root)
    found = []
    for caller, path in sources.items():
        for module, name in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if not module.startswith("experiments."):
                continue
            if name is not None and f"{module}.{name}" in sources:  # a module imported as a name
                module, name = f"{module}.{name}", None
            home = module if module in packages else module.rpartition(".")[0]
            if home not in public or caller == home or caller.startswith(f"{_top(home)}."):
                continue  # the floor, the root, or inside its own top-level package
            if module != home:
                if (module, name) not in NAMED_AS_THEIR_MODULE and (caller, module) not in PROBES:
                    found.append(f"{caller}: {module} (a module of {home})")
            elif name is not None and name not in (public[home] or []):
                found.append(f"{caller}: {home}.{name} (not in its __all__)")
    return sorted(set(found))


def test_callers_outside_a_package_import_its_face():
    assert breaches() == []


def test_every_package_has_a_face():
    assert [name for name, names in faces().items() if names is None] == []


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_check_finds_a_module_and_a_name_past_the_face(tmp_path):
    """A hand-made tree: a caller in another package importing a module, or a name its face
    does not list, is found; the face's names, the floor and a package's own modules are not."""
    _write(
        tmp_path,
        {
            "experiments/__init__.py": "",
            "experiments/base/__init__.py": "",
            "experiments/base/errors.py": "E = 1\n",
            "experiments/p/__init__.py": "from experiments.p.a import x\n__all__ = ['x']\n",
            "experiments/p/a.py": "x = 1\ny = 2\n",
            "experiments/p/q/__init__.py": "__all__ = []\n",
            "experiments/p/q/b.py": "from experiments.p.a import y\n",  # inside p: direct
            "experiments/r/__init__.py": "__all__: list[str] = []\n",
            "experiments/r/c.py": (
                "from experiments.p import x\nfrom experiments.p import y\n"
                "from experiments.base.errors import E\n"
                "def f():\n    from experiments.p.a import x\n    from experiments.p import a\n"
            ),
            "cli/__init__.py": "",
            "cli/main.py": "import experiments.p.q\nimport experiments.p.q.b\n",
        },
    )
    assert faces(tmp_path) == {"experiments.p": ["x"], "experiments.p.q": [], "experiments.r": []}
    assert breaches(tmp_path) == [
        "cli.main: experiments.p.q.b (a module of experiments.p.q)",
        "experiments.r.c: experiments.p.a (a module of experiments.p)",
        "experiments.r.c: experiments.p.y (not in its __all__)",
    ]


def _submodules(package: str) -> set[str]:
    folder = ROOT.joinpath(*package.split("."))
    return {p.stem for p in folder.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in folder.iterdir() if (p / "__init__.py").is_file()
    }


@pytest.mark.parametrize("package", sorted(faces()))
def test_each_exported_name_resolves(package):
    module = importlib.import_module(package)
    names = module.__all__
    assert len(names) == len(set(names))
    assert set(names) <= set(dir(module))
    missing = [name for name in names if getattr(module, name, None) is None]
    assert missing == []
    # no name of the face is one of its submodules' (the import system would overwrite it)
    assert set(names) & _submodules(package) == set()


def _type_checking_names(path: Path) -> set[str] | None:
    """The names imported under ``if TYPE_CHECKING:`` at a module's top, or None without one."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            return {
                alias.asname or alias.name
                for child in node.body
                if isinstance(child, ast.ImportFrom)
                for alias in child.names
            }
    return None


def _lazy_faces() -> list[str]:
    return sorted(
        name
        for name in faces()
        if "lazy_face(" in ROOT.joinpath(*name.split("."), "__init__.py").read_text()
    )


def _eager_names(path: Path) -> set[str]:
    """The names a module's top imports outside ``if`` blocks (a face's eager names)."""
    return {
        alias.asname or alias.name
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ImportFrom) and node.module != "__future__"
        for alias in node.names
    }


@pytest.mark.parametrize("package", _lazy_faces())
def test_a_lazy_face_shows_type_checkers_its_names(package):
    """The names a lazy face loads at first use are those it imports under TYPE_CHECKING."""
    path = ROOT.joinpath(*package.split("."), "__init__.py")
    lazy = set(_all_of(path) or []) - _eager_names(path)
    assert lazy and _type_checking_names(path) == lazy


HEAVY = ("hydra", "matplotlib", "pandas", "scipy", "tensorflow", "wandb")
"""What a lazy face keeps off a caller's start-up until a name needs it."""


def test_the_lazy_faces_load_no_heavy_library():
    import subprocess
    import sys

    code = (
        "import sys\n"
        f"for name in {_lazy_faces()!r}: __import__(name)\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert len(_lazy_faces()) >= 5
    assert out.strip() == "[]"
