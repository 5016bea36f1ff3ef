"""From a command line to running jobs: the plan (compose, validate, locate), Hydra's entry and
task function, and the one sweep service (:mod:`experiments.launch.sweep`: launcher settings and
the deal of jobs to workers (:mod:`~experiments.launch.dealing`), counting, stops held by
:mod:`~experiments.launch.lifetime`) that ``gradlab sweep``, ``calibrate`` and ``study run`` call
in-process."""
