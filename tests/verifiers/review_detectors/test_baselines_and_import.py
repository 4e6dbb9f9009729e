"""The model-free lexical baseline, the JSONL import, and the NLI baseline on the bundled SmolLM2."""

from __future__ import annotations

import asyncio
import json

import pytest

from corpora.reviews.records import ReviewPrediction
from scoring.reviews import score_reviews
from tests.verifiers.review_detectors.review_table import items_of, table
from verifiers.registry import SystemSpec, build_system
from verifiers.system import RunContext

CTX = RunContext("run-b", "2026-09-10")


def test_lexical_baseline_flags_numbers_the_paper_never_states():
    copies, truths = table()
    outputs = asyncio.run(build_system(SystemSpec("review_lexical")).run(items_of(copies), CTX))
    by_id = {o.item_id: o for o in outputs}
    r1 = ReviewPrediction.from_detail(by_id["R1"].detail["review"])
    assert r1.sentence_labels == {0: False, 1: True} and r1.sentence_types == {1: "Number"}
    start = copies[0].review_text.index("95.0%")
    assert [(s.start, s.end) for s in r1.spans] == [(start, start + 5)]
    # "3 hours" and "2 points" are stated by the papers: not flagged
    assert by_id["R2"].label == "VALID" and by_id["R3"].label == "VALID"
    s = score_reviews(truths, {c.review_id: c for c in copies}, {o.item_id: o for o in outputs}, n_resamples=50)
    assert s.value("review_precision") == 1.0 and s.value("review_recall") == pytest.approx(1 / 3)
    assert s.value("exact_span_f1") == pytest.approx(2 * 1 / (1 + 3)) and s.value("type_micro_f1") == pytest.approx(2 / 4)
    # oracle typing: "Number" for any sentence with a number (R1 s1 right; R3's Entity and R4's
    # Overgeneralization sentences hold none: no answer, two misses); R2 s0 ("3 hours") typed, not gold
    assert r1.oracle_types == {1: "Number"} and ReviewPrediction.from_detail(by_id["R2"].detail["review"]).oracle_types == {0: "Number"}
    assert s.value("type_oracle_micro_f1") == pytest.approx(2 / 4) and s.get("type_oracle_micro_f1").n == 3
    # label-conditioned: asked for Number, R1's "95.0%" (exact); asked for Entity / Overgeneralization, nothing
    assert s.value("lc_exact_span_f1") == pytest.approx(2 * 1 / (1 + 3))


def test_lexical_baseline_without_paper_text_is_an_input_failure():
    copies, _ = table()
    blind = [items_of(copies)[0]]
    blind[0].payload["paper_text"] = ""
    (out,) = asyncio.run(build_system(SystemSpec("review_lexical")).run(blind, CTX))
    assert out.error_kind == "input" and out.label is None


