"""The report: a results folder -> seed statistics, contrasts, tables and figures.

By role, lowest first (a subpackage imports only those before it):

* ``runs/``: a results folder read into one row per run (``results``), every run counted once
  (``counting``), each run's outcome endpoints (``endpoints``);
* ``statistics/``: the tests and intervals, knowing nothing of folders: estimates, intervals and
  the one percentile bootstrap (``intervals``), the tests and Holm (``significance``), the
  contrasts and their families (``contrasts``), competing risks (``competing``), equivalence
  (``equivalence``), pooled over strata: Cochran-Mantel-Haenszel (``pooled_rates``) and van
  Elteren (``pooled_ranks``);
* ``table/``: ``gradlab table``: :func:`~experiments.report.table.summarize.summarize` -> one
  typed :class:`~experiments.report.table.summarize.Table`, its caption, its Markdown, LaTeX,
  CSV and JSON;
* ``pool/``: ``gradlab pool``: one endpoint across strata, pooled (the table and its text);
* ``figures/``: ``gradlab plot`` (import it explicitly: it loads matplotlib).
* ``export/``: ``gradlab export``: the runs and curves as CSV or parquet, and the score matrix
  rliable takes.

Its faces are its subpackages' (``experiments.report.table``, ...): the package itself
exports nothing.
"""

__all__: list[str] = []
