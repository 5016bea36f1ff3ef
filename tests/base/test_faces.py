"""A lazy public face (PEP 562): a name's submodule loads when the name is asked for, not before."""

from __future__ import annotations

import sys
import types

import pytest

from experiments.base.faces import lazy_face


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package ``lazypkg`` with a submodule ``heavy`` defining ``answer = 42`` and ``Thing``."""
    root = tmp_path / "lazypkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "heavy.py").write_text("answer = 42\nclass Thing:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import lazypkg

    yield lazypkg
    for name in ("lazypkg", "lazypkg.heavy"):
        sys.modules.pop(name, None)


def test_a_name_loads_its_submodule_on_first_use(package):
    getattr_, dir_ = lazy_face("lazypkg", {"heavy": ["answer", "Thing"]}, ["Thing", "answer"])
    assert "lazypkg.heavy" not in sys.modules
    assert getattr_("answer") == 42
    assert "lazypkg.heavy" in sys.modules
    assert getattr_("Thing") is sys.modules["lazypkg.heavy"].Thing
    assert {"Thing", "answer"} <= set(dir_())


def test_an_unknown_name_is_an_attribute_error_naming_it(package):
    getattr_, _ = lazy_face("lazypkg", {"heavy": ["answer"]}, ["answer"])
    with pytest.raises(AttributeError, match="module 'lazypkg' has no attribute 'missing'"):
        getattr_("missing")
    assert "lazypkg.heavy" not in sys.modules


@pytest.mark.parametrize(
    ("exports", "public"),
    [
        ({"heavy": ["answer"]}, ["answer", "Thing"]),  # __all__ names one more
        ({"heavy": ["answer"], "other": ["answer"]}, ["answer"]),  # a name twice
    ],
)
def test_all_and_the_exports_must_name_the_same_names(exports, public):
    with pytest.raises(ValueError, match="__all__ and the lazy exports name different names"):
        lazy_face("pkg", exports, public)


def test_the_face_is_what_the_muzero_package_uses():
    # the real use: importing experiments.muzero loads no TensorFlow module of its own
    import experiments.muzero as muzero

    assert isinstance(muzero, types.ModuleType)
    assert "Networks" in muzero.__all__ and "Networks" in dir(muzero)
