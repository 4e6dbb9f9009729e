"""HalluPeer's meta-review alignment filter (Filter_M): meta-reviews read from an OpenReview export,
reviews kept only when a model judges them aligned with high confidence, every other case counted."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest

from corpora.reviews.ingest import load_reviews
from corpora.reviews.meta_review import AlignmentParseError, MetaReviewFilter, parse_alignment
from jobs.build_review_corpus import main
from tests.corpora.reviews.test_review_ingest import FIXTURES


class Scripted:
    """Answers the alignment prompt by the first review words it finds in the prompt."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers, self.prompts = answers, []

    async def complete(self, messages, params=None):
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        review = prompt.split("### REVIEW\n")[1]
        text = next(a for key, a in self.answers.items() if key in review)
        return type("R", (), {"text": text})()


def test_openreview_meta_review_notes_are_read_per_forum_and_are_not_reviews():
    loaded = load_reviews(FIXTURES / "openreview_v2_notes.json")
    assert loaded.meta_reviews == {"Xk3fQ9pL2a": "Metareview:\nThe reviewers agree the method is useful.\n\n"
                                                 "Recommendation:\nAccept (poster)"}  # fmt: skip
    assert "mEtA000004" not in {s.copy.review_id for s in loaded.reviews}
    assert load_reviews(FIXTURES / "openreview_v1_notes.jsonl").meta_reviews == {}


def test_only_high_confidence_aligned_reviews_are_kept_and_every_drop_is_counted():
    loaded = load_reviews(FIXTURES / "openreview_v2_notes.json")
    a, b = loaded.reviews  # two reviews of the forum with a meta-review
    # three more reviews of that forum (the same text, distinct ids and words) and one of a forum without
    extra = [replace(a, copy=replace(a.copy, review_id=f"x{i}", review_text=f"{word} {a.copy.review_text}"))
             for i, word in enumerate(("MEDIUMCASE", "BROKENCASE", "NOTALIGNEDCASE"))]  # fmt: skip
    orphan = replace(a, copy=replace(a.copy, review_id="orphan", paper_id="no-meta"))
    answers = {"MEDIUMCASE": '{"aligned": true, "confidence": "medium"}', "BROKENCASE": "I think so.",
               "NOTALIGNEDCASE": '{"aligned": false, "confidence": "high"}',
               b.copy.review_text[:40]: '```json\n{"aligned": false, "confidence": "low"}\n```',
               a.copy.review_text[:40]: '{"aligned": true, "confidence": "High"}'}  # fmt: skip
    gateway = Scripted(answers)
    kept, counts = asyncio.run(MetaReviewFilter(gateway).filter([a, b, *extra, orphan], loaded.meta_reviews))
    assert [s.copy.review_id for s in kept] == [a.copy.review_id, "orphan"]
    assert (counts.reviews, counts.kept, counts.no_meta_review, counts.not_aligned, counts.low_confidence,
            counts.unjudged) == (6, 1, 1, 2, 1, 1)  # fmt: skip
    assert {d["review_id"]: d["reason"].split(":")[0] for d in counts.dropped} == {
        b.copy.review_id: "not aligned (low)", "x0": "aligned, medium confidence", "x1": "unjudged",
        "x2": "not aligned (high)"}  # fmt: skip
    assert len(gateway.prompts) == 5 and "The reviewers agree the method is useful." in gateway.prompts[0]
    # medium kept too when asked
    kept, counts = asyncio.run(MetaReviewFilter(Scripted(answers), keep_confidence=("high", "medium"))
                               .filter([a, *extra], loaded.meta_reviews))  # fmt: skip
    assert [s.copy.review_id for s in kept] == [a.copy.review_id, "x0"]


def test_alignment_answers_must_meet_the_contract():
    assert parse_alignment('{"aligned": true, "confidence": "low"}').confidence == "low"
    for bad in ('{"aligned": "yes", "confidence": "high"}', '{"aligned": true, "confidence": "very"}', "", "no"):
        with pytest.raises(AlignmentParseError):
            parse_alignment(bad)
    with pytest.raises(ValueError, match="keep_confidence"):
        MetaReviewFilter(Scripted({}), keep_confidence=("certain",))


def test_the_build_refuses_the_filter_without_a_model(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"paper_id": "p", "paper_text": "t", "review_text": "A review."}) + "\n")
    assert main([str(path), "--out", str(tmp_path / "out"), "--meta-review-filter"]) == 2
    assert "--meta-review-filter needs --model" in capsys.readouterr().err
