"""ReviewCritique track: deficient-segment detection with the Task 1 metrics, per reviewer and type."""

from __future__ import annotations

import math

import pytest

from corpora.reviews.records import ReviewPrediction, ReviewTruth
from scoring.reviews import score_segments
from storage.records import Output
from tests.scoring.reviews.review_fixtures import copy_of


def flagged(review_id: str, labels: dict[int, bool]) -> Output:
    pred = ReviewPrediction(any(labels.values()), labels)
    return Output(review_id, "HALLUCINATED" if pred.review_hallucinated else "VALID", 0.9,
                  detail={"review": pred.to_detail()})  # fmt: skip


def corpus():
    g1 = copy_of("X/gpt4", "X", ["Out of scope ask.", "Clear paper.", "Ignores table 2."])
    c1 = copy_of("Y/claude_opus", "Y", ["Well written.", "Misses the ablation."])
    truths = [
        ReviewTruth("X/gpt4", "X", True, sentence_labels={0: True, 1: False, 2: True},
                    sentence_types={0: "Out-of-scope", 2: "Neglect"}),
        ReviewTruth("Y/claude_opus", "Y", True, sentence_labels={0: False, 1: True}, sentence_types={1: "Neglect"}),
    ]  # fmt: skip
    copies = {c.review_id: c for c in (g1, c1)}
    outputs = {"X/gpt4": flagged("X/gpt4", {0: True, 1: True, 2: False}),
               "Y/claude_opus": flagged("Y/claude_opus", {1: True})}  # fmt: skip
    reviewer_of = {"X/gpt4": "gpt4", "Y/claude_opus": "claude_opus"}
    return truths, copies, outputs, reviewer_of


def test_segment_metrics_overall_per_reviewer_and_per_error_type():
    s = score_segments(*corpus(), n_resamples=200)
    # all: TP 2, FP 1, FN 1, TN 1
    assert s.value("segment_accuracy") == pytest.approx(3 / 5)
    assert s.value("segment_f1") == pytest.approx(2 / 3)
    assert s.value("segment_mcc") == pytest.approx((2 * 1 - 1 * 1) / math.sqrt(3 * 3 * 2 * 2))
    # gpt4: TP 1, FP 1, FN 1, TN 0
    assert s.value("segment_accuracy", "reviewer=gpt4") == pytest.approx(1 / 3)
    assert s.value("segment_mcc", "reviewer=gpt4") == pytest.approx(-0.5)
    assert s.value("segment_mcc", "reviewer=claude_opus") == pytest.approx(1.0)
    # a type's stratum: its deficient segments plus every sound segment (FP g1/1, TN c1/0)
    assert s.value("segment_recall", "error_type=Neglect") == pytest.approx(0.5)
    assert s.value("segment_mcc", "error_type=Neglect") == pytest.approx(0.0)
    assert s.value("segment_recall", "error_type=Out-of-scope") == 1.0
    assert s.value("segment_f1", "error_type=Out-of-scope") == pytest.approx(2 / 3)
    assert s.value("segment_mcc", "error_type=Out-of-scope") == pytest.approx(0.5)
    assert s.get("segment_accuracy", "error_type=Neglect").n == 4


def test_silent_detector_on_segments_scores_nothing():
    truths, copies, _, reviewer_of = corpus()
    silent = {t.review_id: flagged(t.review_id, {}) for t in truths}
    s = score_segments(truths, copies, silent, reviewer_of, n_resamples=20)
    assert s.value("segment_recall") == 0.0 and s.value("segment_f1") == 0.0
    assert s.value("segment_precision") is None and s.value("segment_mcc") is None
