"""A job's life: what it runs (:mod:`job`), its row loop (:mod:`runner`), its results folder,
names, resume and locks (:mod:`store`), its ``summary.json`` (:mod:`summary`), its W&B mirror
(:mod:`tracking`); and, in its own room, the process plumbing around it (:mod:`process`: a job in
its own process on a process server, and how the job's processes end with their sweep), which the
job's own modules never import.

Nothing here composes a config (:mod:`experiments.launch.plan` does), deals jobs to workers or
holds a sweep's signals (:mod:`experiments.launch`), or trains (``experiments/muzero``).
"""
