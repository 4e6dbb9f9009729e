"""The review audit's controls: `review_null` flags nothing, `review_flag_all` flags and quotes everything."""

from __future__ import annotations

import asyncio

from corpora.reviews.records import ReviewCopy, ReviewPrediction
from corpora.reviews.segmentation import segment_review
from storage.records import Item
from verifiers.registry import SystemSpec, build_system
from verifiers.system import RunContext

TEXT = "The authors report 85.4% accuracy. They use BERT on GLUE."


def _items() -> list[Item]:
    copy = ReviewCopy("r1#inj1", "p1", TEXT, segment_review(TEXT), "We report 85.4% with BERT.")
    bad = Item("broken", "review", "c", None, {"review_id": "broken"})
    return [Item("r1#inj1", "review", "c", None, copy.to_payload()), bad]


def _run(name: str):
    return asyncio.run(build_system(SystemSpec(name)).run(_items(), RunContext("r", "snap")))


def test_flag_all_flags_types_and_quotes_every_sentence():
    out, bad = _run("review_flag_all")
    assert out.label == "HALLUCINATED" and out.detail["control"] == "flag_all"
    p = ReviewPrediction.from_detail(out.detail["review"])
    assert p.review_hallucinated and set(p.sentence_labels.values()) == {True}
    assert p.sentence_types == p.oracle_types == {0: "Number", 1: "Number"}
    assert [TEXT[s.start : s.end] for s in p.spans] == ["The authors report 85.4% accuracy.", "They use BERT on GLUE."]
    assert bad.error_kind == "input"  # a broken payload is that item's error, never a verdict


def test_null_flags_nothing():
    out, bad = _run("review_null")
    p = ReviewPrediction.from_detail(out.detail["review"])
    assert out.label == "VALID" and not p.review_hallucinated and set(p.sentence_labels.values()) == {False}
    assert p.spans == () and bad.error_kind == "input"
