"""``gradlab bench``: performance figures as ratios measured side by side in one process.

Modules: ``measures`` (the settings and what is measured: rates, ratios, times, the report;
no TensorFlow), ``suite`` (:func:`run_bench`), ``train_step`` (compiled / eager /
pseudocode-loop train steps), ``search`` (batched vs one-at-a-time search), ``flops`` (analytic
FLOP counts, reference matmul), ``end_to_end`` (a default catch run, CLI start time),
``minatar`` (the compiled train step and search at the MinAtar preset's sizes). Importing this
package imports no TensorFlow; :func:`run_bench` does.
"""

from experiments.bench.measures import BenchReport, BenchSettings, Rate, Ratio, Timing
from experiments.bench.suite import run_bench

__all__ = ["BenchReport", "BenchSettings", "Rate", "Ratio", "Timing", "run_bench"]
