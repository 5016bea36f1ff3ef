"""A results folder read: one row per run (``results``), every run counted once (``counting``),
each run's outcome endpoints (``endpoints``)."""
