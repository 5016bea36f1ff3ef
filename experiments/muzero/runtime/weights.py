"""A copy of the networks' weights in variables of its own, which a compiled function that reads
the networks' variables can read instead.

A compiled function receives the variables it reads as their resource handles, given at every
call (``ConcreteFunction.captured_inputs``); given the handles of other variables of the same
shapes and dtypes, the same program reads those
(:class:`~experiments.muzero.runtime.compiled_call.FlatCall`, ``captured=``). So an evaluation
can plan with the weights of its training step, on another thread, while training changes the
networks: :meth:`WeightCopy.refresh` copies them (one call for all variables), and the copy does
not change until the next refresh. No second program is traced or compiled, and on the same
values the program computes the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

__all__ = ["WeightCopy", "tf_variable"]


def tf_variable(variable: Any) -> tf.Variable:
    """The TensorFlow variable behind a Keras variable (or the variable itself)."""
    if isinstance(variable, tf.Variable):
        return variable
    inner = getattr(variable, "value", None)  # a Keras variable's TensorFlow variable
    if not isinstance(inner, tf.Variable):
        raise TypeError(f"{variable!r} is not backed by a TensorFlow variable")
    return inner


class WeightCopy:
    """Variables of its own holding a copy of ``variables``' values as of the last refresh.

    Args:
      variables: Keras (or TensorFlow) variables, e.g. ``Networks.variables``; copied now.
    """

    def __init__(self, variables: Sequence[Any]) -> None:
        self._originals = [tf_variable(v) for v in variables]
        self._copies = [
            tf.Variable(v, trainable=False, name=f"copy_{i}") for i, v in enumerate(self._originals)
        ]
        pairs = list(zip(self._copies, self._originals, strict=True))

        def copy() -> list[tf.Tensor]:
            return [target.assign(source) for target, source in pairs]

        self._refresh = tf.function(copy, autograph=False).get_concrete_function()
        self._handles = {id(source.handle): target.handle for target, source in pairs}

    def refresh(self) -> None:
        """Copies the variables' current values (one compiled call for all of them)."""
        self._refresh()

    def values(self) -> list[tf.Tensor]:
        """The copy's values, one tensor per variable (for tests and checks)."""
        return [tf.convert_to_tensor(c) for c in self._copies]

    def captured(self, captured_inputs: Sequence[Any]) -> list[Any]:
        """A function's captured inputs with every copied variable's handle replaced by its
        copy's; other captures are kept.

        Raises:
          ValueError: the function captured none of the copied variables (nothing to swap).
        """
        swapped = [self._handles.get(id(c), c) for c in captured_inputs]
        if all(s is c for s, c in zip(swapped, captured_inputs, strict=True)):
            raise ValueError("the function reads none of the copied variables")
        return swapped
