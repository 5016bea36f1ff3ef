"""``gradlab table``: the runs of one folder -> one typed ``Table`` (``summarize``), its metrics
(``metrics``), its caption (``caption``) and its text: Markdown, LaTeX, CSV, JSON (``render``,
``markup``)."""
