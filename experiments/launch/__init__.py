"""From a command line to running jobs: the plan (compose, validate, locate), Hydra's entry and
task function."""
