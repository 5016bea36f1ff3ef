"""A traced function's graph kept on disk, so that a later process runs it without tracing again.

A job that builds its agent traces its train step: about 3,200 graph operations built one by one in
Python (1.2-1.6 s on 2 cores), before TensorFlow lowers the graph and XLA compiles it or loads it
from its persistent cache. The graph depends only on gradlab's code, the library versions and the
configuration (not the seed), so :class:`GraphStore` keeps it: the first process to trace it saves
its ``FunctionDef`` (the graph as TensorFlow's runtime holds it) and which variables it reads;
every later process registers that definition with the runtime and calls it, without tracing.

* **The same program.** The definition is the traced one, node for node, registered under a name of
  its own (``gradlab_<key>``) and called with the same inputs and the handles of the same variables.
  It is what runs in every process, the one that traced it included (its traced function is never
  called), so XLA's persistent cache, which keys a program by its function's name and its HLO (the
  HLO holds the traced graph's source lines, which a stored definition does not carry), serves the
  stored graph from the second process on. The rows of a run are bit-identical either way
  (``tests/muzero/test_graph_store.py``, in fresh processes).
* **The key** is a SHA-256 of the caller's ``identity`` (everything the graph depends on but the
  code: :func:`experiments.muzero.train.train` gives its agent key), the Python, TensorFlow, Keras
  and NumPy versions, and :func:`source_fingerprint` (every ``.py`` file of the ``experiments``
  package): a change of either is another key, so a stale graph is never read. Code outside the
  package (a plug-in variant) cannot be fingerprinted; :func:`experiments.muzero.train.train` stores
  nothing for it.
* **Names after it.** TensorFlow names each traced function with a process-wide counter. A graph
  loaded instead of traced advances the counter by what its trace took, so functions traced after
  it get their usual names (and their programs in XLA's cache).
* **Files.** ``<folder>/<key>.pb`` (the definition) then ``<key>.json`` (what it reads, the counter
  step, the caller's extra values, the definition's SHA-256), each written to a temporary file and
  renamed, so concurrent workers never read half a file. A file that does not parse or match its
  hash is not used: the graph is traced (and the files rewritten).

It uses three private TensorFlow calls (``context.add_function_def``, ``context.call_function``,
``ops.uid``; pinned TensorFlow 2.21.0); if one is gone, :meth:`GraphStore.program` warns once
(:class:`~experiments.base.private_api.PrivateAPIWarning`) and returns None: the caller traces as
before, with the same numbers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import tensorflow as tf

from experiments.base.private_api import BROKEN, warn_fallback

__all__ = ["GraphStore", "StoredGraph", "source_fingerprint"]

_PACKAGE = Path(__file__).resolve().parents[2]  # experiments/
_FORMAT = 1


def source_fingerprint(root: Path = _PACKAGE) -> str:
    """SHA-256 of every ``.py`` file under ``root`` (relative paths and bytes, in sorted order)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _versions() -> str:
    import keras
    import numpy as np

    return (
        f"python {sys.version}; tensorflow {tf.__version__}; keras {keras.__version__}; "
        f"numpy {np.__version__}"
    )


def tf_variable(variable: Any) -> tf.Variable:
    """The TensorFlow variable behind a Keras variable (or the variable itself)."""
    if isinstance(variable, tf.Variable):
        return variable
    inner = getattr(variable, "value", None)  # a Keras variable's TensorFlow variable
    if not isinstance(inner, tf.Variable):
        raise TypeError(f"{variable!r} is not backed by a TensorFlow variable")
    return inner


@dataclasses.dataclass(frozen=True)
class StoredGraph:
    """A function's definition as stored, and how to call it.

    Attributes:
      name: the name it is registered (and called) under.
      definition: the serialized ``FunctionDef``.
      captures: for each captured input of the traced function, in order, its index in the
        variables the caller gave.
      uids: how far its trace advanced TensorFlow's naming counter.
      extra: the caller's values kept with it (JSON).
    """

    name: str
    definition: bytes
    captures: tuple[int, ...]
    uids: int
    extra: dict[str, Any]

    def bind(self, variables: Sequence[Any]) -> Callable[[Sequence[tf.Tensor]], list[tf.Tensor]]:
        """Registers the definition with this process's runtime (once) and returns a call of it
        on flat input tensors, reading ``variables`` (the same list, in the same order, as when
        it was stored: the indices in :attr:`captures`)."""
        from tensorflow.core.framework import function_pb2
        from tensorflow.python.eager import context

        ctx = context.context()
        call_function = ctx.call_function  # looked up now: a missing one fails here, not later
        if not ctx.has_function(self.name):
            ctx.add_function_def(function_pb2.FunctionDef.FromString(self.definition))
        handles = [tf_variable(variables[i]).handle for i in self.captures]
        name, outputs = self.name.encode(), _num_outputs(self.definition)

        def call(tensors: Sequence[tf.Tensor]) -> list[tf.Tensor]:
            return call_function(name, [*tensors, *handles], outputs)

        return call


