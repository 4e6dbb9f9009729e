"""Detectors of hallucinated claims in peer reviews (HalluPeer, reference 004), as registered systems:

`review_llm_judge` (RA-LLM: BM25 evidence, KR / CoT / Contrast, sentence or review mode),
`review_nli` (entailment by a small CPU model, SmolLM2 by default), `review_lexical` (numbers the
paper never states; no model), `review_null` and `review_flag_all` (the controls: flag nothing, flag everything) and `review_import` (predictions made elsewhere, JSONL). Each takes
`review` items (payload = `ReviewCopy`) and returns one Output per review: HALLUCINATED / VALID,
with `detail["review"] = ReviewPrediction.to_detail()`. Importing the package registers them.
"""

from verifiers.review_detectors import external, lexical, llm_judge, null

__all__ = ["external", "lexical", "llm_judge", "null"]
