"""``gradlab bench``: performance figures as ratios measured side by side in one process.

Modules: ``suite`` (settings, report, :func:`run_bench`), ``train_step`` (compiled / eager /
pseudocode-loop train steps), ``search`` (batched vs one-at-a-time search), ``flops`` (analytic
FLOP counts, reference matmul), ``end_to_end`` (a default catch run, CLI start time),
``minatar`` (the compiled train step and search at the MinAtar preset's sizes). Importing this
package imports no TensorFlow; :func:`run_bench` does.
"""

from experiments.bench.suite import BenchReport, BenchSettings, Rate, Ratio, Timing, run_bench

__all__ = ["BenchReport", "BenchSettings", "Rate", "Ratio", "Timing", "run_bench"]
