"""Analytic FLOP counts of the train step, and a large compiled matmul as the practical peak.

A Dense layer ``in -> out`` costs ``2 * in * out`` FLOPs per sample forward (one multiply and one
add per weight); a Conv2D layer (MinAtar's image torso) costs ``2 * out_h * out_w * kh * kw *
in_c * out_c`` (one multiply-add per kernel weight per output position; ``in_c`` per group). The
backward pass costs twice the forward (gradients with respect to the input and to the kernel), so
forward + backward is ``3 *`` the forward. One K-step train step calls the representation once,
the dynamics K times and the prediction K + 1 times per sample, so::

    train_step_flops = 3 * B * (F_repr + K * F_dyn + (K + 1) * F_pred)

with ``F_net`` the forward FLOPs per sample of a network (sum over its Dense and Conv2D layers).
Biases, activations, reshapes, the normalisation, the losses and the optimizer are not counted.
The first layer's gradient with respect to the observations is counted, though the backward pass
does not need it: ``2 * B * O * width`` too many for an MLP, ``B * F_conv`` for the conv torso
(its own FLOPs once). Otherwise the figure is the work of the products the step runs.

:func:`graph_flops` counts independently, with TensorFlow's graph cost analysis (the v1
profiler's ``float_operation``), the FLOPs of the ops of a traced function by op type;
:func:`graph_matmul_flops` keeps the MatMuls. Forward, its MatMul and Conv2D counts are exactly
the analytic ones. On the traced train step (``tests/bench/test_bench.py``):

* the MatMuls are exactly ``3 * B *`` the Dense forward less the skipped observation gradient
  of an MLP's first layer (TensorFlow builds no such product);
* behind the conv torso, every Dense layer's input gradient is needed, so the MatMuls are
  exactly ``3 * B *`` the Dense forward; the Conv2D is ``B * F_conv``; the conv's input gradient is
  built (``Conv2DBackpropInput``) but unused, and XLA's compiled step keeps two convolutions,
  the forward and the kernel gradient; TensorFlow counts that kernel gradient
  (``Conv2DBackpropFilter``) over the input image rather than the output positions, ``2 *
  10*10 * 3*3 * in_c * 16`` per sample on MinAtar's boards against the analytic ``2 * 8*8 *
  3*3 * in_c * 16`` of a VALID convolution.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

__all__ = [
    "conv_flops",
    "dense_shapes",
    "forward_flops",
    "graph_flops",
    "graph_matmul_flops",
    "matmul_case",
    "train_step_flops",
]


def dense_shapes(model: keras.Model) -> list[tuple[int, int]]:
    """``(in, out)`` of every Dense layer of a built Keras model, in layer order."""
    shapes = []
    for layer in model.layers:
        if isinstance(layer, keras.layers.Dense):
            fan_in, fan_out = layer.kernel.shape
            shapes.append((int(fan_in), int(fan_out)))
    return shapes


def conv_flops(layer: keras.layers.Conv2D) -> int:
    """Forward FLOPs per sample of a built Conv2D layer of a functional model:
    ``2 * out_h * out_w * kh * kw * in_c * out_c`` (``in_c`` per group, as its kernel holds)."""
    _, out_h, out_w, _ = layer.output.shape
    return 2 * int(out_h) * int(out_w) * math.prod(int(d) for d in layer.kernel.shape)


def forward_flops(model: keras.Model) -> int:
    """Forward FLOPs per sample of a model's Dense and Conv2D layers: ``sum 2 * in * out`` over
    its Dense layers plus :func:`conv_flops` of each Conv2D (channels last)."""
    dense = sum(2 * fan_in * fan_out for fan_in, fan_out in dense_shapes(model))
    convs = [layer for layer in model.layers if isinstance(layer, keras.layers.Conv2D)]
    for layer in convs:
        if layer.data_format != "channels_last":
            raise ValueError(f"{layer.name}: only channels_last Conv2D layers are counted")
    return dense + sum(conv_flops(layer) for layer in convs)


def train_step_flops(
    representation: keras.Model,
    dynamics: keras.Model,
    prediction: keras.Model,
    *,
    batch_size: int,
    unroll_steps: int,
) -> int:
    """FLOPs of one K-step train step (forward + backward, Dense and Conv2D layers; module
    docstring)."""
    per_sample = (
        forward_flops(representation)
        + unroll_steps * forward_flops(dynamics)
        + (unroll_steps + 1) * forward_flops(prediction)
    )
    return 3 * batch_size * per_sample


def graph_flops(function: Callable, *args: Any) -> dict[str, int]:
    """FLOPs of the ops of ``tf.function(function)`` traced on ``args``, summed by op type, by
    TensorFlow's graph cost analysis (only op types with a registered count appear: ``MatMul``
    ``2 * m * n * k`` per ``[m, k] @ [k, n]``, ``Conv2D`` ``2 * outputs * kh * kw * in_c``,
    ``Conv2DBackpropFilter``, ...); shapes must be static."""
    graph = tf.function(function).get_concrete_function(*args).graph
    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    profile = tf.compat.v1.profiler.profile(graph=graph, options=options)
    totals: dict[str, int] = {}
    for node in profile.children:
        kind = graph.get_operation_by_name(node.name).type
        totals[kind] = totals.get(kind, 0) + int(node.total_float_ops)
    return totals


def graph_matmul_flops(function: Callable, *args: Any) -> int:
    """The MatMul FLOPs of :func:`graph_flops` (``2 * m * n * k`` per ``[m, k] @ [k, n]``)."""
    return graph_flops(function, *args).get("MatMul", 0)


def matmul_case(size: int, *, calls: int, seed: int):
    """A compiled ``[size, size] @ [size, size]`` float32 matmul called ``calls`` times.

    Returns:
      ``(run, flops)``: ``run()`` does the calls and waits for the result; ``flops`` is
      ``calls * 2 * size**3``.
    """
    generator = tf.random.Generator.from_seed(seed)
    a = generator.normal((size, size))
    b = generator.normal((size, size))
    matmul = tf.function(tf.matmul, jit_compile=True)

    def run() -> float:
        out = None
        for _ in range(calls):
            out = matmul(a, b)
        return float(out[0, 0])  # waits for the device

    return run, calls * 2 * size**3
