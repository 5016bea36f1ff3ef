"""A traced function's graph kept on disk, so that a later process runs it without tracing again.

A job that builds its agent traces its train step, about 3,200 graph operations built one by one in
Python (1.2-1.6 s on 2 cores), and its searches (one per batch size: self-play's and the
evaluation's, 0.24-0.61 s together), before TensorFlow lowers each graph and XLA compiles it or
loads it from its persistent cache. A graph depends on gradlab's code, the library versions, the
configuration (not the seed) and how TensorFlow traces (op determinism, Keras' float type and
dtype policy), so :class:`GraphStore` keeps it under a key of all of these: the first process to
trace it saves its ``FunctionDef`` (the graph as TensorFlow's runtime holds it) with the functions
it calls (a ``while_loop``'s condition and body) and what it reads beside its inputs (which of
the variables and constants its caller names: the networks' weights, the search's pUCT tables);
every later process registers those definitions with the runtime and calls them on its own
variables and constants, without tracing.

* **The same program.** The definition is the traced one, node for node, registered under a name of
  its own (``gradlab_<key>``, the functions it calls ``gradlab_<key>_<i>``) and called with the
  same inputs, the handles of the same variables (or of a
  :class:`~experiments.muzero.runtime.weights.WeightCopy`'s, as the traced function would be)
  and the constants its caller computed in this process (a capture that is neither is not
  stored: its value could not be found elsewhere).
  It is what runs in every process, the one that traced it included (its traced function is never
  called), so XLA's persistent cache, which keys a program by its function's name and its HLO (the
  HLO holds the traced graph's source lines, which a stored definition does not carry), serves the
  stored graph from the second process on. The rows of a run are bit-identical either way
  (``tests/muzero/test_graph_store.py``, in fresh processes).
* **The key** is a SHA-256 of the caller's ``identity`` (what the graph depends on in the
  configuration: :func:`experiments.muzero.train.train` gives its agent key), the tracing context
  (op determinism on or off, ``keras.config.floatx()``, the global dtype policy), the Python,
  TensorFlow, Keras, NumPy, gymnasium and MinAtar versions, and :func:`source_fingerprint` of
  every ``.py`` file of the ``experiments`` package as this process imported it
  (``experiments.SOURCES``, read before any other module of the package, and read again before a
  graph is written: a process whose files changed since it imported them writes nothing, since
  its graph may be the old code's). A change of any is another key. The identity must name
  everything the graph's constants come from (values computed while tracing, such as the
  discount, are written into the definition; the caller's named constants are bound afresh in
  each process): an agent key does, as an :class:`~experiments.muzero.agents.AgentCache` key
  must. Code outside the package (a plug-in variant) is not fingerprinted;
  :func:`experiments.muzero.train.train` stores nothing for it. A source file that cannot be
  read turns the store off.
* **Names after it.** TensorFlow names each traced function with a process-wide counter. A graph
  loaded instead of traced advances the counter by what its trace took, so functions traced after
  it get their usual names (and their programs in XLA's cache).
* **Files.** ``<folder>/<key>.pb`` (the definitions) then ``<key>.json`` (what it reads, the
  counter step, the caller's extra values, the definitions' SHA-256), each written to a
  temporary file and renamed, so concurrent workers never read half a file. A file that does
  not parse, match its hash or register is not used: the graph is traced (and the files
  rewritten). A file that cannot be written (a full disk, a read-only folder) is skipped: the
  store is a cache, never a reason for a job to fail. Graphs of older code are not removed (a
  few hundred kB each).

It uses four private TensorFlow calls (``context.add_function_def``, ``context.call_function``,
``ops.uid``, ``config.is_op_determinism_enabled``; pinned TensorFlow 2.21.0); if one is gone,
:meth:`GraphStore.program` warns once (:class:`~experiments.base.private_api.PrivateAPIWarning`)
and returns None: the caller traces as before, with the same numbers. ``call_function`` with
other arguments fails at the first call: :class:`~experiments.muzero.learner.StoredStep` (the
train step) or :class:`~experiments.muzero.runtime.compiled_call.StoredCall` (a search) then
warns and calls the traced function.
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
from google.protobuf.message import DecodeError

import experiments
from experiments.base import sources
from experiments.base.private_api import BROKEN, warn_fallback
from experiments.muzero.runtime.weights import tf_variable

__all__ = ["BoundGraph", "GraphStore", "StoredGraph", "source_fingerprint", "tracing_context"]

_FORMAT = 2
source_fingerprint = sources.fingerprint


def _imported_sources() -> str | None:
    """The package's sources as they are on disk now (None if unreadable)."""
    return sources.fingerprint_or_none()


