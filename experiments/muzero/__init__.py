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
"""
