"""gradlab from Python: a results folder as pandas frames and typed tables, as the CLI gives them.

No TensorFlow is imported (a notebook opens fast); every function reads committed files only.

* :func:`runs`: one row per run (settings, seed, status, outcome class, every endpoint, the
  normalised return where the folder's study record declares it, identity and times).
* :func:`curves`: the evaluation and training curves in long format (job, variant, seed, task,
  step, metric, value): what pandas, seaborn and R expect.
* :func:`table`: the typed table ``gradlab table`` prints (its ``to_markdown()``/``to_latex()``
  and Jupyter's ``_repr_html_``), the study's registered contrast starred as the CLI does.
* :func:`pool`: ``gradlab pool`` as a typed table: a study across tasks' registered family, or
  one endpoint across folders.
* :func:`scores`: the score matrix rliable takes, ``{arm: array[runs, tasks]}``, normalised as
  the folders' study records declare (``gradlab export --format rliable`` writes it).
"""

from __future__ import annotations

from gradlab._api import curves, pool, runs, table
from gradlab._export import scores

__all__ = ["curves", "pool", "runs", "scores", "table"]
