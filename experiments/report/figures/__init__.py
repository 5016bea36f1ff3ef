"""``gradlab plot``: the figures of a results folder (``plots``), their layout, drawing and style,
bootstrap bands, the intention-to-treat matrix, curves, run status, final returns and the
performance profile. Loads matplotlib."""
