"""Hand-checked injection validity: labels read from a JSONL file, matched to a built corpus.

An injection is valid when the injected sentence makes the review say something false about the
paper, of the injection's type (HalluPeer's premise). That is judged by hand: each label names one
injection by review id (the source review, without `#inj<k>`), sentence index and edit (the
original and injected text of the changed span), with `valid` and a one-line `reason`.
`validity_by_anchor` reports, per anchor, how many of a corpus's injections carry a label and
which share of those is valid, the figure `jobs/build_review_corpus.py --validity-labels` writes
into report.json.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from corpora.reviews.records import ReviewTruth


class ValidityLabel(BaseModel):
    """One hand label (extra fields, e.g. the sentence before/after for the reader, are kept)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    review_id: str
    sentence_index: int
    anchor: str
    original: str
    injected: str
    valid: bool
    reason: str

    @property
    def key(self) -> tuple[str, int, str, str]:
        return (self.review_id, self.sentence_index, self.original, self.injected)


class ValidityLabelError(ValueError):
    """A labels file that cannot be read: names the file, the line and the field."""


def load_validity_labels(path: str | Path) -> dict[tuple[str, int, str, str], ValidityLabel]:
    path = Path(path)
    out: dict[tuple[str, int, str, str], ValidityLabel] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            label = ValidityLabel.model_validate(json.loads(line))
        except json.JSONDecodeError as e:
            raise ValidityLabelError(f"{path}:{n}: not JSON ({e.msg} at column {e.colno})") from None
        except ValidationError as e:
            err = e.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "(line)"
            raise ValidityLabelError(f"{path}:{n}: field '{field}': {err['msg']}") from None
        if label.key in out and out[label.key].valid != label.valid:
            raise ValidityLabelError(f"{path}:{n}: contradicts an earlier label of the same injection {label.key}")
        out[label.key] = label
    return out


def base_review_id(copy_id: str) -> str:
    """The source review of a copy ("r1#inj2" -> "r1")."""
    return copy_id.rsplit("#", 1)[0]


def injection_keys(truths: Iterable[ReviewTruth]) -> list[tuple[str, str, tuple[str, int, str, str]]]:
    """(copy id, anchor, label key) of every injection in the truths."""
    return [(t.review_id, i.anchor, (base_review_id(t.review_id), i.sentence_index, i.original, i.injected))
            for t in truths for i in t.injections]  # fmt: skip


def validity_by_anchor(truths: Iterable[ReviewTruth], labels: dict[tuple[str, int, str, str], ValidityLabel]) -> dict:
    """Per anchor: injections, labelled, valid and the valid share of the labelled (None when none is)."""
    counts: dict[str, Counter] = {}
    for _copy, anchor, key in injection_keys(truths):
        c = counts.setdefault(anchor, Counter())
        c["injections"] += 1
        if key in labels:
            c["labelled"] += 1
            c["valid"] += labels[key].valid

    def row(c: Counter) -> dict:
        share = round(c["valid"] / c["labelled"], 3) if c["labelled"] else None
        return {"injections": c["injections"], "labelled": c["labelled"], "valid": c["valid"], "valid_share": share}

    total: Counter = sum(counts.values(), Counter())
    return {"per_anchor": {a: row(c) for a, c in sorted(counts.items())}, "total": row(total)}


__all__ = ["ValidityLabel", "ValidityLabelError", "base_review_id", "injection_keys", "load_validity_labels",
           "validity_by_anchor"]  # fmt: skip
