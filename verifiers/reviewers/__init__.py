"""AI paper reviewers (systems under test on paper-audit corpora): LLM, mechanical, imported reviews."""
