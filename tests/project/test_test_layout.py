"""The tests' own layout: one folder per package of the code (``tests/report/`` for
``experiments/report/``, ``tests/cli/`` for ``cli/``, ...) and ``tests/project/`` for what
crosses them, the shared helpers (``tests/_*.py``) and ``conftest.py`` at the top.

The folders have no ``__init__.py``: pytest imports a test module by its basename, with its
folder on ``sys.path`` (the default "prepend" import mode), and the helpers by name from
``tests/`` (``pythonpath`` in pyproject.toml). That holds only while basenames are unique and no
folder of ``tests/`` takes a name Python could read as a package of the code.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
CROSS_CUTTING = "project"
"""The one folder that mirrors no package: tests of the project as a whole."""


def _test_files() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def _folders() -> list[Path]:
    return sorted(p for p in TESTS.iterdir() if p.is_dir() and p.name not in ("data",))


def _code_package(name: str) -> Path | None:
    """The package of the code a tests folder called ``name`` mirrors, if any: a subpackage of
    ``experiments/`` or a top-level package with an ``__init__.py`` (a regular package, which
    Python finds before a folder of ``tests/`` of the same name)."""
    for candidate in (ROOT / "experiments" / name, ROOT / name):
        if (candidate / "__init__.py").is_file():
            return candidate
    return None


def test_every_test_file_sits_in_a_package_folder():
    misplaced = [p.relative_to(ROOT).as_posix() for p in _test_files() if p.parent == TESTS]
    assert misplaced == [], f"move these into tests/<package>/: {misplaced}"
    deep = [p.relative_to(ROOT).as_posix() for p in _test_files() if p.parent.parent != TESTS]
    assert deep == [], f"one folder level only: {deep}"


def test_basenames_are_unique():
    counts = Counter(p.name for p in _test_files())
    assert [name for name, n in counts.items() if n > 1] == []


def test_no_init_files_in_tests():
    """One import mode for every test file: an ``__init__.py`` in one folder would make its
    modules ``folder.test_x`` while the others stay ``test_x``."""
    assert [p.relative_to(ROOT).as_posix() for p in TESTS.rglob("__init__.py")] == []


def test_each_folder_mirrors_a_package_of_the_code():
    """``tests/hydra_plugins/`` would join the ``hydra_plugins`` namespace package (tests/ is on
    sys.path), and Hydra would import its test modules as plug-ins: a folder's name is that of
    a regular package of the code, or ``project``; ``bench`` holds the tests of
    ``experiments/bench/`` and of the scripts of ``benchmarks/``."""
    folders = [p.name for p in _folders() if p.name != "__pycache__"]
    assert CROSS_CUTTING in folders
    strays = [name for name in folders if name != CROSS_CUTTING and _code_package(name) is None]
    assert strays == [], f"tests folders that mirror no package of the code: {strays}"


def test_a_namespace_package_is_no_package_to_mirror():
    """``hydra_plugins/`` has no ``__init__.py`` (Hydra's plug-ins share the namespace), so a
    tests folder of that name is refused; ``experiments/report/`` and ``cli/`` are packages."""
    assert _code_package("hydra_plugins") is None
    assert _code_package("report") == ROOT / "experiments" / "report"
    assert _code_package("cli") == ROOT / "cli"
