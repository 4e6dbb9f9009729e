"""Import of review-hallucination predictions made elsewhere: one JSONL file, one line per review.

Line format (`review_id` required, every other key optional; a key left out or null = that task
was not answered):

    {"review_id": "r1", "review_hallucinated": true, "confidence": 0.8,
     "sentence_labels": {"0": false, "1": true},      # or a list of flagged sentence indices
     "sentence_types": {"1": "Number"},
     "spans": [[27, 37]]}                             # character offsets into the review text

`review_hallucinated` missing but sentence labels given: the review is hallucinated when a sentence
is. A review with no line, or whose line answers neither, is an `input` failure; a line that breaks
the format is a `parse` failure naming the file and line. Two lines for one review are an error at
load time (which one counts would be a guess).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from corpora.reviews.records import ReviewPrediction, Span
from storage.records import Item, Output
from verifiers.registry import system
from verifiers.review_detectors.llm_judge import review_copy
from verifiers.system import RunContext


def read_prediction_lines(path: Path) -> dict[str, tuple[int, dict[str, Any] | str]]:
    """review_id -> (line number, the parsed line or why it is unreadable)."""
    lines: dict[str, tuple[int, dict[str, Any] | str]] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not JSON ({exc.msg})") from exc
        if not isinstance(data, dict) or not isinstance(data.get("review_id"), str):
            raise ValueError(f"{path}:{number}: a line must be an object with a string review_id")
        if data["review_id"] in lines:
            raise ValueError(f"{path}:{number}: review {data['review_id']} already on line {lines[data['review_id']][0]}")
        lines[data["review_id"]] = (number, data)
    return lines


def prediction_from_line(data: dict[str, Any]) -> ReviewPrediction:
    labels_raw = data.get("sentence_labels")
    if isinstance(labels_raw, list):
        labels = {int(i): True for i in labels_raw}
    elif isinstance(labels_raw, dict):
        labels = {int(k): bool(v) for k, v in labels_raw.items()}
    elif labels_raw is None:
        labels = None
    else:
        raise ValueError("sentence_labels must be an object or a list of indices")
    types_raw = data.get("sentence_types")
    types = None if types_raw is None else {int(k): str(v) for k, v in dict(types_raw).items()}
    spans_raw = data.get("spans")
    spans = None if spans_raw is None else tuple(Span(int(a), int(b)) for a, b in spans_raw)
    review = data.get("review_hallucinated")
    if review is None and labels is not None:
        review = any(labels.values())
    return ReviewPrediction(None if review is None else bool(review), labels, types, spans)


class ImportedReviewPredictions:
    def __init__(self, path: str, name: str = "review_import") -> None:
        self.name, self.path = name, Path(path)
        self._lines: dict[str, tuple[int, dict[str, Any] | str]] | None = None

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        if self._lines is None:
            self._lines = read_prediction_lines(self.path)
        outputs = []
        for item in items:
            try:
                review_id = review_copy(item).review_id
            except (ValueError, KeyError, TypeError) as exc:
                outputs.append(Output.failed(item.item_id, f"review payload: {exc}", "input"))
                continue
            found = self._lines.get(review_id)
            if found is None:
                outputs.append(Output.failed(item.item_id, f"no prediction for review {review_id} in {self.path.name}", "input"))
                continue
            number, data = found
            assert isinstance(data, dict)
            try:
                prediction = prediction_from_line(data)
                confidence = float(data.get("confidence", 1.0))
                if prediction.review_hallucinated is None:
                    raise LookupError("answers neither review_hallucinated nor sentence_labels")
                outputs.append(Output(item.item_id, "HALLUCINATED" if prediction.review_hallucinated else "VALID",
                                      confidence, detail={"review": prediction.to_detail(), "source_line": number}))  # fmt: skip
            except LookupError as exc:
                outputs.append(Output.failed(item.item_id, f"{self.path.name}:{number}: {exc}", "input"))
            except (ValueError, TypeError) as exc:
                outputs.append(Output.failed(item.item_id, f"{self.path.name}:{number}: {exc}", "parse"))
        return outputs


@system("review_import", description="review-hallucination predictions made elsewhere (JSONL, one line per review)")
def build_review_import(path: str) -> ImportedReviewPredictions:
    return ImportedReviewPredictions(path)
