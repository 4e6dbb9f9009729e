"""Import of review-hallucination predictions made elsewhere: one JSONL file, one line per review.

Line format (`review_id` required, every other key optional; a key left out or null = that task
was not answered):

    {"review_id": "r1", "review_hallucinated": true, "confidence": 0.8,
     "sentence_labels": {"0": false, "1": true},      # or a list of flagged sentence indices
     "sentence_types": {"1": "Number"},
     "spans": [[27, 37]],                             # character offsets into the review text
     "oracle_types": {"0": "Entity", "1": "Number"},  # Task 2 oracle: each sentence's type if hallucinated
     "label_spans": {"Number": [[27, 37]], "Entity": []}}  # Task 3 label-conditioned: spans per type asked

`review_hallucinated` missing but sentence labels given: the review is hallucinated when a sentence
is. A review with no line, or whose line answers neither, is an `input` failure. A line that breaks
the format is a `parse` failure of its review only, naming the file, line and field; the other lines
are still scored. Checked against the review: sentence indices must be sentences of it, spans must
lie inside its text, flags must be JSON booleans (the string "false" is not false) and confidence a
number in [0, 1]. A line that is not UTF-8 or not JSON fails the review it names (its `review_id` is
read from the raw line when it can be); one whose review cannot be told is counted and named in the
failure of every review left without a line. Two lines for one review fail that review (which one
counts would be a guess).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpora.loaded_corpus import unicode_error
from corpora.reviews.records import ReviewCopy, ReviewPrediction, Span
from storage.records import Item, Output
from verifiers.registry import system
from verifiers.review_detectors.llm_judge import review_copy
from verifiers.system import RunContext

_BOM = b"\xef\xbb\xbf"
_REVIEW_ID = re.compile(rb'"review_id"\s*:\s*"((?:[^"\\]|\\.)*)"')


@dataclass
class PredictionLines:
    """What a predictions file holds, line by line."""

    lines: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    """review_id -> (line number, the parsed line)."""
    refused: dict[str, str] = field(default_factory=dict)
    """review_id -> why its line cannot be used (`file:line: reason`)."""
    unreadable: list[str] = field(default_factory=list)
    """`file:line: reason` of lines whose review cannot be told."""


def _named_review(raw: bytes) -> str | None:
    """The review id a broken line names, when it names exactly one."""
    found = _REVIEW_ID.findall(raw)
    if len(found) != 1:
        return None
    try:
        return json.loads(b'"' + found[0] + b'"')
    except ValueError:
        return None


def read_prediction_lines(path: Path) -> PredictionLines:
    out = PredictionLines()
    first_line: dict[str, int] = {}
    data = path.read_bytes()
    data = data[len(_BOM) :] if data.startswith(_BOM) else data
    for number, raw in enumerate(data.split(b"\n"), start=1):  # at \n only: a JSON string may hold U+2028
        raw = raw.removesuffix(b"\r")
        if not raw.strip():
            continue
        where = f"{path.name}:{number}"
        row, reason = None, None
        try:
            row = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            reason = unicode_error(raw, exc)
        except json.JSONDecodeError as exc:
            reason = f"not JSON ({exc.msg} at column {exc.colno})"
        except (ValueError, RecursionError) as exc:  # a 5000-digit number, nesting deeper than the parser goes
            reason = f"not JSON ({str(exc)[:200] or type(exc).__name__})"
        if reason is None and (not isinstance(row, dict) or not isinstance(row.get("review_id"), str)):
            reason = "a line must be an object with a string review_id"
        review_id = row["review_id"] if reason is None else _named_review(raw)
        if review_id is None:
            out.unreadable.append(f"{where}: {reason}")
            continue
        if review_id in first_line:
            out.lines.pop(review_id, None)
            out.refused[review_id] = (f"{where}: review {review_id} already on line {first_line[review_id]}: "
                                      "which one counts would be a guess")  # fmt: skip
            continue
        first_line[review_id] = number
        if reason is not None:
            out.refused[review_id] = f"{where}: {reason}"
        else:
            out.lines[review_id] = (number, row)
    return out


def _index(key: Any, name: str, copy: ReviewCopy | None) -> int:
    if isinstance(key, bool) or not (isinstance(key, int) or (isinstance(key, str) and key.strip().isdigit())):
        raise ValueError(f"field {name!r}: {key!r} is not a sentence index")
    index = int(key)
    if copy is not None and not 0 <= index < len(copy.sentences):
        raise ValueError(f"field {name!r}: sentence {index} is out of range (the review has {len(copy.sentences)} sentences)")
    return index


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"field {name!r}: {value!r} is not true or false")
    return value


def _offset(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"field {name!r}: {value!r} is not a character offset")
    return value


def prediction_from_line(data: dict[str, Any], copy: ReviewCopy | None = None) -> ReviewPrediction:
    """The prediction of one line, checked against `copy` (its sentences and text) when given."""
    labels_raw = data.get("sentence_labels")
    if isinstance(labels_raw, list):
        labels = {_index(i, "sentence_labels", copy): True for i in labels_raw}
    elif isinstance(labels_raw, dict):
        labels = {_index(k, "sentence_labels", copy): _flag(v, f"sentence_labels.{k}") for k, v in labels_raw.items()}
    elif labels_raw is None:
        labels = None
    else:
        raise ValueError("field 'sentence_labels' must be an object or a list of indices")
    types_raw = data.get("sentence_types")
    if types_raw is not None and not isinstance(types_raw, dict):
        raise ValueError("field 'sentence_types' must be an object of sentence index -> type")
    types = None if types_raw is None else {_index(k, "sentence_types", copy): str(v) for k, v in types_raw.items()}
    spans = _spans(data.get("spans"), "spans", copy)
    oracle_raw = data.get("oracle_types")
    if oracle_raw is not None and not isinstance(oracle_raw, dict):
        raise ValueError("field 'oracle_types' must be an object of sentence index -> type")
    oracle = None if oracle_raw is None else {_index(k, "oracle_types", copy): str(v) for k, v in oracle_raw.items()}
    by_label_raw = data.get("label_spans")
    if by_label_raw is not None and not isinstance(by_label_raw, dict):
        raise ValueError("field 'label_spans' must be an object of type -> list of [start, end] pairs")
    by_label = None if by_label_raw is None else \
        {str(k): _spans(v, f"label_spans.{k}", copy) or () for k, v in by_label_raw.items()}  # fmt: skip
    review = data.get("review_hallucinated")
    if review is not None:
        review = _flag(review, "review_hallucinated")
    elif labels is not None:
        review = any(labels.values())
    return ReviewPrediction(review, labels, types, spans, oracle, by_label)


def _spans(spans_raw: Any, field_name: str, copy: ReviewCopy | None) -> tuple[Span, ...] | None:
    spans = None
    if spans_raw is not None:
        if not isinstance(spans_raw, list):
            raise ValueError(f"field {field_name!r} must be a list of [start, end] pairs")
        spans = []
        for k, pair in enumerate(spans_raw):
            name = f"{field_name}[{k}]"
            if not isinstance(pair, list) or len(pair) != 2:
                raise ValueError(f"field {name!r}: {pair!r} is not a [start, end] pair")
            start, end = _offset(pair[0], name), _offset(pair[1], name)
            if not 0 <= start <= end:
                raise ValueError(f"field {name!r}: [{start}, {end}] is not a range")
            if copy is not None and end > len(copy.review_text):
                raise ValueError(f"field {name!r}: [{start}, {end}] runs past the end of the review text "
                                 f"({len(copy.review_text)} characters)")  # fmt: skip
            spans.append(Span(start, end))
        return tuple(spans)
    return spans


def confidence_of(data: dict[str, Any]) -> float:
    value = data.get("confidence", 1.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not 0 <= value <= 1:
        raise ValueError(f"field 'confidence': {value!r} is not a number in [0, 1]")
    return float(value)


class ImportedReviewPredictions:
    def __init__(self, path: str, name: str = "review_import") -> None:
        self.name, self.path = name, Path(path)
        self._lines: PredictionLines | None = None

    def _missing(self, review_id: str) -> str:
        assert self._lines is not None
        why = f"no prediction for review {review_id} in {self.path.name}"
        unreadable = self._lines.unreadable
        if unreadable:
            why += f" ({len(unreadable)} unreadable line{'s' if len(unreadable) > 1 else ''} naming no review; first: {unreadable[0]})"
        return why

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        if self._lines is None:
            self._lines = read_prediction_lines(self.path)
        outputs = []
        for item in items:
            try:
                copy = review_copy(item)
            except (ValueError, KeyError, TypeError) as exc:
                outputs.append(Output.failed(item.item_id, f"review payload: {exc}", "input"))
                continue
            if copy.review_id in self._lines.refused:
                outputs.append(Output.failed(item.item_id, self._lines.refused[copy.review_id], "parse"))
                continue
            found = self._lines.lines.get(copy.review_id)
            if found is None:
                outputs.append(Output.failed(item.item_id, self._missing(copy.review_id), "input"))
                continue
            number, data = found
            try:
                prediction = prediction_from_line(data, copy)
                confidence = confidence_of(data)
                if prediction.review_hallucinated is None:
                    raise LookupError("answers neither review_hallucinated nor sentence_labels")
                outputs.append(Output(item.item_id, "HALLUCINATED" if prediction.review_hallucinated else "VALID",
                                      confidence, detail={"review": prediction.to_detail(), "source_line": number}))  # fmt: skip
            except LookupError as exc:
                outputs.append(Output.failed(item.item_id, f"{self.path.name}:{number}: {exc}", "input"))
            except (ValueError, TypeError) as exc:
                outputs.append(Output.failed(item.item_id, f"{self.path.name}:{number}: {exc}", "parse"))
        return outputs


@system("review_import", accepts=("review",), description="review-hallucination predictions made elsewhere (JSONL, one line per review)")
def build_review_import(path: str) -> ImportedReviewPredictions:
    return ImportedReviewPredictions(path)