def test_import_reads_labels_types_and_spans_and_counts_what_is_missing(tmp_path):
    copies, truths = table()
    path = tmp_path / "preds.jsonl"
    lines = [
        {"review_id": "R1", "sentence_labels": [1], "sentence_types": {"1": "Number"}, "spans": [[27, 32]], "confidence": 0.7},
        {"review_id": "R2", "review_hallucinated": False, "sentence_labels": {"0": False, "1": False}},
        {"review_id": "R3", "review_hallucinated": None},
        {"review_id": "R4", "sentence_labels": "all"},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    outputs = asyncio.run(build_system(SystemSpec("review_import", {"path": str(path)})).run(items_of(copies), CTX))
    by_id = {o.item_id: o for o in outputs}
    assert (by_id["R1"].label, by_id["R1"].confidence) == ("HALLUCINATED", 0.7)
    assert by_id["R1"].detail["review"]["spans"] == [[27, 32]] and by_id["R1"].detail["source_line"] == 1
    assert by_id["R2"].label == "VALID" and by_id["R2"].detail["review"]["spans"] is None
    assert by_id["R3"].error_kind == "input" and "preds.jsonl:3" in by_id["R3"].error
    assert by_id["R4"].error_kind == "parse" and "preds.jsonl:4" in by_id["R4"].error
    assert by_id["R5"].error_kind == "input" and "no prediction for review R5" in by_id["R5"].error
    s = score_reviews(truths, {c.review_id: c for c in copies}, by_id, n_resamples=20)
    assert s.coverage["errored"] == {"input": 2, "parse": 1} and s.coverage["unanswered"]["span"] == 1


def test_import_fails_a_review_listed_twice_and_scores_the_others(tmp_path):
    path = tmp_path / "dup.jsonl"
    path.write_text('{"review_id": "R1", "review_hallucinated": true}\n{"review_id": "R2", "review_hallucinated": false}\n'
                    '{"review_id": "R1", "review_hallucinated": false}\n')  # fmt: skip
    copies, _ = table()
    outputs = asyncio.run(build_system(SystemSpec("review_import", {"path": str(path)})).run(items_of(copies), CTX))
    by_id = {o.item_id: o for o in outputs}
    assert by_id["R1"].error_kind == "parse" and "dup.jsonl:3: review R1 already on line 1" in by_id["R1"].error
    assert by_id["R2"].label == "VALID" and by_id["R2"].error is None


@pytest.mark.integration  # a real model on CPU: ~50 s, with the tests that start processes, not the unit tier
def test_nli_baseline_runs_smollm2_on_cpu_and_never_scores_a_parse_failure(tmp_path):
    from tests.helpers.selfhosted import require_selfhosted_model

    require_selfhosted_model()
    from clients.lent_services import RunServices
    from clients.llm_gateway import LLMServices
    from clients.llm_llamacpp import LlamaCppBackend, smollm2_path

    backend = LlamaCppBackend(smollm2_path(), model_id="smollm2-135m-instruct", n_ctx=2048, n_threads=1)
    ctx = RunContext("run-n", "2026-09-10", cache_dir=str(tmp_path), services=RunServices("test", "", llm=LLMServices(backends={"smollm2": backend})))
    copies, truths = table()
    system = build_system(SystemSpec("review_nli"))
    outputs = asyncio.run(system.run(items_of(copies[:2]), ctx))
    assert [o.item_id for o in outputs] == ["R1", "R2"]
    for out in outputs:  # a verdict with sentence labels (some perhaps unanswered), or a counted parse failure
        assert out.error_kind in (None, "parse")
        assert out.model_id == "smollm2-135m-instruct" and out.tokens_out > 0
        assert out.api_calls == 1  # both sentences of the review in one batched call
        if out.error is None:
            assert out.label in ("HALLUCINATED", "VALID", "UNCERTAIN")
            unanswered = {str(i) for i in out.detail.get("unanswered_sentences", [])}
            assert set(out.detail["review"]["sentence_labels"]) | unanswered == {"0", "1"}
    assert system.parse_stats.attempted == 4


def test_import_reads_oracle_types_and_label_spans_and_checks_them(tmp_path):
    copies, truths = table()
    start = copies[0].review_text.index("95.0%")
    path = tmp_path / "preds.jsonl"
    lines = [
        {"review_id": "R1", "sentence_labels": [1], "oracle_types": {"0": "Entity", "1": "Number"},
         "label_spans": {"Number": [[start, start + 5]], "Entity": []}},
        {"review_id": "R3", "sentence_labels": [], "oracle_types": {"0": "Entity"}, "label_spans": {"Entity": [[0, 9999]]}},
        {"review_id": "R4", "sentence_labels": [], "oracle_types": {"7": "Hyperbole"}},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    outputs = asyncio.run(build_system(SystemSpec("review_import", {"path": str(path)})).run(items_of(copies), CTX))
    by_id = {o.item_id: o for o in outputs}
    r1 = ReviewPrediction.from_detail(by_id["R1"].detail["review"])
    assert r1.oracle_types == {0: "Entity", 1: "Number"} and [(s.start, s.end) for s in r1.label_spans["Number"]] == [(start, start + 5)]
    assert by_id["R3"].error_kind == "parse" and "label_spans.Entity[0]" in by_id["R3"].error
    assert by_id["R4"].error_kind == "parse" and "oracle_types" in by_id["R4"].error
    s = score_reviews(truths, {c.review_id: c for c in copies}, by_id, n_resamples=20)
    assert s.value("type_oracle_micro_f1") == 1.0 and s.value("lc_exact_span_f1") == 1.0
