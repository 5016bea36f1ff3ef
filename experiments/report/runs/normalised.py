"""The normalised return of each run: ``(R - R_rand) / (R_ref - R_rand)``.

``R`` is the run's final return (the final-window mean of its evaluations); a diverged run, or
one without a final return, counts at ``R_rand`` (normalised 0), as the table counts every run.
``R_ref`` and ``R_rand`` are declared per task before the runs (a study's record; the caller
passes them: the report reads no protocol). 0 is a random policy, 1 the reference (the baseline's
mean on calibration seeds).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from experiments.base.errors import ConfigError

__all__ = ["COLUMN", "add_normalised"]

COLUMN = "normalised_return"


def add_normalised(
    runs: pd.DataFrame, normalisation: Mapping[str, tuple[float, float]]
) -> pd.DataFrame:
    """``runs`` with the ``normalised_return`` column.

    Args:
      runs: ``[N]`` rows with ``task``, ``final_return``, ``diverged`` and ``reward_scale``.
      normalisation: task -> ``(r_ref, r_rand)``, unscaled (a run's returns are divided by its
        reward scale first).

    Raises:
      ConfigError: a task of the runs without a normalisation, or with ``r_ref <= r_rand``.
    """
    out = runs.copy()
    values = np.full(len(out), np.nan)
    tasks = out["task"].astype(str).to_numpy()
    final = pd.to_numeric(out["final_return"], errors="coerce").to_numpy(dtype=float)
    scale = pd.to_numeric(out["reward_scale"], errors="coerce").fillna(1.0).to_numpy(dtype=float)
    diverged = pd.to_numeric(out["diverged"], errors="coerce").to_numpy(dtype=float) >= 0.5
    for task in sorted(set(tasks)):
        if task not in normalisation:
            known = ", ".join(sorted(normalisation)) or "none"
            raise ConfigError(
                f"normalised_return needs task {task!r}'s R_ref and R_rand, declared before the "
                f"runs (a study's record); declared for: {known}"
            )
        ref, rand = normalisation[task]
        if not ref > rand:
            raise ConfigError(f"task {task!r}: R_ref {ref} is not above R_rand {rand}")
        mine = tasks == task
        values[mine] = (final[mine] / scale[mine] - rand) / (ref - rand)
    values[diverged | ~np.isfinite(final)] = 0.0
    out[COLUMN] = values
    return out
