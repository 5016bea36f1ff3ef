"""gradlab's library: gradient variants, the MuZero toy task, the runner and the reports."""
