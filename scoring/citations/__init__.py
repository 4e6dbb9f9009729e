"""Citation-audit scoring: HALLMARK's entry-level metrics, breakdowns, result files, the run report."""
