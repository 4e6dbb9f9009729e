"""Review-hallucination audits (HalluPeer's tasks): review records, ingest, segmentation, injection.

Modules, in the order a corpus is made:

- `records`: the records that cross rooms (ReviewCopy, ReviewTruth, ReviewPrediction, ...).
- `ingest`: ReviewCritique JSONL, generic JSONL and OpenReview exports -> `ReviewSource`s.
- `segmentation`: sentences with exact character offsets (pysbd); `aspects`: aspect tags.
- `taxonomy` (+ `data/taxonomy.toml`): the nine anchors and their leaves, extensible.
- `screening`, `rule_injectors`, `llm_injector`, `equivalence`, `changes`: HalluPeer §4.
- `corpus_builder`: the seeded clean + injected copies with truth and counts; `corpus_io`: files.

Heavy imports (pysbd) happen on first use; importing this package loads only the records.
"""

from corpora.reviews.records import (
    ANCHORS,
    ReviewCopy,
    ReviewInjection,
    ReviewPrediction,
    ReviewSentence,
    ReviewTruth,
    Span,
)

__all__ = ["ANCHORS", "ReviewCopy", "ReviewInjection", "ReviewPrediction", "ReviewSentence", "ReviewTruth", "Span"]
