"""Review ingest: ReviewCritique (bare NaN), generic JSONL, OpenReview exports; segmentation offsets."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from corpora.reviews.ingest import (
    load_openreview,
    load_review_jsonl,
    load_reviewcritique,
    load_reviews,
    normalise_error_type,
    sniff_format,
)
from corpora.reviews.segmentation import SegmentationError, check_offsets, join_segments, segment_review
from tests.helpers.paths import SHARED_DATA, in_ci

FIXTURES = Path(__file__).parent / "fixtures"
REVIEWCRITIQUE = SHARED_DATA / "hallupeer" / "reviewcritique" / "ReviewCritique_LLM.jsonl"


# ---------------------------------------------------------------- segmentation
def test_segmentation_offsets_on_hard_cases():
    text = (
        "Summary:\n1. The authors, e.g. Smith et al. (2019), report 92.4% accuracy in Fig. 3 and Sec. 4.2. "
        "This is good!  Is it robust? The paper is good. The paper is good.\n- No code is released."
    )
    sentences = segment_review(text)
    assert [s.text for s in sentences] == [
        "Summary:",
        "1. The authors, e.g. Smith et al. (2019), report 92.4% accuracy in Fig. 3 and Sec. 4.2.",
        "This is good!",
        "Is it robust?",
        "The paper is good.",
        "The paper is good.",  # a repeated sentence is placed after the first, not on it
        "- No code is released.",
    ]
    assert all(text[s.start : s.end] == s.text for s in sentences)
    assert sentences[4].start < sentences[5].start
    assert segment_review("  \n ") == ()


def test_join_segments_and_offset_check():
    text, sentences = join_segments(["Strengths:", "Clear writing.", "Weak baselines."])
    assert text == "Strengths:\nClear writing.\nWeak baselines."
    assert [(s.start, s.end) for s in sentences] == [(0, 10), (11, 25), (26, 41)]
    with pytest.raises(SegmentationError, match="sentence 1"):
        check_offsets(text.replace("Clear", "Clean"), sentences)


# ---------------------------------------------------------------- ReviewCritique
def _rc_segment(text, reliability="Yes", error_type=float("nan")):
    return {"segment_text": text, "topic_class_1": float("nan"), "topic_class_2": float("nan"),
            "reliability": reliability, "explanation": float("nan"), "error_type": error_type}  # fmt: skip


def _rc_line(title, reviewers):
    row = {"decision": "accepted", "title": title, "body_text": "We evaluate on 3 datasets with BERT."}
    row.update({name: {"review": segs, "score": {"Recommendation": " 6"}} for name, segs in reviewers.items()})
    return json.dumps(row)  # Python writes NaN bare, as the pandas export did


def test_reviewcritique_nan_labels_and_broken_lines(tmp_path):
    good = _rc_line("Paper A", {
        "claude_opus": [_rc_segment("Summary of the Paper:"), _rc_segment("It uses 3 datasets."),
                        _rc_segment("The baselines are weak.", "No", "out-of-scope")],
        "gpt4": [_rc_segment("A fine paper."), _rc_segment("Results are vague.", "No", float("nan"))],
    })  # fmt: skip
    assert "NaN" in good
    bad_reliability = _rc_line("Paper B", {"gpt4": [_rc_segment("Ok.", "Maybe")], "claude_opus": [_rc_segment("Fine.")]})
    path = tmp_path / "rc.jsonl"
    path.write_text("\n".join([good, "{not json", bad_reliability, '{"title": 5}']) + "\n")
    result = load_reviewcritique(path)
    by_id = {r.copy.review_id: r for r in result.reviews}
    assert len(result.reviews) == 3  # two of paper A, the readable one of paper B
    a = next(r for r in result.reviews if r.reviewer == "claude_opus" and r.line == 1)
    assert a.copy.review_text == "Summary of the Paper:\nIt uses 3 datasets.\nThe baselines are weak."
    assert a.truth.sentence_labels == {0: False, 1: False, 2: True}
    assert a.truth.sentence_types == {2: "Out-of-scope"}
    assert a.truth.hallucinated is True and a.copy.paper_text.startswith("We evaluate")
    assert a.copy.sentences[0].aspect == "summary" and a.copy.sentences[1].aspect == "summary"
    gpt = next(r for r in result.reviews if r.reviewer == "gpt4" and r.line == 1)
    assert gpt.truth.sentence_types == {1: "Unspecified"}
    assert len(by_id) == 3 and all(r.copy.paper_id == a.copy.paper_id for r in result.reviews if r.line == 1)
    errors = [str(e) for e in result.errors]
    assert errors[0] == f"{path}:2: invalid JSON: Expecting property name enclosed in double quotes at column 2"
    assert errors[1] == f"{path}:3: field 'gpt4.review[0].reliability' is 'Maybe', expected 'Yes' or 'No'"
    assert errors[2] == f"{path}:4: field 'title' missing or not a string"
    assert result.errors[1].item_id.endswith(":gpt4")


def test_error_type_normalisation():
    assert normalise_error_type("out-of-scope") == "Out-of-scope"
    assert normalise_error_type("  vague   critique ") == "Vague Critique"
    assert normalise_error_type(None) == "Unspecified"
    assert normalise_error_type("new kind") == "New kind"


def require_reviewcritique() -> None:
    """Skip (fail when CI=true) when the ReviewCritique file is not in the shared data."""
    if not REVIEWCRITIQUE.exists():
        if in_ci():
            pytest.fail(f"ReviewCritique data absent: {REVIEWCRITIQUE}")
        pytest.skip(f"ReviewCritique data absent: {REVIEWCRITIQUE}")


@pytest.mark.requires_shared_data
def test_real_reviewcritique_counts():
    require_reviewcritique()
    assert sniff_format(REVIEWCRITIQUE) == "reviewcritique"
    result = load_reviews(REVIEWCRITIQUE)
    assert result.errors == []
    assert len(result.reviews) == 60 and len({r.copy.paper_id for r in result.reviews}) == 20
    assert result.num_sentences == 1610
    deficient = sum(sum(r.truth.sentence_labels.values()) for r in result.reviews)
    assert deficient == 226
    per_reviewer = Counter()
    for r in result.reviews:
        per_reviewer[r.reviewer] += len(r.copy.sentences)
        per_reviewer[r.reviewer + "/no"] += sum(r.truth.sentence_labels.values())
        check_offsets(r.copy.review_text, r.copy.sentences)
    assert per_reviewer == Counter({"claude_opus": 621, "claude_opus/no": 82, "gpt4": 457, "gpt4/no": 67,
                                    "gemini_pro_1.5": 532, "gemini_pro_1.5/no": 77})  # fmt: skip
    types = Counter(t for r in result.reviews for t in r.truth.sentence_types.values())
    # 65 "Out-of-scope" + 3 "out-of-scope"; 3 deficient segments carry no type; one "Contradiction"
    # sits on a segment judged reliable (README counts it; we warn and ignore it).
    assert types["Out-of-scope"] == 68 and "out-of-scope" not in types
    assert types["Unspecified"] == 3 and types["Contradiction"] == 18
    assert sum(types.values()) == 226
    assert len(result.warnings) == 1 and "Contradiction" in result.warnings[0]


# ---------------------------------------------------------------- generic JSONL
def test_generic_jsonl(tmp_path):
    path = tmp_path / "reviews.jsonl"
    rows = [
        {"paper_id": "p1", "paper_text": "Paper one.", "review_text": "Good paper. It uses 3 datasets."},
        {"paper_id": "p1", "paper_text": "Paper one.", "review_text": "Weak. No code."},
        {"paper_id": "p2", "paper_text": "Paper two.", "review_text": "Fine.", "review_id": "p2-R9"},
        {"paper_id": "p3", "paper_text": "x", "review_text": "   "},
        {"paper_id": "p2", "paper_text": "Paper two.", "review_text": "Again.", "review_id": "p2-R9"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows[:3]) + "\n[1, 2]\n" + "\n".join(json.dumps(r) for r in rows[3:]) + "\n")
    result = load_review_jsonl(path)
    assert [r.copy.review_id for r in result.reviews] == ["p1:r1", "p1:r2", "p2-R9"]
    assert [s.text for s in result.reviews[0].copy.sentences] == ["Good paper.", "It uses 3 datasets."]
    assert result.reviews[0].truth.hallucinated is False and result.reviews[0].truth.sentence_labels == {}
    assert [str(e) for e in result.errors] == [
        f"{path}:4: expected a JSON object, got list",
        f"{path}:5: field 'review_text' missing, empty or not a string",
        f"{path}:6: field 'review_id': 'p2-R9' repeats an earlier line",
    ]
    assert sniff_format(path) == "jsonl"


# ---------------------------------------------------------------- OpenReview
def test_openreview_v2_export():
    path = FIXTURES / "openreview_v2_notes.json"
    assert sniff_format(path) == "openreview"
    result = load_openreview(path)
    assert [r.copy.review_id for r in result.reviews] == ["rEv1aaaa01", "rEv1bbbb02"]  # meta-review not a review
    first = result.reviews[0]
    assert first.copy.paper_id == "Xk3fQ9pL2a" and first.reviewer.endswith("Reviewer_hT5q")
    assert first.copy.paper_text.startswith("Sparse Adapters for Low-Resource Machine Translation\n\nWe propose SpAdapt")
    text = first.copy.review_text
    assert text.startswith("Summary:\nThe paper proposes SpAdapt")
    assert "\n\nStrengths:\n- The method is simple" in text and "Rating" not in text and "Soundness" not in text
    sentences = [s.text for s in first.copy.sentences]
    assert "1. The comparison to LoRA (Hu et al., 2021) is missing from Table 2." in sentences
    assert "How sensitive is the result to the sparsity threshold of 0.05?" in sentences
    assert all(text[s.start : s.end] == s.text for s in first.copy.sentences)
    assert [str(e) for e in result.errors] == [
        f"{path}:4: note #4 (rEv1cccc03): no review text in 'content.review' or any of "
        "['summary', 'summary_of_the_paper', 'main_review', 'strengths', 'weaknesses', 'strength_and_weaknesses', "
        "'strengths_and_weaknesses', 'clarity,_quality,_novelty_and_reproducibility', 'questions', 'limitations', "
        "'summary_of_the_review']"
    ]


def test_openreview_v1_jsonl_with_a_broken_line_and_paper_texts():
    path = FIXTURES / "openreview_v1_notes.jsonl"
    result = load_reviews(path, paper_texts={"HkPaper001": "FULL TEXT"})
    assert [r.copy.review_id for r in result.reviews] == ["rvwA", "rvwC"]
    assert result.reviews[0].copy.paper_text == "FULL TEXT"
    assert result.reviews[0].copy.review_text.startswith("The paper schedules dropout")
    assert result.reviews[1].copy.review_text == (
        "Main Review:\nThe curriculum is well motivated. Results on Citeseer would strengthen the paper.\n\n"
        "Summary Of The Review:\nBorderline."
    )
    assert len(result.errors) == 1 and result.errors[0].line == 3 and "invalid JSON" in result.errors[0].reason
    plain = load_openreview(path)
    assert plain.reviews[0].copy.paper_text.startswith("Curriculum Dropout for Graph Networks\n\nWe schedule")
