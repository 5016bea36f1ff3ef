"""``gradlab bench``: performance figures as ratios measured side by side in one process.

Modules: ``measures`` (the settings and what is measured: rates, ratios, times, the report;
no TensorFlow), ``suite`` (:func:`run_bench`), ``train_step`` (compiled / eager /
pseudocode-loop train steps), ``search`` (batched vs one-at-a-time search), ``flops`` (analytic
FLOP counts, reference matmul), ``end_to_end`` (a default catch run, CLI start time),
``minatar`` (the compiled train step and search at the MinAtar preset's sizes). Importing this
package imports no TensorFlow; :func:`run_bench` does, and so do the train step's helpers
``benchmarks/`` uses (:func:`make_learner`, :func:`random_batch`), loaded at first use with the
interleaved timing (:class:`Case`, :func:`interleaved_rates`, :func:`median`; PEP 562:
:func:`experiments.base.faces.lazy_face`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from experiments.base.faces import lazy_face
from experiments.bench.measures import BenchReport, BenchSettings, Rate, Ratio, Timing
from experiments.bench.suite import run_bench

if TYPE_CHECKING:
    from experiments.bench._timing import Case, interleaved_rates, median
    from experiments.bench.train_step import make_learner, random_batch

__all__ = [
    "BenchReport",
    "BenchSettings",
    "Case",
    "Rate",
    "Ratio",
    "Timing",
    "interleaved_rates",
    "make_learner",
    "median",
    "random_batch",
    "run_bench",
]

_LAZY = {
    "_timing": ("Case", "interleaved_rates", "median"),
    "train_step": ("make_learner", "random_batch"),
}

__getattr__, __dir__ = lazy_face(
    __name__, _LAZY, [name for names in _LAZY.values() for name in names]
)
