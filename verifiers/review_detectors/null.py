"""The null review detector, a control: it reads every review and flags nothing.

Every task is answered (review VALID, no sentence flagged, no type, no span), so its scores are
the floor of the audit: zero true positives at every level. A detector that does not beat it on
recall has found nothing; an audit where it scores any detection is broken.
"""

from __future__ import annotations

from corpora.reviews.records import ReviewPrediction
from storage.records import Item, Output
from verifiers.registry import system
from verifiers.review_detectors.llm_judge import review_copy
from verifiers.system import RunContext


class NullReviewDetector:
    def __init__(self, name: str = "review_null") -> None:
        self.name = name

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        outputs = []
        for item in items:
            try:
                copy = review_copy(item)
            except (ValueError, KeyError, TypeError) as exc:
                outputs.append(Output.failed(item.item_id, f"review payload: {exc}", "input"))
                continue
            prediction = ReviewPrediction(False, {s.index: False for s in copy.sentences}, {}, ())
            outputs.append(Output(item.item_id, "VALID", 1.0, detail={"review": prediction.to_detail(), "control": "null"}))
        return outputs


@system("review_null", accepts=("review",), description="control: a review detector that flags nothing (the audit's floor)")
def build_review_null() -> NullReviewDetector:
    return NullReviewDetector()
