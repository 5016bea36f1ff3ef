"""A small, faithful MuZero in TensorFlow (Schrittwieser et al., 2020), split by role.

* :mod:`~experiments.muzero.config`: ``MuZeroConfig`` / ``NetworkConfig``, validated;
* :mod:`~experiments.muzero.support`: h(x), its inverse, two-hot value/reward supports;
* :mod:`~experiments.muzero.networks`: representation, dynamics, prediction (Keras MLPs);
* :mod:`~experiments.muzero.search_tf`: batched MCTS, the whole search one compiled graph per move;
* :mod:`~experiments.muzero.reference_search`: the same search in NumPy, the readable reference
  the compiled one is checked against (tests, ``gradlab bench``; no run uses it);
* :mod:`~experiments.muzero.replay`: replay buffer and ``make_target``;
* :mod:`~experiments.muzero.selfplay`: acting over vectorised environments, evaluation;
* :mod:`~experiments.muzero.learner`: the compiled K-step ``update_weights`` and its diagnostics;
* :mod:`~experiments.muzero.train`: ``train(config, task, variant, placement, *, seed)``, the
  generator of per-step metrics the runner consumes;
* :mod:`~experiments.muzero.runtime`: speed machinery (compiled calls, weight copies, work on
  worker threads) that changes no number.

Nothing is imported here, so that importing the package stays cheap (TensorFlow loads only when
a submodule is used).

The face (``__all__``) is what the packages above use (:func:`experiments.muzero.train.train`,
named as its module, is imported from it); its names load at first use, each from its module (PEP
562: :func:`experiments.base.faces.lazy_face`), so that importing the package loads none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from experiments.base.faces import lazy_face

if TYPE_CHECKING:
    from experiments.muzero.agents import AgentCache
    from experiments.muzero.config import MuZeroConfig, NetworkConfig
    from experiments.muzero.learner import Learner, StepInputs
    from experiments.muzero.networks import Networks
    from experiments.muzero.options import LOSS_SCALES, NORMALISATIONS, Q_FORMS
    from experiments.muzero.reference_search import run_search
    from experiments.muzero.replay import Batch
    from experiments.muzero.search_tf import CompiledSearch, draw_randomness
    from experiments.muzero.selfplay import Inference, act
    from experiments.muzero.support_sizes import SupportSizes, resolve_support_sizes

__all__ = [
    "AgentCache",
    "Batch",
    "CompiledSearch",
    "Inference",
    "LOSS_SCALES",
    "Learner",
    "MuZeroConfig",
    "NORMALISATIONS",
    "NetworkConfig",
    "Networks",
    "Q_FORMS",
    "StepInputs",
    "SupportSizes",
    "act",
    "draw_randomness",
    "resolve_support_sizes",
    "run_search",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "agents": ("AgentCache",),
        "config": (
            "MuZeroConfig",
            "NetworkConfig",
        ),
        "learner": (
            "Learner",
            "StepInputs",
        ),
        "networks": ("Networks",),
        "options": (
            "LOSS_SCALES",
            "NORMALISATIONS",
            "Q_FORMS",
        ),
        "reference_search": ("run_search",),
        "replay": ("Batch",),
        "search_tf": (
            "CompiledSearch",
            "draw_randomness",
        ),
        "selfplay": (
            "Inference",
            "act",
        ),
        "support_sizes": (
            "SupportSizes",
            "resolve_support_sizes",
        ),
    },
    __all__,
)
