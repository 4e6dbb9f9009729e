"""HalluPeer metrics (appendix D) on hand-computed cases: Task 1, Task 2, Task 3 and the whole scorer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from corpora.reviews.records import ReviewInjection, ReviewPrediction, Span
from scoring.reviews import binary_metrics, match_spans, score_reviews, tokenize, type_counts, type_metrics
from scoring.reviews.detection import undefined_reason
from scoring.reviews.localization import token_counts
from storage.records import Output
from tests.scoring.reviews.review_fixtures import copy_of, injection, truth_of


def out(review_id: str, pred: ReviewPrediction) -> Output:
    label = "HALLUCINATED" if pred.review_hallucinated else "VALID"
    return Output(review_id, label, 1.0, detail={"review": pred.to_detail()})


# Task 1 ---------------------------------------------------------------------------------------------

def test_binary_metrics_match_hand_computation():
    m = binary_metrics(3, 1, 2, 4)
    assert m["accuracy"] == pytest.approx(7 / 10)
    assert m["precision"] == pytest.approx(3 / 4)
    assert m["recall"] == pytest.approx(3 / 5)
    assert m["f1"] == pytest.approx(2 / 3)  # 2PR/(P+R) = 2·.75·.6/1.35
    assert m["mcc"] == pytest.approx((3 * 4 - 1 * 2) / math.sqrt(4 * 5 * 5 * 6))


def test_a_detector_that_flags_nothing_has_recall_and_f1_zero_and_no_precision_or_mcc():
    m = binary_metrics(0, 0, 2, 3)
    assert m["accuracy"] == pytest.approx(0.6) and m["recall"] == 0.0 and m["f1"] == 0.0
    assert np.isnan(m["precision"]) and np.isnan(m["mcc"])
    assert undefined_reason("precision", 0, 0, 2, 3) == "no positive predictions (TP+FP = 0)"
    assert "no predicted positive" in undefined_reason("mcc", 0, 0, 2, 3)
    assert undefined_reason("accuracy", 0, 0, 0, 0) == "no scored units"


def test_binary_metrics_vectorise_over_resamples():
    tp, fp, fn, tn = np.array([3, 0]), np.array([1, 0]), np.array([2, 2]), np.array([4, 3])
    m = binary_metrics(tp, fp, fn, tn)
    assert m["f1"][0] == pytest.approx(2 / 3) and m["f1"][1] == 0.0 and np.isnan(m["mcc"][1])


# Task 2 ---------------------------------------------------------------------------------------------

LABELS = ("Number", "Entity", "Temporal", "Hyperbole", "Reasoning Error")


def test_macro_and_micro_f1_over_gold_hallucinated_sentences():
    pairs = [("Number", "Number"), ("Number", "Entity"), ("Entity", "Entity"), ("Temporal", None),
             ("Hyperbole", "Bogus")]  # fmt: skip
    counts = type_counts(pairs, LABELS)
    assert counts.tolist() == [[1, 0, 1], [1, 1, 0], [0, 0, 1], [0, 0, 1], [0, 0, 0]]
    m = type_metrics(counts)
    # per label: Number 2/3, Entity 2/3, Temporal 0, Hyperbole 0, Reasoning Error undefined (left out)
    assert m["per_label_f1"][:4].tolist() == pytest.approx([2 / 3, 2 / 3, 0.0, 0.0])
    assert np.isnan(m["per_label_f1"][4])
    assert m["macro_f1"] == pytest.approx((2 / 3 + 2 / 3) / 4)
    assert m["micro_f1"] == pytest.approx(2 * 2 / (2 * 2 + 1 + 3))  # ΣTP=2, ΣFP=1, ΣFN=3


def test_micro_f1_is_accuracy_when_every_sentence_gets_a_listed_label():
    pairs = [("Number", "Number"), ("Entity", "Number"), ("Temporal", "Temporal"), ("Entity", "Entity")]
    assert type_metrics(type_counts(pairs, LABELS))["micro_f1"] == pytest.approx(3 / 4)


def test_an_unknown_gold_type_is_an_error_naming_it():
    with pytest.raises(ValueError, match="'Other'"):
        type_counts([("Other", "Number")], LABELS)


# Task 3 ---------------------------------------------------------------------------------------------

TEXT = "a b c d e f g h i j"  # token k is characters [2k, 2k+1)


def toks(first: int, last: int) -> Span:
    return Span(2 * first, 2 * last + 1)


def test_declared_tokenization_splits_words_and_punctuation_with_offsets():
    text = "F1-score of 0.93."
    assert [text[s.start:s.end] for s in tokenize(text)] == ["F1", "-", "score", "of", "0", ".", "93", "."]


def test_token_f1_counts_b_and_i_tags_as_positive():
    tokens = tokenize(TEXT)
    gold = [toks(0, 2), toks(5, 6)]  # tokens {0,1,2,5,6}
    pred = [toks(1, 5)]  # tokens {1,2,3,4,5}
    assert token_counts(tokens, gold, pred) == (3, 2, 2)  # F1 = 6/10


def test_overlap_matching_is_maximum_one_to_one_where_greedy_leaves_a_prediction_unmatched():
    """Issue 22's case. P1 (tokens 1-5) overlaps G1 (0-2) by two tokens and G2 (5-6) by one; P2
    (token 2) overlaps only G1. Greedy gives G1 to P1 and leaves P2 unmatched (one match); the
    maximum one-to-one assignment pairs P1-G2 and P2-G1 (two matches), no gold span counted twice."""
    tokens = tokenize(TEXT)
    gold = [toks(0, 2), toks(5, 6)]
    pred = [toks(1, 5), toks(2, 2)]
    assert match_spans(tokens, gold, pred, "overlap") == [(0, 1), (1, 0)]
    assert match_spans(tokens, gold, pred, "overlap", matching="greedy") == [(0, 0)]
    assert match_spans(tokens, gold, pred, "exact") == []
    # one prediction overlapping both gold spans still matches only one of them
    assert len(match_spans(tokens, gold, [toks(0, 6)], "overlap")) == 1


def test_overlap_span_f1_is_0_875_with_maximum_matching_where_greedy_gives_0_750():
    """Pooled over two reviews: the case above (2 predictions, 2 gold) plus a review of six gold
    spans and six predictions, five of them exact, one elsewhere. 16 spans in all; greedy matches
    1 + 5 = 6 (2·6/16 = 0.750), the maximum assignment 2 + 5 = 7 (2·7/16 = 0.875)."""
    tricky = copy_of("r1", "A", [TEXT])
    words = ["w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 w13."]
    other = copy_of("r2", "B", words)

    def word_span(copy, word):
        at = copy.review_text.index(word + " ") if word + " " in copy.review_text else copy.review_text.index(word)
        return Span(at, at + len(word))

    gold_tricky = [toks(0, 2), toks(5, 6)]
    inj_tricky = [ReviewInjection(0, g.start, g.end, "Number", None, "?", TEXT[g.start:g.end], "hand") for g in gold_tricky]
    gold_words = ["w0", "w2", "w4", "w6", "w8", "w10"]
    gold_other = [word_span(other, w) for w in gold_words]
    inj_other = [ReviewInjection(0, g.start, g.end, "Entity", None, "?", w, "hand") for g, w in zip(gold_other, gold_words, strict=True)]
    pred_other = gold_other[:5] + [word_span(other, "w13")]  # five exact, one on no gold span
    truths = [truth_of(tricky, *inj_tricky), truth_of(other, *inj_other)]
    outputs = {
        "r1": out("r1", ReviewPrediction(True, {0: True}, {0: "Number"}, (toks(1, 5), toks(2, 2)))),
        "r2": out("r2", ReviewPrediction(True, {0: True}, {0: "Entity"}, tuple(pred_other))),
    }
    s = score_reviews(truths, {"r1": tricky, "r2": other}, outputs, n_resamples=20)
    assert s.value("overlap_span_f1") == pytest.approx(0.875) and s.get("overlap_span_f1").n == 16
    greedy = sum(len(match_spans(tokenize(c.review_text), g, p, "overlap", matching="greedy"))
                 for c, g, p in ((tricky, gold_tricky, [toks(1, 5), toks(2, 2)]), (other, gold_other, pred_other)))
    assert 2 * greedy / 16 == 0.75


def test_maximum_matching_breaks_ties_by_shared_tokens():
    """P_b (tokens 0-6) overlaps both gold spans, P_a (5-6) only G2: two matches either way round
    only with P_b-G1 and P_a-G2."""
    tokens = tokenize(TEXT)
    gold = [toks(0, 2), toks(5, 6)]
    pred = [toks(5, 6), toks(0, 6)]
    assert match_spans(tokens, gold, pred, "overlap") == [(1, 0), (0, 1)]
    assert match_spans(tokens, gold, pred, "exact") == [(0, 1)]
    # same number of matches, more shared tokens: P (tokens 0-3) takes G2 (1-3, three tokens) over G1 (0, one)
    assert match_spans(tokens, [toks(0, 0), toks(1, 3)], [toks(0, 3)], "overlap") == [(0, 1)]


def test_overlap_ties_go_to_the_earliest_gold_span():
    tokens = tokenize(TEXT)
    gold = [toks(4, 5), toks(0, 1)]  # listed out of order on purpose
    pred = [toks(1, 4)]  # one token shared with each
    assert match_spans(tokens, gold, pred, "overlap") == [(0, 1)]


def test_exact_match_is_on_token_boundaries_not_characters():
    tokens = tokenize(TEXT)
    assert match_spans(tokens, [Span(0, 5)], [Span(0, 6)], "exact") == [(0, 0)]  # trailing space
    assert match_spans(tokens, [Span(0, 5)], [Span(0, 3)], "exact") == []


# The whole scorer -----------------------------------------------------------------------------------

def corpus():
    r1 = copy_of("r1", "A", ["The method is new.", "It reaches 95 percent accuracy."])
    r2 = copy_of("r2", "A", ["Results are strong.", "Code is released."])
    r3 = copy_of("r3", "B", ["It uses BERT as encoder.", "Writing is clear."])
    r4 = copy_of("r4", "B", ["Fine work.", "Accept."])
    truths = [truth_of(r1, injection(r1, 1, "95 percent", "Number")), truth_of(r2),
              truth_of(r3, injection(r3, 0, "BERT", "Entity")), truth_of(r4)]  # fmt: skip
    copies = {c.review_id: c for c in (r1, r2, r3, r4)}
    gold_r1 = truths[0].injections[0]
    outputs = {
        "r1": out("r1", ReviewPrediction(True, {0: False, 1: True}, {1: "Number"}, (Span(gold_r1.start, gold_r1.end),))),
        "r2": out("r2", ReviewPrediction(True, {0: True}, {0: "Entity"}, (Span(r2.sentences[0].start, r2.sentences[0].end),))),
        "r3": out("r3", ReviewPrediction(False, {}, {}, ())),
        "r4": Output("r4", error="parse: no JSON", error_kind="parse"),
    }  # fmt: skip
    return truths, copies, outputs


def test_scorer_reproduces_hand_computed_values_for_all_three_tasks():
    truths, copies, outputs = corpus()
    s = score_reviews(truths, copies, outputs, n_resamples=200)
    # Task 1 review level (r4 errored, excluded): TP r1, FP r2, FN r3
    assert [s.value(f"review_{m}") for m in ("accuracy", "precision", "recall", "f1")] == pytest.approx(
        [1 / 3, 1 / 2, 1 / 2, 1 / 2])
    assert s.value("review_mcc") == pytest.approx(-0.5) and s.get("review_f1").n == 3
    # sentence level: TP 1, FP 1, FN 1, TN 3
    assert s.value("sentence_accuracy") == pytest.approx(4 / 6)
    assert s.value("sentence_mcc") == pytest.approx((1 * 3 - 1 * 1) / math.sqrt(2 * 2 * 4 * 4))
    # Task 2: r1 Number right, r3 Entity missed; r2's type on a clean sentence is not scored
    assert s.value("type_macro_f1") == pytest.approx(0.5) and s.value("type_micro_f1") == pytest.approx(2 / 3)
    assert s.value("type_f1", "type=Number") == 1.0 and s.value("type_f1", "type=Entity") == 0.0
    assert s.value("type_f1", "type=Temporal") is None
    assert "undefined" in s.get("type_macro_f1").reason
    # Task 3: tokens TP 2 ("95", "percent"), FP 4 (r2's sentence), FN 1 ("BERT")
    assert s.value("token_f1") == pytest.approx(4 / 9)
    assert s.value("exact_span_f1") == pytest.approx(0.5) and s.value("overlap_span_f1") == pytest.approx(0.5)
    assert s.coverage["errored"] == {"parse": 1} and s.coverage["reviews"] == 4
    for m in s.metrics:  # every defined value sits inside its paper-bootstrap interval
        if m.value is not None and m.ci_low is not None:
            assert m.ci_low - 1e-12 <= m.value <= m.ci_high + 1e-12, m


def test_unanswered_as_negative_counts_the_errored_review_as_clean():
    truths, copies, outputs = corpus()
    s = score_reviews(truths, copies, outputs, unanswered="negative", n_resamples=50)
    assert s.value("review_accuracy") == pytest.approx(0.5) and s.value("review_mcc") == 0.0
    assert s.get("review_accuracy").n == 4


def test_intervals_are_seeded_and_resample_papers():
    truths, copies, outputs = corpus()
    a = score_reviews(truths, copies, outputs, n_resamples=300, seed=7).get("sentence_f1")
    b = score_reviews(truths, copies, outputs, n_resamples=300, seed=7).get("sentence_f1")
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high) and a.ci_low < a.ci_high


def test_control_a_detector_that_says_nothing_scores_nothing():
    truths, copies, _ = corpus()
    silent = {t.review_id: out(t.review_id, ReviewPrediction(False, {}, {}, ())) for t in truths}
    s = score_reviews(truths, copies, silent, n_resamples=50)
    for level in ("review", "sentence"):
        assert s.value(f"{level}_recall") == 0.0 and s.value(f"{level}_f1") == 0.0
        assert s.value(f"{level}_precision") is None and s.value(f"{level}_mcc") is None
        assert s.get(f"{level}_mcc").reason.startswith("MCC undefined")
    assert s.value("type_micro_f1") == 0.0 and s.value("type_macro_f1") == 0.0
    assert s.value("token_f1") == 0.0 and s.value("exact_span_f1") == 0.0 and s.value("overlap_span_f1") == 0.0


def test_a_detector_that_always_errors_has_no_values_only_reasons():
    truths, copies, _ = corpus()
    broken = {t.review_id: Output(t.review_id, error="boom", error_kind="provider") for t in truths}
    s = score_reviews(truths, copies, broken, n_resamples=20)
    assert all(m.value is None and m.reason for m in s.metrics)
    assert s.coverage["errored"] == {"provider": 4}
    rows = s.rows("run", "sys")
    assert all(math.isnan(r["value"]) and r["n"] == 0 for r in rows)


def test_a_prediction_without_spans_is_unanswered_for_task_3_only():
    truths, copies, outputs = corpus()
    outputs = {k: v for k, v in outputs.items() if k != "r4"}
    outputs["r4"] = out("r4", ReviewPrediction(False, {0: False, 1: False}))  # no types, no spans
    s = score_reviews(truths, copies, outputs, n_resamples=20)
    assert s.coverage["unanswered"] == {"span": 1} and s.get("review_accuracy").n == 4


# Task 2 oracle vs end to end, Task 3 label-conditioned, unanswered counted as misses ---------------

def test_oracle_typing_scores_every_gold_hallucinated_sentence_apart_from_detection():
    """r3's Entity sentence was not flagged: end to end it is a miss of Entity (micro 2/3); told it
    is hallucinated (oracle, fig. 20) the detector types it. r1 right in both settings; the oracle
    types given to clean sentences (r1's first, r2's) are not scored."""
    truths, copies, outputs = corpus()
    r1, r2, r3 = (ReviewPrediction.from_detail(outputs[r].detail["review"]) for r in ("r1", "r2", "r3"))
    oracle = {"r1": {0: "Hyperbole", 1: "Number"}, "r2": {0: "Entity", 1: "Entity"}, "r3": {0: "Entity", 1: "Temporal"}}
    for rid, p in (("r1", r1), ("r2", r2), ("r3", r3)):
        outputs[rid] = out(rid, ReviewPrediction(p.review_hallucinated, p.sentence_labels, p.sentence_types, p.spans,
                                                 oracle_types=oracle[rid]))
    s = score_reviews(truths, copies, outputs, n_resamples=50)
    assert s.value("type_micro_f1") == pytest.approx(2 / 3) and s.value("type_macro_f1") == pytest.approx(0.5)
    assert s.value("type_oracle_micro_f1") == 1.0 and s.value("type_oracle_macro_f1") == 1.0
    assert s.get("type_oracle_micro_f1").n == 2 and s.value("type_oracle_f1", "type=Entity") == 1.0
    # r3 typed Hyperbole, a label never gold: over gold-or-predicted labels (Number 1, Entity 0,
    # Hyperbole 0) macro = 1/3; over gold labels only (Number, Entity) macro = 1/2; micro 2/(2+1+1)
    outputs["r3"] = out("r3", ReviewPrediction(False, {}, {}, (), oracle_types={0: "Hyperbole"}))
    s = score_reviews(truths, copies, outputs, n_resamples=50)
    assert s.value("type_oracle_macro_f1") == pytest.approx(1 / 3)
    assert s.value("type_oracle_macro_f1_gold") == pytest.approx(1 / 2)
    assert s.value("type_oracle_micro_f1") == pytest.approx(1 / 2)
    assert "gold support" in s.get("type_oracle_macro_f1_gold").reason


def test_a_detector_without_oracle_typing_has_no_oracle_figure_and_is_not_counted_unanswered():
    truths, copies, outputs = corpus()
    s = score_reviews(truths, copies, outputs, n_resamples=20)
    assert s.value("type_oracle_micro_f1") is None
    assert "type_oracle" not in s.coverage["unanswered"] and "type_oracle" in s.coverage["tasks_not_answered"]
    s = score_reviews(truths, copies, outputs, unanswered="negative", n_resamples=20)
    assert s.value("type_oracle_micro_f1") is None and s.value("lc_token_f1") is None


def test_label_conditioned_localisation_reads_the_spans_marked_for_each_gold_type():
    """fig. 21: asked for a type, the detector marks one sentence. r1 (gold Number "95 percent")
    marks its whole sentence 1 for Number (6 tokens, 2 gold); r3 (gold Entity "BERT") marks "BERT"
    for Entity, and a span for Number, which is not a gold type of r3 and is not read.
    Tokens TP 3, FP 4, FN 0: 6/10. Exact: r3 only, 2·1/4; overlap: both, 2·2/4."""
    truths, copies, outputs = corpus()
    r1, r3 = copies["r1"], copies["r3"]
    bert = truths[2].injections[0]
    s1 = r1.sentences[1]
    outputs["r1"] = out("r1", ReviewPrediction(True, {1: True}, label_spans={"Number": (Span(s1.start, s1.end),),
                                                                             "Entity": (Span(0, 3),)}))
    outputs["r3"] = out("r3", ReviewPrediction(False, {}, label_spans={"Entity": (Span(bert.start, bert.end),),
                                                                       "Number": (Span(r3.sentences[1].start, r3.sentences[1].end),)}))
    s = score_reviews(truths, copies, outputs, n_resamples=50)
    assert s.value("lc_token_f1") == pytest.approx(0.6)
    assert s.value("lc_exact_span_f1") == pytest.approx(0.5) and s.value("lc_overlap_span_f1") == pytest.approx(1.0)
    assert s.get("lc_overlap_span_f1").n == 4
    # a span marked for the wrong type does not match: r3's BERT asked as Number only
    outputs["r3"] = out("r3", ReviewPrediction(False, {}, label_spans={"Number": (Span(bert.start, bert.end),)}))
    s = score_reviews(truths, copies, outputs, n_resamples=50)
    assert s.value("lc_overlap_span_f1") == pytest.approx(2 * 1 / 3)  # r1 matches; r3: 0 predictions, 1 gold


def test_a_detector_failing_exactly_on_the_injected_reviews_gets_a_second_figure_counting_them_as_misses():
    """r1 and r3 (the injected ones) error; r2 and r4 answered clean. Excluded, there is no gold
    positive left: recall and F1 undefined. Counted as misses: recall 0 and F1 0 over 4 reviews."""
    truths, copies, _ = corpus()
    outputs = {"r1": Output("r1", error="parse: x", error_kind="parse"), "r3": Output("r3", error="parse: y", error_kind="parse"),
               "r2": out("r2", ReviewPrediction(False, {0: False, 1: False}, {}, ())),
               "r4": out("r4", ReviewPrediction(False, {0: False, 1: False}, {}, ()))}
    s = score_reviews(truths, copies, outputs, n_resamples=20)
    assert s.value("review_recall") is None and s.value("review_f1") is None
    assert s.value("review_recall_unanswered_as_miss") == 0.0 and s.value("review_f1_unanswered_as_miss") == 0.0
    assert s.get("review_f1_unanswered_as_miss").n == 4 and s.value("sentence_recall_unanswered_as_miss") == 0.0
    assert s.value("token_f1_unanswered_as_miss") == 0.0
    assert s.value("type_oracle_micro_f1_unanswered_as_miss") is None  # a task it never answers stays undefined
    # with nothing errored the two figures agree
    truths, copies, outputs = corpus()
    outputs["r4"] = out("r4", ReviewPrediction(False, {}, {}, ()))
    s = score_reviews(truths, copies, outputs, n_resamples=20)
    assert s.value("sentence_f1_unanswered_as_miss") == s.value("sentence_f1")
