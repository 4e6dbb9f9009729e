"""HalluPeer's meta-review alignment filter (Filter_M, §4): which human reviews to inject into.

"We use an LLM filter to compare each review with the corresponding meta-review and assign an
alignment judgment with confidence. [...] only high-confidence, meta-review-aligned reviews are
retained for hallucination injection." The paper publishes no prompt for it; the one here asks for
`{"aligned": true|false, "confidence": "high"|"medium"|"low"}` (aligned: the review's main points
are reflected in the meta-review; a categorical confidence, so "high-confidence" is a label, not a
threshold on a number). A review is kept when aligned with confidence in `keep_confidence`
("high" by default).

Applies to reviews whose forum has a meta-review (OpenReview exports carry them as notes whose
invitation names a Meta_Review); a review without one is kept and counted apart (nothing to align
with). An answer that breaks the contract drops its review and is counted (`unjudged`), never
guessed. A failed call (provider outage) raises: an outage must not shape the corpus, and the
gateway's response cache makes the re-run cheap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from corpora.reviews.gateway import CompletionGateway, first_json_object
from corpora.reviews.ingest import ReviewSource

Confidence = Literal["high", "medium", "low"]
CONFIDENCES: tuple[str, ...] = Confidence.__args__  # type: ignore[attr-defined]

ALIGNMENT_PROMPT = """You compare a peer review of a scientific paper with the meta-review the area chair wrote for that paper.
## Task
Decide whether the review is ALIGNED with the meta-review: its main points (strengths, weaknesses, concerns) are reflected in, or consistent with, what the meta-review says. A review whose main points the meta-review contradicts or ignores is not aligned.
## Inputs
### META-REVIEW
\"\"\"{meta_review}\"\"\"
### REVIEW
\"\"\"{review}\"\"\"
## Output Format
Return a valid JSON object ONLY: {{"aligned": <true or false>, "confidence": "<high, medium or low>"}}
- Output ONLY the JSON object. Do NOT include markdown tags like ```json."""


class AlignmentParseError(ValueError):
    """An answer that does not meet the filter's contract."""


@dataclass(frozen=True)
class Alignment:
    aligned: bool
    confidence: Confidence


def parse_alignment(text: str | None) -> Alignment:
    data = first_json_object(text)
    if data is None:
        raise AlignmentParseError(f"no JSON object in answer: {(text or '')[:120]!r}")
    aligned, confidence = data.get("aligned"), str(data.get("confidence", "")).strip().lower()
    if not isinstance(aligned, bool):
        raise AlignmentParseError(f"'aligned' is {aligned!r}, not true or false")
    if confidence not in CONFIDENCES:
        raise AlignmentParseError(f"'confidence' is {data.get('confidence')!r}, not one of {CONFIDENCES}")
    return Alignment(aligned, confidence)  # type: ignore[arg-type]


@dataclass
class MetaReviewCounts:
    """What the filter did, for the build report."""

    reviews: int = 0
    no_meta_review: int = 0
    """Kept unjudged: the forum has no meta-review."""
    kept: int = 0
    """Judged aligned with a kept confidence."""
    not_aligned: int = 0
    low_confidence: int = 0
    """Judged aligned, but with a confidence not kept."""
    unjudged: int = 0
    """The answer broke the contract: dropped, never guessed."""
    dropped: list[dict[str, str]] = field(default_factory=list)
    """review_id and reason of every review dropped."""


class MetaReviewFilter:
    """Filter_M through the gateway (temperature 0)."""

    def __init__(self, gateway: CompletionGateway, params: dict | None = None,
                 keep_confidence: Sequence[str] = ("high",)) -> None:  # fmt: skip
        unknown = [c for c in keep_confidence if c not in CONFIDENCES]
        if unknown or not keep_confidence:
            raise ValueError(f"keep_confidence must be a non-empty subset of {CONFIDENCES}, got {list(keep_confidence)}")
        self.gateway = gateway
        self.params = {"temperature": 0.0, "max_tokens": 100, **(params or {})}
        self.keep_confidence = tuple(keep_confidence)

    async def judge(self, review_text: str, meta_review: str) -> Alignment:
        prompt = ALIGNMENT_PROMPT.format(meta_review=meta_review, review=review_text)
        response = await self.gateway.complete([{"role": "user", "content": prompt}], self.params)
        return parse_alignment(response.text)

    async def filter(self, sources: Sequence[ReviewSource],
                     meta_reviews: Mapping[str, str]) -> tuple[list[ReviewSource], MetaReviewCounts]:  # fmt: skip
        """The sources to inject into, in their order, and the counts."""
        counts = MetaReviewCounts(reviews=len(sources))
        kept = []
        for src in sources:
            meta = meta_reviews.get(src.copy.paper_id)
            if not meta:
                counts.no_meta_review += 1
                kept.append(src)
                continue
            try:
                verdict = await self.judge(src.copy.review_text, meta)
            except AlignmentParseError as exc:
                counts.unjudged += 1
                counts.dropped.append({"review_id": src.copy.review_id, "reason": f"unjudged: {exc}"})
                continue
            if not verdict.aligned:
                counts.not_aligned += 1
                counts.dropped.append({"review_id": src.copy.review_id, "reason": f"not aligned ({verdict.confidence})"})
            elif verdict.confidence not in self.keep_confidence:
                counts.low_confidence += 1
                counts.dropped.append({"review_id": src.copy.review_id, "reason": f"aligned, {verdict.confidence} confidence"})
            else:
                counts.kept += 1
                kept.append(src)
        return kept, counts


__all__ = ["ALIGNMENT_PROMPT", "Alignment", "AlignmentParseError", "MetaReviewCounts", "MetaReviewFilter",
           "parse_alignment"]
