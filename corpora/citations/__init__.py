"""Citation corpora: HALLMARK JSONL and BibTeX loaders, the HALLMARK taxonomy, the seeded citation
generator and its perturbations, the CiteIntegrity suite."""
