"""Citation verifiers (systems under test on citation corpora) and the offline bibliographic index."""
