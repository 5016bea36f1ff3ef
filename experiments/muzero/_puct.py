"""The pUCT exploration weight both searches share (private).

The pseudocode's ``ucb_score`` (Schrittwieser et al., 2020, Appendix "Pseudocode") weights a
child's prior by ``pb_c = log((N + pb_c_base + 1) / pb_c_base) + pb_c_init`` times ``sqrt(N)``, N
the parent's visits (and divides by the child's visits + 1). The compiled search
(:mod:`~experiments.muzero._tree_tf`) and the NumPy reference
(:mod:`~experiments.muzero._reference_tree`) both read that weight from a table this function
fills on the host, so they agree on it bit for bit.
"""

from __future__ import annotations

import numpy as np

__all__ = ["exploration_weight"]


def exploration_weight(visits: np.ndarray, pb_c_base: float, pb_c_init: float) -> np.ndarray:
    """``(log((N + pb_c_base + 1) / pb_c_base) + pb_c_init) * sqrt(N)``, elementwise, float64."""
    visits = np.asarray(visits, np.float64)
    return (np.log((visits + pb_c_base + 1.0) / pb_c_base) + pb_c_init) * np.sqrt(visits)
