"""The tests and intervals of the report, over arrays and counts (no folder, no table): estimates,
intervals and the one percentile bootstrap (``intervals``), the tests and Holm (``significance``),
a contrast and its family (``contrasts``), competing risks (``competing``), equivalence
(``equivalence``), pooled over strata (``pooled_rates``: Cochran-Mantel-Haenszel;
``pooled_ranks``: van Elteren)."""
