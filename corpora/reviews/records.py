"""Records of the review audit that cross rooms: what a detector sees, what the truth is, what it says.

Offsets are character offsets into the original review text (`review_text[start:end]`), so a
sentence, an injected span and a predicted span can be compared without re-tokenising.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

# HalluPeer §3: the nine coarse anchors of its taxonomy (leaves live in the taxonomy data file).
Anchor = Literal[
    "Number",
    "Entity",
    "False Concatenation",
    "Attribution Failure",
    "Overgeneralization",
    "Reasoning Error",
    "Hyperbole",
    "Temporal",
    "Context-based Meaning Error",
]
ANCHORS: tuple[str, ...] = Anchor.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Span:
    """A half-open character range `[start, end)` of the review text."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise ValueError(f"span [{self.start}, {self.end}) is not a range")


@dataclass(frozen=True)
class ReviewSentence:
    """One sentence (or ReviewCritique segment) of a review, located in the review text."""

    index: int
    start: int
    end: int
    text: str
    aspect: str | None = None


@dataclass(frozen=True)
class ReviewInjection:
    """One injected hallucination: its exact changed span in the injected review and its type path."""

    sentence_index: int
    start: int
    end: int
    anchor: str
    leaf: str | None
    original: str
    injected: str
    injector: str


@dataclass(frozen=True)
class ReviewCopy:
    """The blind view a detector gets (an Item payload of kind `review`): no truth travels with it."""

    review_id: str
    paper_id: str
    review_text: str
    sentences: tuple[ReviewSentence, ...]
    paper_text: str = ""

    def to_payload(self) -> dict[str, Any]:
        # what asdict gives, built directly: asdict's deep copy took 18 s of CPU for 1 MB of review
        sentences = tuple({"index": s.index, "start": s.start, "end": s.end, "text": s.text, "aspect": s.aspect}
                          for s in self.sentences)  # fmt: skip
        return {"review_id": self.review_id, "paper_id": self.paper_id, "review_text": self.review_text,
                "sentences": sentences, "paper_text": self.paper_text}  # fmt: skip

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> ReviewCopy:
        sentences = tuple(ReviewSentence(**s) for s in payload["sentences"])
        return cls(
            review_id=payload["review_id"],
            paper_id=payload["paper_id"],
            review_text=payload["review_text"],
            sentences=sentences,
            paper_text=payload.get("paper_text", ""),
        )


@dataclass(frozen=True)
class ReviewTruth:
    """What is known about one review copy: kept apart from the copy, never shown to a detector."""

    review_id: str
    paper_id: str
    hallucinated: bool
    injections: tuple[ReviewInjection, ...] = ()
    # ReviewCritique-style natural labels: sentence index -> deficient, and its error type.
    sentence_labels: dict[int, bool] = field(default_factory=dict)
    sentence_types: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ReviewPrediction:
    """What a detector said about one review (stored in `Output.detail["review"]`).

    `None` at any level means the detector did not answer that task (not "no hallucination").
    `sentence_types`: the type of each sentence the detector flagged (Task 2, end to end).
    `oracle_types`: the type the detector gives a sentence when told it is hallucinated (Task 2's
    oracle setting, HalluPeer fig. 20), asked of every sentence so the detector stays blind to which
    are gold; scoring reads the gold-hallucinated ones. `label_spans`: for a hallucination type, the
    spans the detector marks as that type when asked for it (Task 3's label-conditioned setting,
    fig. 21), asked for every type; scoring reads the review's gold types.
    """

    review_hallucinated: bool | None
    sentence_labels: dict[int, bool] | None = None
    sentence_types: dict[int, str] | None = None
    spans: tuple[Span, ...] | None = None
    oracle_types: dict[int, str] | None = None
    label_spans: dict[str, tuple[Span, ...]] | None = None

    def to_detail(self) -> dict[str, Any]:
        detail: dict[str, Any] = {
            "review_hallucinated": self.review_hallucinated,
            "sentence_labels": None if self.sentence_labels is None else {str(k): v for k, v in self.sentence_labels.items()},
            "sentence_types": None if self.sentence_types is None else {str(k): v for k, v in self.sentence_types.items()},
            "spans": None if self.spans is None else [[s.start, s.end] for s in self.spans],
        }
        if self.oracle_types is not None:
            detail["oracle_types"] = {str(k): v for k, v in self.oracle_types.items()}
        if self.label_spans is not None:
            detail["label_spans"] = {k: [[s.start, s.end] for s in v] for k, v in self.label_spans.items()}
        return detail

    @classmethod
    def from_detail(cls, detail: dict[str, Any]) -> ReviewPrediction:
        labels = detail.get("sentence_labels")
        types = detail.get("sentence_types")
        spans = detail.get("spans")
        oracle, by_label = detail.get("oracle_types"), detail.get("label_spans")
        return cls(
            review_hallucinated=detail.get("review_hallucinated"),
            sentence_labels=None if labels is None else {int(k): bool(v) for k, v in labels.items()},
            sentence_types=None if types is None else {int(k): str(v) for k, v in types.items()},
            spans=None if spans is None else tuple(Span(int(a), int(b)) for a, b in spans),
            oracle_types=None if oracle is None else {int(k): str(v) for k, v in oracle.items()},
            label_spans=None if by_label is None else {str(k): tuple(Span(int(a), int(b)) for a, b in v)
                                                       for k, v in by_label.items()},
        )
