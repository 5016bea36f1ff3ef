"""A job's life: what it runs (:mod:`job`), its row loop (:mod:`runner`), its results folder,
names, resume and locks (:mod:`store`), its ``summary.json`` (:mod:`summary`), its W&B mirror
(:mod:`tracking`), its own process (:mod:`isolation`) on a process server (:mod:`hosting`), how
the processes of a sweep end together (:mod:`lifetime`), and how many jobs a parallel sweep deals
at a time (:mod:`dealing`).

Nothing here composes a config (:mod:`experiments.launch.plan` does) or trains
(``experiments/muzero``).
"""
