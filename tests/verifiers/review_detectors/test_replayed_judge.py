"""The RA-LLM judge end to end: gateway, litellm, the replay server on 127.0.0.1 answering a
recorded table, outputs as stored, and the metric values computed by hand from that table."""

from __future__ import annotations

import asyncio
import json

import pytest

from clients.lent_services import RunServices
from clients.llm_gateway import LLMServices
from corpora.reviews.records import ReviewPrediction
from scoring.reviews import score_reviews
from storage.records import Output
from storage.schemas import OUTPUT_SCHEMA, table_from_rows
from tests.helpers.replay_server import replay_server, server_stats
from tests.verifiers.review_detectors.review_table import EXPECTED, items_of, recording_rules, table
from verifiers.registry import SystemSpec, build_system
from verifiers.system import RunContext

pytestmark = pytest.mark.integration  # a replay server subprocess


def ctx_for(tmp_path) -> RunContext:
    return RunContext("run-r", "2026-09-10", cache_dir=str(tmp_path / "cache"),
                      services=RunServices("test", "", llm=LLMServices(concurrency=4)))  # fmt: skip


def judge(url: str, **args):
    return build_system(SystemSpec("review_llm_judge", {"model": "openai/recorded-judge", "api_base": f"{url}/v1",
                                                        "prompt_style": "cot", **args}))  # fmt: skip


def as_stored(outputs: list[Output]) -> dict[str, Output]:
    """Outputs through the OUTPUT_SCHEMA table and back, as a scorer reading a run sees them."""
    rows = table_from_rows([o.to_row("run-r", "judge", 0) for o in outputs], OUTPUT_SCHEMA).to_pylist()
    back = {}
    for r in rows:
        detail = json.loads(r["detail_json"]) if r["detail_json"] else None
        back[r["item_id"]] = Output(r["item_id"], r["label"], r["confidence"], detail=detail, error=r["error"],
                                    error_kind=r["error_kind"])  # fmt: skip
    return back


def test_recorded_answers_reproduce_the_hand_computed_metrics(tmp_path):
    copies, truths = table()
    with replay_server(recordings=recording_rules(), tmp=tmp_path) as url:
        system = judge(url, classify_types=True)
        outputs = asyncio.run(system.run(items_of(copies), ctx_for(tmp_path)))
        assert server_stats(url).get("unmatched", 0) == 0
    by_id = {o.item_id: o for o in outputs}
    assert sorted(by_id) == ["R1", "R2", "R3", "R4", "R5"]
    assert by_id["R5"].error_kind == "parse" and by_id["R5"].label is None
    assert by_id["R5"].detail["parse_failures"] == 1
    assert (by_id["R1"].label, by_id["R3"].label) == ("HALLUCINATED", "VALID")
    assert by_id["R1"].api_calls == 3 and by_id["R1"].model_id == "recorded-judge" and by_id["R1"].tokens_in == 900
    r4 = ReviewPrediction.from_detail(by_id["R4"].detail["review"])
    assert r4.sentence_labels == {0: True, 1: False} and r4.sentence_types == {0: "Hyperbole"}
    assert by_id["R4"].detail["parse_methods"] == ["fenced", "strict"]
    assert system.parse_stats.failed == 1 and system.parse_stats.attempted == 10

    scores = score_reviews(truths, {c.review_id: c for c in copies}, as_stored(outputs), n_resamples=500)
    for metric, want in EXPECTED.items():
        assert scores.value(metric) == pytest.approx(want, abs=1e-12), metric
    assert scores.coverage["errored"] == {"parse": 1}
    assert scores.get("review_f1").n == 4 and scores.get("sentence_f1").n == 8


def test_a_second_run_is_answered_from_the_response_cache(tmp_path):
    copies, _ = table()
    with replay_server(recordings=recording_rules(), tmp=tmp_path) as url:
        first = asyncio.run(judge(url).run(items_of(copies), ctx_for(tmp_path)))
        paid = server_stats(url)["requests"]
        again = asyncio.run(judge(url).run(items_of(copies), ctx_for(tmp_path)))
        assert server_stats(url)["requests"] == paid
    assert [o.label for o in first] == [o.label for o in again]
    assert sum(o.cache_hits for o in again if o.error is None) == 8


def test_review_mode_locates_the_quoted_phrase_as_the_span(tmp_path):
    copies, truths = table()
    r1 = copies[0]
    answer = {"hallucination": True, "hallucinated_sentences": [{"index": 1, "type": "Number", "span": "95.0%"}]}
    rules = [{"match": {"contains": "1. It reaches 95.0% accuracy on Cora."}, "response": {"text": json.dumps(answer)}},
             {"match": {"contains": "REVIEW SENTENCES"}, "response": {"text": '{"hallucination": true, "hallucinated_sentences": [{"index": 7}]}'}}]  # fmt: skip
    with replay_server(recordings=rules, tmp=tmp_path) as url:
        outputs = asyncio.run(judge(url, mode="review").run(items_of(copies[:2]), ctx_for(tmp_path)))
    good, bad = outputs
    assert good.label == "HALLUCINATED" and good.api_calls == 1
    assert good.detail["review"]["spans"] == [[r1.review_text.index("95.0%"), r1.review_text.index("95.0%") + 5]]
    assert bad.error_kind == "parse" and "index 7" in bad.error
    scores = score_reviews(truths[:1], {"R1": r1}, {"R1": good}, n_resamples=50)
    assert scores.value("exact_span_f1") == 1.0 and scores.value("token_f1") == 1.0
    assert scores.value("type_micro_f1") == 1.0


def test_kr_reads_the_final_judgement_line_and_counts_a_missing_one(tmp_path):
    copies, _ = table()
    rules = [{"match": {"contains": "Review statement: It reaches 95.0%"},
              "response": {"text": "The paper says 81.2%.\n#Your Judgement#: Yes"}},
             {"match": {"contains": "Review statement: The paper proposes"}, "response": {"text": "#Your Judgement#: No"}},
             {"match": {"contains": "Review statement: Training takes"}, "response": {"text": "Probably fine."}},
             {"match": {"contains": "Review statement:"}, "response": {"text": "#Your Judgement#: No"}}]  # fmt: skip
    with replay_server(recordings=rules, tmp=tmp_path) as url:
        system = judge(url, prompt_style="kr")
        r1, r2 = asyncio.run(system.run(items_of(copies[:2]), ctx_for(tmp_path)))
    assert r1.label == "HALLUCINATED" and r1.detail["review"]["sentence_labels"] == {"0": False, "1": True}
    assert r1.detail["review"]["sentence_types"] is None  # types were not asked for
    assert r2.error_kind == "parse" and "Your Judgement" in r2.error
    assert system.parse_stats.failed == 1


def test_the_system_refuses_an_unknown_style_and_a_review_mode_nli():
    with pytest.raises(ValueError, match="prompt_style"):
        build_system(SystemSpec("review_llm_judge", {"model": "openai/x", "prompt_style": "zero"}))
    from verifiers.review_detectors.llm_judge import ReviewJudge

    with pytest.raises(ValueError, match="mode='sentence'"):
        ReviewJudge("self/smollm2", prompt_style="nli", mode="review")
