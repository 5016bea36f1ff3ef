"""A traced function called with its flat tensors: TensorFlow's per-call binding left out.

Calling a ``tf.function``'s concrete function binds the call's arguments to the traced signature
on every call (``inspect``-style binding, then a ``TensorSpec`` cast and subtype check per
input) before it runs the graph (docs/performance_private.md gives the cost, measured by
``python benchmarks/dispatch_cost.py``). :class:`FlatCall` checks each input's dtype and shape
against the signature itself (a tuple comparison per input) and runs the graph through the
concrete function's own flat entry point (``ConcreteFunction._call_flat``, what the public call
ends in after binding): the same graph on the same tensors, so the numbers are the same bit for
bit (``tests/muzero/test_compiled_call.py``).

``_call_flat`` is private to TensorFlow (pinned at 2.21.0) and appears only here. If it is gone
or takes other arguments, a :class:`FlatCall` warns once
(:class:`~experiments.base.private_api.PrivateAPIWarning`) and calls the concrete function publicly
instead, which gives the same numbers with the binding cost. One thing has no public equivalent:
running the program on OTHER captured inputs (``captured=``, how
:class:`~experiments.muzero.runtime.weights.WeightCopy` plans with a copy of the weights). Without
``_call_flat`` that raises :class:`CapturesUnavailable`; :func:`substitutes_captures` says
beforehand whether it would, and :func:`copies_available` decides for a run (one warning, then
evaluations in line with training).

:class:`StoredCall` is its twin for a graph loaded from the graph store
(:mod:`experiments.muzero.runtime.graph_store`): the same checks and ``captured=``, the stored
definition run through ``context.call_function`` instead of ``_call_flat``.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from experiments.base.errors import ConfigError
from experiments.base.private_api import BROKEN, warn_fallback

__all__ = [
    "CapturesUnavailable",
    "FlatCall",
    "REFUSED",
    "StoredCall",
    "captures_available",
    "copies_available",
    "substitutes_captures",
]


REFUSED = (tf.errors.NotFoundError, tf.errors.InvalidArgumentError, tf.errors.UnimplementedError)
"""What a stored graph's first call raises where the runtime refuses its definition (a function it
calls not found, an attribute or op this TensorFlow rejects): checked when it is first run, not
when it is registered. :class:`StoredCall` and the learner's ``StoredStep`` then use the traced
function, which computes the same; a later call's error is the graph's own and is raised."""


class CapturesUnavailable(RuntimeError):
    """A call on other captured inputs, which only the private ``_call_flat`` can make."""


def _private_call_flat(concrete: Any, tensors: list[tf.Tensor], captured: list[Any]) -> Any:
    """The private entry point (its one use; :meth:`FlatCall.__call__` falls back from it)."""
    return concrete._call_flat(tensors, captured)  # noqa: SLF001


def _is_signature_error(err: BaseException) -> bool:
    """An error of the private call itself (gone, renamed, other arguments), not of the graph.

    The private call fails before it runs anything: an AttributeError or ImportError from the
    lookup, or a TypeError from calling it with arguments it no longer takes. A TypeError raised
    inside the running graph (an op's error) is TensorFlow's own and is re-raised.
    """
    if isinstance(err, ImportError | AttributeError):
        return True
    return "argument" in str(err) or "positional" in str(err)


def substitutes_captures(concrete: Any) -> bool:
    """Whether :func:`call_flat` can run ``concrete`` on other captured inputs: the private entry
    point is there (a lookup; nothing runs)."""
    return callable(getattr(type(concrete), "_call_flat", None))


def captures_available() -> bool:
    """Whether this TensorFlow's concrete functions can run on other captured inputs (the
    private ``_call_flat`` exists): a lookup on the class of a trivial traced function."""
    concrete = tf.function(lambda: tf.constant(0)).get_concrete_function()
    return substitutes_captures(concrete)


def copies_available() -> bool:
    """Whether a search may plan on a :class:`~experiments.muzero.runtime.weights.WeightCopy`
    (:func:`captures_available`). Without the private ``_call_flat`` it warns once and returns
    ``False``: a run then evaluates in line with training, the same rows without the overlap."""
    if captures_available():
        return True
    warn_fallback(
        "ConcreteFunction._call_flat (planning with a copy of the weights)",
        "evaluations in line with training",
        "without the overlap",
        AttributeError("ConcreteFunction has no _call_flat"),
    )
    return False


class FlatCall:
    """``concrete(*args)`` without TensorFlow's per-call argument binding.

    Args:
      concrete: a concrete function whose every input is a tensor of fully defined shape (as
        traced from a ``tf.function`` with ``TensorSpec`` arguments).

    Calling it with the same (nested) arguments as ``concrete`` returns what ``concrete``
    returns. NumPy arrays and Python scalars are converted with ``tf.constant``; an input of
    another structure, dtype or shape than the signature's raises :class:`ConfigError` naming it.
    ``captured``: what the graph captured (``concrete.captured_inputs``: for a captured variable,
    its resource handle) given otherwise, in the same order: e.g. the handles of other variables
    of the same shapes, which the same program then reads instead (see
    :meth:`~experiments.muzero.search_tf.CompiledSearch.__call__`).

    ``private``: the private call (``_private_call_flat``; a stand-in in tests). If it fails as a
    missing or changed API does, the call warns once and this FlatCall uses the public call
    from then on.
    """

    def __init__(self, concrete: Any, *, private: Any = _private_call_flat) -> None:
        args, kwargs = concrete.structured_input_signature
        specs = tf.nest.flatten(args)
        if (
            kwargs
            or not specs
            or not all(isinstance(s, tf.TensorSpec) and s.shape.is_fully_defined() for s in specs)
        ):
            raise ConfigError(
                f"{concrete.name}: every input must be a positional tensor of fully defined "
                f"shape, got {args} {kwargs}"
            )
        self._concrete = concrete
        self._private = private  # None once it has failed: the public call from then on
        self._signature = args
        self._inputs = _Inputs(args)

    @property
    def concrete(self) -> Any:
        """The wrapped concrete function."""
        return self._concrete

    @property
    def captured_inputs(self) -> list[Any]:
        """What the graph reads beside its inputs (``concrete.captured_inputs``)."""
        return self._concrete.captured_inputs

    def __call__(self, *args: Any, captured: list[Any] | None = None) -> Any:
        tensors = self._inputs.flat(args)
        if self._private is not None:
            inputs = self._concrete.captured_inputs if captured is None else captured
            try:
                return self._private(self._concrete, tensors, inputs)
            except BROKEN as err:
                if not _is_signature_error(err):
                    raise
                self._private = None
                warn_fallback(
                    "TensorFlow's ConcreteFunction._call_flat",
                    "the concrete function's public call",
                    "with TensorFlow's per-call argument binding",
                    err,
                )
        return self._public(tensors, captured)

    def _public(self, tensors: list[tf.Tensor], captured: list[Any] | None) -> Any:
        """The public call on the same tensors; on other captured inputs, impossible."""
        own = self._concrete.captured_inputs
        if captured is not None and (
            len(captured) != len(own) or any(a is not b for a, b in zip(captured, own, strict=True))
        ):
            raise CapturesUnavailable(
                f"{self._concrete.name}: running on other captured inputs (a WeightCopy) needs "
                "ConcreteFunction._call_flat, which this TensorFlow lacks; plan with the "
                "networks' own weights instead (train(overlap=False))"
            )
        return self._concrete(*tf.nest.pack_sequence_as(self._signature, tensors))


class _Inputs:
    """A traced signature's positional tensors: a call's arguments checked against it (structure,
    then each input's dtype and shape) and flattened, NumPy arrays and Python scalars converted."""

    def __init__(self, signature: Any) -> None:
        self._signature = signature
        self._expected = [
            (s.dtype, tuple(s.shape.as_list()), s.name or f"#{i}")
            for i, s in enumerate(tf.nest.flatten(signature))
        ]

    def flat(self, args: Any) -> list[tf.Tensor]:
        try:
            tf.nest.assert_same_structure(self._signature, args)
        except (TypeError, ValueError):
            expected = tf.nest.map_structure(lambda _: "tensor", self._signature)
            raise ConfigError(
                f"the arguments do not match the traced signature {expected}"
            ) from None
        tensors = []
        for value, (dtype, shape, name) in zip(tf.nest.flatten(args), self._expected, strict=True):
            tensor = value if isinstance(value, tf.Tensor) else tf.constant(value)
            if tensor.dtype != dtype or tuple(tensor.shape) != shape:
                raise ConfigError(
                    f"input {name!r} is {tensor.dtype.name} {list(tensor.shape)}; "
                    f"expected {dtype.name} {list(shape)}"
                )
            tensors.append(tensor)
        return tensors


class StoredCall:
    """A stored graph (:class:`~experiments.muzero.runtime.graph_store.BoundGraph`) called as
    :class:`FlatCall` calls the traced function it was stored from: the same positional
    ``signature`` (a tuple of ``TensorSpec``), the same checks, ``captured=`` in the order of
    :attr:`captured_inputs`; returns its outputs flat, as a tuple (what the traced function
    returns where that is a tuple of tensors, as the compiled search's).

    If the stored call fails as a changed private API fails (TensorFlow's ``call_function``
    taking other arguments: a :data:`~experiments.base.private_api.BROKEN` error, raised before
    anything runs), or its first call as a refused definition fails (:data:`REFUSED`), it warns
    once and calls ``fallback()`` (a :class:`FlatCall` of the traced function) from then on, a
    ``captured=`` list carried over variable by variable.
    """

    def __init__(self, bound: Any, signature: tuple, *, fallback: Any) -> None:
        self._bound = bound
        self._inputs = _Inputs(signature)
        self._fallback = fallback
        self._traced: FlatCall | None = None
        self._ran = False

    @property
    def captured_inputs(self) -> list[Any]:
        """What the graph reads beside its inputs, in the stored order."""
        return list(self._bound.captured_inputs)

    def __call__(self, *args: Any, captured: list[Any] | None = None) -> tuple:
        if self._traced is None:
            tensors = self._inputs.flat(args)
            try:
                outputs = tuple(self._bound(tensors, captured))
                self._ran = True
                return outputs
            except (*BROKEN, *REFUSED) as err:
                if isinstance(err, REFUSED) and self._ran:
                    raise
                warn_fallback(
                    "TensorFlow's context.call_function (a stored graph)",
                    "the traced function",
                    "tracing it in every process",
                    err,
                )
                self._traced = self._fallback()
        if captured is not None:  # the same swaps, in the traced function's order
            swaps = {id(a): b for a, b in zip(self._bound.captured_inputs, captured, strict=True)}
            captured = [swaps.get(id(c), c) for c in self._traced.captured_inputs]
        return tuple(tf.nest.flatten(self._traced(*args, captured=captured)))
