"""Private APIs of libraries, each behind one function with a public fallback.

gradlab calls four private APIs, each for speed only (docs/performance_private.md):

* TensorFlow's ``ConcreteFunction._call_flat`` (:mod:`experiments.muzero.runtime.compiled_call`);
* TensorFlow's ``context.add_function_def``, ``context.call_function``, ``ops.uid`` and
  ``config.is_op_determinism_enabled``, which run a stored graph without tracing it
  (:mod:`experiments.muzero.runtime.graph_store`);
* Hydra's ``ConfigLoaderImpl._apply_overrides_to_config`` (:mod:`experiments.launch.plan`);
* Hydra's internal ``BasicSweeper``, subclassed (``hydra_plugins/gradlab_sweeper``).

Each appears in exactly one function. That function tries the private path. If the library no longer
has it (an :data:`BROKEN` error: a module or attribute gone, or a signature changed), the function
warns once with :func:`warn_fallback` and takes its public fallback. The fallback gives the same
results, more slowly; the failure does not stop every run.
"""

from __future__ import annotations

import warnings

__all__ = ["BROKEN", "PrivateAPIWarning", "warn_fallback"]

BROKEN = (ImportError, AttributeError, TypeError)
"""What a private API that moved, vanished or changed its signature raises."""


class PrivateAPIWarning(UserWarning):
    """A private API is unavailable; gradlab took its public fallback."""


def warn_fallback(api: str, fallback: str, cost: str, error: BaseException) -> None:
    """Warns that ``api`` failed with ``error`` and that ``fallback`` is used instead.

    The text depends only on its arguments, and it is always raised from the caller's single
    line. Python's default warning filter therefore shows it once per process, however often the
    fallback is then taken.
    """
    warnings.warn(
        f"{api} is unavailable ({type(error).__name__}: {error}); gradlab uses {fallback} "
        f"instead: the same results, {cost}",
        PrivateAPIWarning,
        stacklevel=2,
    )
