"""gradlab calibrate: a declared ladder run rung by rung on the baseline alone, counted against a
rule, recorded."""
