"""Review corpora on disk and as the project's Item/Truth tables.

JSONL, one record per line, items and truth in separate files (truth never travels with an item):

    items.jsonl  {"item_id", "kind": "review", "corpus", "split", "payload": ReviewCopy.to_payload()}
    truth.jsonl  {"item_id", "truth": {review_id, paper_id, hallucinated, injections: [...],
                  sentence_labels: {"<i>": bool}, sentence_types: {"<i>": str}}}

`corpus_tables` gives the same as `storage.schemas` ITEM/TRUTH tables (payload_json; truth label
HALLUCINATED/VALID, hallucination_type = the first injection's anchor, extra_json = the truth).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pyarrow as pa

from corpora.loaded_corpus import LoadedCorpus, LoadError
from corpora.reviews.records import ReviewCopy, ReviewInjection, ReviewTruth
from corpora.reviews.segmentation import SegmentationError, check_offsets
from storage.schemas import ITEM_SCHEMA, TRUTH_SCHEMA, table_from_rows

KIND = "review"


def truth_to_dict(truth: ReviewTruth) -> dict[str, Any]:
    data = asdict(truth)
    data["sentence_labels"] = {str(k): v for k, v in truth.sentence_labels.items()}
    data["sentence_types"] = {str(k): v for k, v in truth.sentence_types.items()}
    return data


def truth_from_dict(data: dict[str, Any]) -> ReviewTruth:
    return ReviewTruth(
        review_id=data["review_id"],
        paper_id=data["paper_id"],
        hallucinated=bool(data["hallucinated"]),
        injections=tuple(ReviewInjection(**i) for i in data.get("injections", ())),
        sentence_labels={int(k): bool(v) for k, v in data.get("sentence_labels", {}).items()},
        sentence_types={int(k): str(v) for k, v in data.get("sentence_types", {}).items()},
    )


def write_jsonl(copies: Sequence[ReviewCopy], truths: Sequence[ReviewTruth], items_path: str | Path,
                truth_path: str | Path, corpus: str, split: str | None = None) -> None:  # fmt: skip
    """Write items and truth as JSONL (stable key order, one line per review copy)."""
    by_id = {t.review_id: t for t in truths}
    missing = [c.review_id for c in copies if c.review_id not in by_id]
    if missing:
        raise ValueError(f"copies without truth: {missing[:5]}")
    with open(items_path, "w", encoding="utf-8") as f:
        for c in copies:
            row = {"item_id": c.review_id, "kind": KIND, "corpus": corpus, "split": split, "payload": c.to_payload()}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    with open(truth_path, "w", encoding="utf-8") as f:
        for c in copies:
            f.write(json.dumps({"item_id": c.review_id, "truth": truth_to_dict(by_id[c.review_id])}, ensure_ascii=False) + "\n")


def _read_lines(path: Path, errors: list[LoadError]) -> Iterable[tuple[int, dict]]:
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(LoadError(str(path), n, f"invalid JSON: {exc.msg} at column {exc.colno}"))
            continue
        if not isinstance(row, dict) or not isinstance(row.get("item_id"), str):
            errors.append(LoadError(str(path), n, "field 'item_id' missing or not a string"))
            continue
        yield n, row


def truth_problem(truth: ReviewTruth, copy: ReviewCopy) -> str | None:
    """Why `truth` cannot be the truth of `copy` (the field named), or None: every injection's span
    lies in the review text and holds its injected text, every sentence index is one of its sentences."""
    n, length = len(copy.sentences), len(copy.review_text)
    for k, inj in enumerate(truth.injections):
        if not all(type(v) is int for v in (inj.start, inj.end, inj.sentence_index)):
            return f"field 'truth.injections[{k}]': start, end and sentence_index must be integers"
        if not 0 <= inj.start <= inj.end <= length:
            return f"field 'truth.injections[{k}]': span [{inj.start}, {inj.end}) is outside the review text ({length} characters)"
        if copy.review_text[inj.start : inj.end] != inj.injected:
            return f"field 'truth.injections[{k}]': span [{inj.start}, {inj.end}) does not hold its injected text"
        if not 0 <= inj.sentence_index < n:
            return f"field 'truth.injections[{k}].sentence_index': {inj.sentence_index} is out of range ({n} sentences)"
    for name, indices in (("sentence_labels", truth.sentence_labels), ("sentence_types", truth.sentence_types)):
        bad = next((i for i in sorted(indices) if not 0 <= i < n), None)
        if bad is not None:
            return f"field 'truth.{name}': sentence {bad} is out of range ({n} sentences)"
    return None


def read_jsonl(items_path: str | Path, truth_path: str | Path) -> tuple[list[ReviewCopy], dict[str, ReviewTruth], list[LoadError]]:
    """Read back what `write_jsonl` wrote; broken lines become LoadErrors naming file, line and field.
    A copy whose sentences are not where it says, or whose truth does not fit its text (a span past
    its end, a sentence index out of range), is refused with its line; the others are kept."""
    errors: list[LoadError] = []
    copies: list[ReviewCopy] = []
    truths: dict[str, ReviewTruth] = {}
    truth_line: dict[str, int] = {}
    refused: set[str] = set()
    for n, row in _read_lines(Path(items_path), errors):
        try:
            copy = ReviewCopy.from_payload(row["payload"])
            check_offsets(copy.review_text, copy.sentences)
        except SegmentationError as exc:
            errors.append(LoadError(str(items_path), n, f"field 'payload.sentences': {exc}", row["item_id"]))
            refused.add(row["item_id"])
            continue
        except (KeyError, TypeError, AttributeError) as exc:
            errors.append(LoadError(str(items_path), n, f"field 'payload' unreadable: {exc!r}", row["item_id"]))
            refused.add(row["item_id"])
            continue
        copies.append(copy)
    for n, row in _read_lines(Path(truth_path), errors):
        try:
            truths[row["item_id"]] = truth_from_dict(row["truth"])
            truth_line[row["item_id"]] = n
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            errors.append(LoadError(str(truth_path), n, f"field 'truth' unreadable: {exc!r}", row["item_id"]))
    kept = []
    for copy in copies:
        truth = truths.get(copy.review_id)
        problem = truth_problem(truth, copy) if truth is not None else None
        if problem:
            errors.append(LoadError(str(truth_path), truth_line[copy.review_id], problem, copy.review_id))
            refused.add(copy.review_id)
            continue
        kept.append(copy)
    return kept, {i: t for i, t in truths.items() if i not in refused}, errors


def corpus_tables(copies: Sequence[ReviewCopy], truths: Sequence[ReviewTruth], corpus: str, split: str | None = None,
                  source: str | None = None) -> tuple[pa.Table, pa.Table]:  # fmt: skip
    """ITEM_SCHEMA and TRUTH_SCHEMA tables of review copies."""
    items = [{"item_id": c.review_id, "kind": KIND, "corpus": corpus, "split": split,
              "payload_json": json.dumps(c.to_payload(), ensure_ascii=False), "source": source,
              "source_line": None, "load_error": None} for c in copies]  # fmt: skip
    rows = []
    for t in truths:
        rows.append({"item_id": t.review_id, "label": "HALLUCINATED" if t.hallucinated else "VALID",
                     "hallucination_type": t.injections[0].anchor if t.injections else None,
                     "difficulty_tier": None, "subtests_json": None,
                     "extra_json": json.dumps(truth_to_dict(t), ensure_ascii=False)})  # fmt: skip
    return table_from_rows(items, ITEM_SCHEMA), table_from_rows(rows, TRUTH_SCHEMA)


def loaded_corpus(copies: Sequence[ReviewCopy], truths: Sequence[ReviewTruth], corpus: str, version: str,
                  split: str | None = None, errors: list[LoadError] | None = None) -> LoadedCorpus:  # fmt: skip
    items, truth = corpus_tables(copies, truths, corpus, split)
    return LoadedCorpus(corpus, version, split, items, truth, list(errors or []))


__all__ = ["KIND", "corpus_tables", "loaded_corpus", "read_jsonl", "truth_from_dict", "truth_problem", "truth_to_dict", "write_jsonl"]
