# Gray's test and cumulative incidence from R's cmprsk (Gray's own package) on the data sets of
# tests/data/competing_cases.csv; the literals in tests/report/test_competing.py are its output.
# Run from the repository root:  Rscript tests/data/competing_cuminc.R
# (cmprsk 2.2.11 on R 4.x; Debian: apt-get install r-base r-cran-cmprsk)
suppressPackageStartupMessages(library(cmprsk))
cases <- read.csv("tests/data/competing_cases.csv", stringsAsFactors = FALSE)
options(digits = 17)
cat("kind,case,group,time,value\n")
for (name in unique(cases$case)) {
  d <- cases[cases$case == name, ]
  fit <- cuminc(d$time, d$cause, d$group, cencode = 0)
  tests <- fit$Tests
  if (!("1" %in% rownames(tests))) {  # no run reached it: cmprsk defines no cause-1 test
    cat(sprintf("stat,%s,,,NA\n", name))
    next
  }
  cat(sprintf("stat,%s,,,%.17g\n", name, tests["1", "stat"]))
  cat(sprintf("pv,%s,,,%.17g\n", name, tests["1", "pv"]))
  cat(sprintf("df,%s,,,%d\n", name, as.integer(tests["1", "df"])))
  at <- sort(unique(c(quantile(d$time, c(0.25, 0.5, 0.75), type = 1), max(d$time))))
  est <- timepoints(fit, at)$est
  for (g in sort(unique(d$group))) {
    row <- paste(g, "1")
    for (i in seq_along(at)) {
      cat(sprintf("est,%s,%s,%.17g,%.17g\n", name, g, at[i], est[row, i]))
    }
  }
}
