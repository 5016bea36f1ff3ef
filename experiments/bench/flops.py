"""Analytic FLOP counts of the train step, and a large compiled matmul as the practical peak.

A Dense layer ``in -> out`` costs ``2 * in * out`` FLOPs per sample forward (one multiply and one
add per weight); the backward pass costs twice that (gradients with respect to the input and to
the kernel), so forward + backward is ``3 * 2 * in * out``. One K-step train step calls the
representation once, the dynamics K times and the prediction K + 1 times per sample, so::

    train_step_flops = 3 * B * (F_repr + K * F_dyn + (K + 1) * F_pred)

with ``F_net`` the forward FLOPs per sample of a network (sum over its Dense layers). Biases,
activations, the normalisation, the losses and the optimizer are not counted: the figure is a
lower bound on the work done, as is usual when quoting achieved FLOP/s.

:func:`graph_matmul_flops` counts independently, with TensorFlow's graph cost analysis (the v1
profiler's ``float_operation``), the FLOPs of every MatMul in a traced function. On the train step
it finds exactly the analytic count less the one product the backward pass skips: the gradient
with respect to the observations, ``2 * B * O * width`` (tested in ``tests/test_bench.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

__all__ = [
    "dense_shapes",
    "forward_flops",
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


def forward_flops(model: keras.Model) -> int:
    """Forward FLOPs per sample of a model's Dense layers: ``sum 2 * in * out``."""
    return sum(2 * fan_in * fan_out for fan_in, fan_out in dense_shapes(model))


def train_step_flops(
    representation: keras.Model,
    dynamics: keras.Model,
    prediction: keras.Model,
    *,
    batch_size: int,
    unroll_steps: int,
) -> int:
    """FLOPs of one K-step train step (forward + backward, Dense layers only; module docstring)."""
    per_sample = (
        forward_flops(representation)
        + unroll_steps * forward_flops(dynamics)
        + (unroll_steps + 1) * forward_flops(prediction)
    )
    return 3 * batch_size * per_sample


def graph_matmul_flops(function: Callable, *args: Any) -> int:
    """FLOPs of the MatMul ops of ``tf.function(function)`` traced on ``args``, by TensorFlow's
    graph cost analysis (``2 * m * n * k`` per ``[m, k] @ [k, n]``); shapes must be static."""
    graph = tf.function(function).get_concrete_function(*args).graph
    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    profile = tf.compat.v1.profiler.profile(graph=graph, options=options)
    return sum(
        node.total_float_ops
        for node in profile.children
        if graph.get_operation_by_name(node.name).type == "MatMul"
    )


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