def _num_outputs(definition: bytes) -> int:
    from tensorflow.core.framework import function_pb2

    return len(function_pb2.FunctionDef.FromString(definition).signature.output_arg)


@dataclasses.dataclass(frozen=True)
class GraphStore:
    """Traced graphs kept in ``folder`` (see the module docstring).

    Attributes:
      folder: where the files go (made on the first save).
      fingerprint: the code and versions a key includes (:func:`source_fingerprint` and the
        library versions by default).
    """

    folder: Path
    fingerprint: str = dataclasses.field(
        default_factory=lambda: hashlib.sha256(
            f"{_versions()}\n{source_fingerprint()}".encode()
        ).hexdigest()
    )

    @classmethod
    def beside(cls, xla_cache: str | os.PathLike[str] | None) -> GraphStore | None:
        """The store in ``<xla_cache>/graphs``, or None without an XLA cache: the graphs go where
        the programs compiled from them go, and are kept as long."""
        if not xla_cache:
            return None
        return cls(Path(os.path.expanduser(os.fspath(xla_cache))) / "graphs")

    def key(self, identity: str) -> str:
        """The files' name for ``identity``: SHA-256 of it and :attr:`fingerprint`."""
        return hashlib.sha256(f"{_FORMAT}\n{self.fingerprint}\n{identity}".encode()).hexdigest()

    def load(self, identity: str) -> StoredGraph | None:
        """The graph stored for ``identity``; None if there is none or its files are damaged."""
        key = self.key(identity)
        try:
            meta = json.loads((self.folder / f"{key}.json").read_text())
            definition = (self.folder / f"{key}.pb").read_bytes()
            if hashlib.sha256(definition).hexdigest() != meta["sha256"]:
                return None
            return StoredGraph(
                name=meta["name"],
                definition=definition,
                captures=tuple(int(i) for i in meta["captures"]),
                uids=int(meta["uids"]),
                extra=dict(meta["extra"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def save(
        self, identity: str, concrete: Any, variables: Sequence[Any], *, uids: int, extra: dict
    ) -> StoredGraph | None:
        """Stores ``concrete``'s definition (renamed ``gradlab_<key>``) for ``identity``.

        Returns:
          What :meth:`load` will return; None (nothing written) if the function captured
          anything but ``variables`` (a constant, another variable) or calls other functions.
        """
        stored = self._stored(identity, concrete, variables, uids=uids, extra=extra)
        if stored is not None:
            self._write(identity, stored)
        return stored

    def _stored(
        self, identity: str, concrete: Any, variables: Sequence[Any], *, uids: int, extra: dict
    ) -> StoredGraph | None:
        """:meth:`save`'s graph, not written."""
        index = {id(tf_variable(v).handle): i for i, v in enumerate(variables)}
        captures = [index.get(id(c)) for c in concrete.captured_inputs]
        if any(i is None for i in captures) or concrete.graph.as_graph_def().library.function:
            return None
        definition = concrete.function_def
        definition.signature.name = f"gradlab_{self.key(identity)[:32]}"
        data = definition.SerializeToString(deterministic=True)
        return StoredGraph(definition.signature.name, data, tuple(captures), uids, dict(extra))

    def _write(self, identity: str, stored: StoredGraph) -> None:
        key = self.key(identity)
        meta = {
            "name": stored.name,
            "captures": list(stored.captures),
            "uids": stored.uids,
            "extra": stored.extra,
            "sha256": hashlib.sha256(stored.definition).hexdigest(),
            "identity": identity,
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        _write(self.folder / f"{key}.pb", stored.definition)
        _write(self.folder / f"{key}.json", json.dumps(meta, indent=1).encode())

    def program(
        self,
        identity: str,
        trace: Callable[[], Any],
        variables: Sequence[Any],
        extra: Callable[[], dict],
    ) -> tuple[Callable[[Sequence[tf.Tensor]], list[tf.Tensor]], dict] | None:
        """A call of the graph for ``identity`` and its extra values: loaded if stored, else
        ``trace()``d (a concrete function) and stored, ``extra()`` read after the trace.

        Returns None where the graph cannot be stored (see :meth:`save`; the caller uses its
        traced function) or TensorFlow lacks a private call this needs (warned once).
        """
        try:
            from tensorflow.python.framework import ops

            stored = self.load(identity)
            if stored is not None:
                for _ in range(stored.uids + 1):  # what the trace below takes, bracket included
                    ops.uid()
                return stored.bind(variables), stored.extra
            start = ops.uid()
            concrete = trace()
            uids = ops.uid() - start
            stored = self._stored(identity, concrete, variables, uids=uids, extra=extra())
            if stored is None:
                return None
            call = stored.bind(variables)  # runs here before it is kept for other processes
            self._write(identity, stored)
            return call, stored.extra
        except BROKEN as err:
            warn_fallback(
                "TensorFlow's context.add_function_def/call_function or ops.uid",
                "the traced function",
                "tracing it in every process",
                err,
            )
            return None


def _write(path: Path, data: bytes) -> None:
    """``data`` to ``path`` through a temporary file in the same folder, then a rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