def _versions() -> str:
    import importlib.metadata

    import keras
    import numpy as np

    def version(name: str) -> str:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return "absent"

    return (
        f"python {sys.version}; tensorflow {tf.__version__}; keras {keras.__version__}; "
        f"numpy {np.__version__}; gymnasium {version('gymnasium')}; minatar {version('minatar')}"
    )


def _default_fingerprint() -> str | None:
    if experiments.SOURCES is None:
        return None
    return hashlib.sha256(f"{_versions()}\n{experiments.SOURCES}".encode()).hexdigest()


def tracing_context() -> str:
    """What changes a trace beside the code and the configuration: TensorFlow's op determinism
    (``softmax_cross_entropy_with_logits`` traces other ops with it on), Keras' float type and
    global dtype policy."""
    import keras
    from tensorflow.python.framework import config

    return (
        f"determinism {config.is_op_determinism_enabled()}; floatx {keras.config.floatx()}; "
        f"policy {keras.config.dtype_policy().name}"
    )


@dataclasses.dataclass(frozen=True)
class StoredGraph:
    """A function's definition as stored, and how to call it.

    Attributes:
      name: the name it is registered (and called) under.
      definition: a serialized ``FunctionDefLibrary``: the function first, then the functions it
        calls (a ``while_loop``'s condition and body), renamed ``<name>_<i>``.
      captures: for each captured input of the traced function, in order, its index in what
        the caller gave: its variables, then its constants.
      uids: how far its trace advanced TensorFlow's naming counter.
      extra: the caller's values kept with it (JSON).
    """

    name: str
    definition: bytes
    captures: tuple[int, ...]
    uids: int
    extra: dict[str, Any]

    def bind(self, variables: Sequence[Any], constants: Sequence[tf.Tensor] = ()) -> BoundGraph:
        """Registers the definition with this process's runtime (once) and returns a call of it
        on flat input tensors, reading ``variables`` and ``constants`` (the same lists, in the
        same order, as when it was stored: the indices in :attr:`captures`)."""
        from tensorflow.core.framework import function_pb2
        from tensorflow.python.eager import context

        try:  # before anything is registered: a bad index or variable is a damaged file
            inputs = [*(tf_variable(v).handle for v in variables), *constants]
            if any(not 0 <= i < len(inputs) for i in self.captures):
                raise IndexError(f"a capture index outside 0..{len(inputs) - 1}")
            captured = [inputs[i] for i in self.captures]
        except (IndexError, TypeError) as err:
            raise ValueError(f"the stored captures do not fit these variables: {err}") from err
        library = function_pb2.FunctionDefLibrary.FromString(self.definition)
        if not library.function or library.function[0].signature.name != self.name:
            raise ValueError(f"the stored definition does not start with {self.name}")
        ctx = context.context()
        call_function = ctx.call_function  # looked up now: a missing one fails here, not later
        if not all(ctx.has_function(f.signature.name) for f in library.function):
            for definition in reversed(library.function):  # the called functions first
                ctx.add_function_def(definition)
        outputs = len(library.function[0].signature.output_arg)
        return BoundGraph(call_function, self.name.encode(), outputs, captured)


class BoundGraph:
    """A registered stored graph: ``call(tensors)`` runs it on flat input tensors and the
    captured inputs it was bound to (:attr:`captured_inputs`), or on ``captured`` given instead
    (e.g. a :class:`~experiments.muzero.runtime.weights.WeightCopy`'s handles in their place);
    returns its flat outputs."""

    def __init__(self, call_function: Any, name: bytes, outputs: int, captured: list[Any]) -> None:
        self._call_function = call_function
        self._name = name
        self._outputs = outputs
        self.captured_inputs = captured

    def __call__(
        self, tensors: Sequence[tf.Tensor], captured: Sequence[Any] | None = None
    ) -> list[tf.Tensor]:
        inputs = self.captured_inputs if captured is None else captured
        return self._call_function(self._name, [*tensors, *inputs], self._outputs)


