"""Paper-audit corpora: LaTeX papers loaded byte-exact, the sub-type registry, rule injectors and
the LLM proposer, the validator, and the clean + three injected copies per paper."""
