"""The review detectors that are controls: one flags nothing, one flags everything.

`review_null` reads every review and flags nothing (review VALID, no sentence flagged, no type, no
span): the floor of the audit, zero true positives at every level. A detector that does not beat it
on recall has found nothing; an audit where it scores any detection is broken.

`review_flag_all` is the adversary: every review HALLUCINATED, every sentence flagged and typed
`Number` (the most frequent rule anchor) in both Task 2 settings, every sentence quoted whole as a
span. Its recall is perfect at every level, so a review-level F1 at or below its own says nothing
about a detector: its figure depends only on the share of injected copies. A real detector must beat
it on sentence F1, Token-F1 and precision.
"""

from __future__ import annotations

from corpora.reviews.records import ReviewCopy, ReviewPrediction, Span
from storage.records import Item, Output
from verifiers.registry import system
from verifiers.review_detectors.llm_judge import review_copy
from verifiers.system import RunContext

FLAG_ALL_TYPE = "Number"


def _nothing(copy: ReviewCopy) -> ReviewPrediction:
    return ReviewPrediction(False, {s.index: False for s in copy.sentences}, {}, ())


def _everything(copy: ReviewCopy) -> ReviewPrediction:
    types = {s.index: FLAG_ALL_TYPE for s in copy.sentences}
    return ReviewPrediction(True, {s.index: True for s in copy.sentences}, types,
                            tuple(Span(s.start, s.end) for s in copy.sentences), oracle_types=dict(types))  # fmt: skip


class ControlReviewDetector:
    """A control: the same answer shape for every review, from `flag_all`."""

    def __init__(self, name: str = "review_null", flag_all: bool = False) -> None:
        self.name, self.flag_all = name, flag_all

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        outputs = []
        for item in items:
            try:
                copy = review_copy(item)
            except (ValueError, KeyError, TypeError) as exc:
                outputs.append(Output.failed(item.item_id, f"review payload: {exc}", "input"))
                continue
            prediction = (_everything if self.flag_all else _nothing)(copy)
            label, control = ("HALLUCINATED", "flag_all") if self.flag_all else ("VALID", "null")
            outputs.append(Output(item.item_id, label, 1.0, detail={"review": prediction.to_detail(), "control": control}))
        return outputs


@system("review_null", accepts=("review",), description="control: a review detector that flags nothing (the audit's floor)")
def build_review_null() -> ControlReviewDetector:
    return ControlReviewDetector()


@system("review_flag_all", accepts=("review",),
        description="control: flags every review and sentence, quotes every sentence (the adversary a detector must beat)")  # fmt: skip
def build_review_flag_all() -> ControlReviewDetector:
    return ControlReviewDetector("review_flag_all", flag_all=True)
