"""A traced function called with its flat tensors: TensorFlow's per-call binding left out.

Calling a ``tf.function``'s concrete function binds the call's arguments to the traced signature
on every call (``inspect``-style binding, then a ``TensorSpec`` cast and subtype check per
input) before it runs the graph. For the default train step (7 inputs in a dict) that binding
cost 0.1-0.3 ms a call on this machine, about 5% of the step, and about 0.05-0.07 ms (5-6%) for
a self-play move's search (5 inputs) (``python benchmarks/dispatch_cost.py``). :class:`FlatCall`
checks each input's dtype and shape against the signature itself (a tuple comparison per input)
and runs the graph through the concrete function's own flat entry point
(``ConcreteFunction._call_flat``, what the public call ends in after binding): the same graph on
the same tensors, so the numbers are the same bit for bit (``tests/test_compiled_call.py``).
``_call_flat`` is private to TensorFlow, pinned here at 2.21.0; the tests fail if it goes away
or changes what it returns.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from experiments.errors import ConfigError

__all__ = ["FlatCall"]


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
    """

    def __init__(self, concrete: Any) -> None:
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
        self._signature = args
        self._expected = [
            (s.dtype, tuple(s.shape.as_list()), s.name or f"#{i}") for i, s in enumerate(specs)
        ]

    @property
    def concrete(self) -> Any:
        """The wrapped concrete function."""
        return self._concrete

    def __call__(self, *args: Any, captured: list[Any] | None = None) -> Any:
        try:
            tf.nest.assert_same_structure(self._signature, args)
        except (TypeError, ValueError):
            expected = tf.nest.map_structure(lambda _: "tensor", self._signature)
            raise ConfigError(
                f"the arguments do not match the traced signature {expected}"
            ) from None
        flat = tf.nest.flatten(args)
        tensors = []
        for value, (dtype, shape, name) in zip(flat, self._expected, strict=True):
            tensor = value if isinstance(value, tf.Tensor) else tf.constant(value)
            if tensor.dtype != dtype or tuple(tensor.shape) != shape:
                raise ConfigError(
                    f"input {name!r} is {tensor.dtype.name} {list(tensor.shape)}; "
                    f"expected {dtype.name} {list(shape)}"
                )
            tensors.append(tensor)
        if captured is None:
            captured = self._concrete.captured_inputs
        return self._concrete._call_flat(tensors, captured)  # noqa: SLF001
