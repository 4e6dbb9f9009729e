"""A lexical contradiction baseline that needs no model: numbers the paper never states.

A sentence is flagged when it contains a number (a token of digits, with an optional decimal part
and a trailing %) that appears nowhere in the paper text, after normalising "93.10" to "93.1" and
dropping "%". Its span is that number, its type `Number` (HalluPeer's most lexical anchor).
Task 2's oracle setting (told a sentence is hallucinated, which type?): `Number` for a sentence
holding any number, no answer for the others. Task 3's label-conditioned setting: asked for
`Number`, the unknown numbers' spans; asked for any other type, nothing. A
review without paper text cannot be checked: an `input` failure, never a verdict. Confidence 1.0:
a rule, not a probability. It catches only Number injections; it is the floor a model must beat.
"""

from __future__ import annotations

import re

from corpora.reviews.records import ANCHORS, ReviewPrediction, Span
from storage.records import Item, Output
from verifiers.registry import system
from verifiers.review_detectors.llm_judge import review_copy
from verifiers.system import RunContext

NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?%?(?![\w])")


def normalise(number: str) -> str:
    value = number.rstrip("%").replace(",", ".")
    return value.rstrip("0").rstrip(".") if "." in value else value


def paper_numbers(paper_text: str) -> set[str]:
    return {normalise(m.group()) for m in NUMBER.finditer(paper_text)}


class LexicalNumberDetector:
    """Flags review sentences quoting numbers absent from the paper."""

    def __init__(self, name: str = "review_lexical") -> None:
        self.name = name

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        known: dict[str, set[str]] = {}
        outputs = []
        for item in items:
            try:
                copy = review_copy(item)
            except (ValueError, KeyError, TypeError) as exc:
                outputs.append(Output.failed(item.item_id, f"review payload: {exc}", "input"))
                continue
            if not copy.paper_text.strip():
                outputs.append(Output.failed(item.item_id, f"review {copy.review_id}: no paper text to check against", "input"))
                continue
            numbers = known.setdefault(copy.paper_id, paper_numbers(copy.paper_text))
            labels, types, spans, oracle = {}, {}, [], {}
            for s in copy.sentences:
                if NUMBER.search(s.text):
                    oracle[s.index] = "Number"
                unknown = [m for m in NUMBER.finditer(s.text) if normalise(m.group()) not in numbers]
                labels[s.index] = bool(unknown)
                if unknown:
                    types[s.index] = "Number"
                    spans += [Span(s.start + m.start(), s.start + m.end()) for m in unknown]
            by_label = {anchor: tuple(spans) if anchor == "Number" else () for anchor in ANCHORS}
            prediction = ReviewPrediction(any(labels.values()), labels, types, tuple(spans), oracle, by_label)
            outputs.append(Output(item.item_id, "HALLUCINATED" if prediction.review_hallucinated else "VALID", 1.0,
                                  detail={"review": prediction.to_detail(), "paper_numbers": len(numbers)}))  # fmt: skip
        return outputs


@system("review_lexical", accepts=("review",), description="lexical review baseline: numbers the paper never states (no model)")
def build_review_lexical() -> LexicalNumberDetector:
    return LexicalNumberDetector()