@dataclasses.dataclass(frozen=True)
class GraphStore:
    """Traced graphs kept in ``folder`` (see the module docstring).

    Attributes:
      folder: where the files go (made on the first save).
      fingerprint: the code and versions a key includes (:func:`source_fingerprint` as
        imported and the library versions by default); None (a source file could not be read):
        nothing is stored or loaded.
    """

    folder: Path
    fingerprint: str | None = dataclasses.field(default_factory=_default_fingerprint)

    @classmethod
    def beside(cls, xla_cache: str | os.PathLike[str] | None) -> GraphStore | None:
        """The store in ``<xla_cache>/graphs``, or None without an XLA cache: the graphs go where
        the programs compiled from them go, and are kept as long."""
        if not xla_cache:
            return None
        return cls(Path(os.path.expanduser(os.fspath(xla_cache))) / "graphs")

    def key(self, identity: str) -> str:
        """The files' name for ``identity``: SHA-256 of it, :attr:`fingerprint` and
        :func:`tracing_context`."""
        text = f"{_FORMAT}\n{self.fingerprint}\n{tracing_context()}\n{identity}"
        return hashlib.sha256(text.encode()).hexdigest()

    def load(self, identity: str) -> StoredGraph | None:
        """The graph stored for ``identity``; None if there is none or its files are damaged."""
        key = self.key(identity)
        try:
            meta = json.loads((self.folder / f"{key}.json").read_text())
            definition = (self.folder / f"{key}.pb").read_bytes()
            if hashlib.sha256(definition).hexdigest() != meta["sha256"]:
                return None
            return StoredGraph(
                name=str(meta["name"]),
                definition=definition,
                captures=tuple(int(i) for i in meta["captures"]),
                uids=int(meta["uids"]),
                extra=dict(meta["extra"]),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def _stored(
        self,
        identity: str,
        concrete: Any,
        variables: Sequence[Any],
        constants: Sequence[tf.Tensor] = (),
        *,
        uids: int,
        extra: dict,
    ) -> StoredGraph | None:
        """``concrete``'s definition (renamed ``gradlab_<key>``) for ``identity``, as :meth:`load`
        will return it once written; None if the function captured anything but ``variables``
        and ``constants`` (the tensors the caller computes in every process, e.g. the search's
        pUCT tables; another variable or constant could not be found in another process) or
        calls a function its graph does not hold."""
        try:
            inputs = [*(tf_variable(v).handle for v in variables), *constants]
        except TypeError:
            return None  # a variable without a TensorFlow variable behind it
        index = {id(t): i for i, t in enumerate(inputs)}
        captures = [index.get(id(c)) for c in concrete.captured_inputs]
        if any(i is None for i in captures):
            return None  # something else: it could not be found in another process
        name = f"gradlab_{self.key(identity)[:32]}"
        library = _renamed(concrete.function_def, concrete.graph.as_graph_def().library, name)
        if library is None:
            return None
        data = library.SerializeToString(deterministic=True)
        return StoredGraph(name, data, tuple(captures), uids, dict(extra))

    def _write(self, identity: str, stored: StoredGraph) -> bool:
        """Writes ``stored``'s files; False (nothing, or nothing usable, written) where the
        package's sources are no longer those this process imported, where its extra values are
        not JSON, or on an OS error."""
        if _imported_sources() != experiments.SOURCES:
            return False
        key = self.key(identity)
        meta = {
            "name": stored.name,
            "captures": list(stored.captures),
            "uids": stored.uids,
            "extra": stored.extra,
            "sha256": hashlib.sha256(stored.definition).hexdigest(),
            "identity": identity,
        }
        try:
            text = json.dumps(meta, indent=1).encode()
        except (TypeError, ValueError):  # extra values JSON cannot hold: nothing written
            return False
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            _write(self.folder / f"{key}.pb", stored.definition)
            _write(self.folder / f"{key}.json", text)
        except OSError:
            return False
        return True

    def program(
        self,
        identity: str,
        trace: Callable[[], Any],
        variables: Sequence[Any],
        extra: Callable[[], dict],
        constants: Sequence[tf.Tensor] = (),
    ) -> tuple[BoundGraph, dict] | None:
        """A call of the graph for ``identity`` and its extra values: loaded if stored, else
        ``trace()``d (a concrete function) and stored, ``extra()`` read after the trace.
        ``variables`` and ``constants``: what the function may capture, as :meth:`_stored` says.

        Returns None where the graph cannot be stored (see :meth:`_stored`; the caller uses its
        traced function), where :attr:`fingerprint` is None, or where TensorFlow lacks a private
        call this needs (warned once). Errors of ``trace()`` itself are raised.
        """
        if self.fingerprint is None:
            return None
        try:
            tracing_context()  # reads a private TensorFlow flag: missing, no store
        except BROKEN as err:
            return _unavailable(err)
        stored = self.load(identity)
        if stored is not None:
            try:
                call = stored.bind(variables, constants)
            except BROKEN as err:
                return _unavailable(err)
            except (ValueError, tf.errors.OpError, DecodeError):
                call = None  # a definition this runtime refuses: traced and stored again below
            if call is not None:
                try:
                    _advance_uids(stored.uids + 1)  # what the trace below takes, bracket included
                except BROKEN as err:
                    return _unavailable(err)
                return call, stored.extra
        try:
            start = _advance_uids(1)
        except BROKEN as err:
            return _unavailable(err)
        concrete = trace()
        uids = _advance_uids(1) - start
        stored = self._stored(identity, concrete, variables, constants, uids=uids, extra=extra())
        if stored is None:
            return None
        try:
            call = stored.bind(variables, constants)  # registered here before it is kept
        except BROKEN as err:
            return _unavailable(err)
        except (ValueError, tf.errors.OpError):
            return None  # a definition this runtime refuses: the traced function is used
        self._write(identity, stored)
        return call, stored.extra


def _renamed(main: Any, library: Any, name: str) -> Any:
    """``main`` and the functions it calls (from ``library``, directly or through each other) as
    one ``FunctionDefLibrary``: ``main`` renamed ``name`` first, the others renamed
    ``<name>_<i>`` in the order they are first referred to (nodes in order, attributes by name),
    every reference rewritten: a node whose op is a function, a function-valued attribute, a
    list of them, and the attributes of those in turn. None if it refers to a function the
    library lacks."""
    from tensorflow.core.framework import function_pb2

    found = {f.signature.name: f for f in library.function}
    out = function_pb2.FunctionDefLibrary()
    out.function.add().CopyFrom(main)
    names: dict[str, str] = {}

    def renamed(old: str) -> str | None:
        if old not in names:
            if old not in found:
                return None
            names[old] = f"{name}_{len(names)}"
            out.function.add().CopyFrom(found[old])
        return names[old]

    done = 0
    while done < len(out.function):
        definition = out.function[done]
        done += 1
        attrs = [definition.attr[k] for k in sorted(definition.attr)]
        for node in definition.node_def:
            if node.op in found:
                node.op = renamed(node.op)
            attrs.extend(node.attr[k] for k in sorted(node.attr))
        for ref in _function_refs(attrs):
            new = renamed(ref.name)
            if new is None:
                return None
            ref.name = new
    out.function[0].signature.name = name
    for definition in out.function[1:]:
        definition.signature.name = names[definition.signature.name]
    return out


def _function_refs(values: list[Any]) -> list[Any]:
    """The functions (``NameAttrList`` s) ``values`` (``AttrValue`` s) name, and those their own
    attributes name, depth first."""
    refs = []
    for value in values:
        funcs = [value.func] if value.HasField("func") else list(value.list.func)
        for func in funcs:
            refs.append(func)
            refs.extend(_function_refs([func.attr[k] for k in sorted(func.attr)]))
    return refs


def _advance_uids(count: int) -> int:
    """Takes ``count`` numbers of TensorFlow's naming counter; returns the last."""
    from tensorflow.python.framework import ops

    last = 0
    for _ in range(count):
        last = ops.uid()
    return last


def _unavailable(err: BaseException) -> None:
    warn_fallback(
        "TensorFlow's context.add_function_def/call_function, ops.uid or is_op_determinism_enabled",
        "the traced function",
        "tracing it in every process",
        err,
    )
    return None


def _write(path: Path, data: bytes) -> None:
    """``data`` to ``path`` through a temporary file in the same folder, then a rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, 0o644)  # as XLA's own cache files (mkstemp gives 0600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
