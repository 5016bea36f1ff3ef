"""A package's public face whose names load at first use (PEP 562), for packages whose modules
bring TensorFlow, Hydra, pandas or matplotlib: importing the package itself stays cheap, and a
caller pays for the module of the name it asks for, when it asks.

A lazy face lists its names three times, each checked against the others: ``__all__`` (what the
package exports), the ``{module: names}`` map given to :func:`lazy_face` (where each lives), and
an ``if TYPE_CHECKING:`` block importing them (what type checkers and readers see);
``tests/project/test_public_faces.py`` holds the three equal. A face never exports a name that
is also one of its submodules' (the import system would set that attribute to the submodule the
moment the submodule is first imported, and the face would hand out the module).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_face"]


def lazy_face(
    package: str, exports: Mapping[str, Sequence[str]], public: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module-level ``__getattr__`` and ``__dir__`` for ``exports``.

    Args:
      package: the package's ``__name__``.
      exports: ``{submodule (relative to the package): the names the face takes from it}``.
      public: the package's ``__all__``; it must name exactly the names of ``exports``.

    Returns:
      ``(__getattr__, __dir__)``: ``__getattr__(name)`` imports the name's submodule and returns
      its attribute ``name`` (each time: nothing is cached, so the submodule's attribute is the
      one handed out); any other name raises AttributeError. ``__dir__`` lists the package's
      own attributes and ``public``.

    Raises:
      ValueError: ``public`` and ``exports`` name different names, or a name twice.
    """
    home = {name: module for module, names in exports.items() for name in names}
    listed = [name for names in exports.values() for name in names]
    if len(listed) != len(home) or sorted(home) != sorted(public):
        raise ValueError(f"{package}: __all__ and the lazy exports name different names")

    def __getattr__(name: str) -> Any:  # noqa: N807 - PEP 562's name
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def __dir__() -> list[str]:  # noqa: N807 - PEP 562's name
        return sorted({*vars(sys.modules[package]), *public})

    return __getattr__, __dir__
