"""``gradlab pool``: one endpoint across strata (folders, or the settings a folder varies), each
variant's contrast with the baseline pooled over them (``across``), and its text (``render``)."""
