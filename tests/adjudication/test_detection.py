"""Detection matching against deterministic judges on 127.0.0.1: quote match, majority, escalation."""

from __future__ import annotations

import json

import pytest

from adjudication.papers.adjudicate import PaperAdjudicationConfig, adjudicate_paper_run
from clients.llm_gateway import LLMServices
from storage.records import Output, PaperReview
from storage.schemas import ITEM_SCHEMA, VERDICT_SCHEMA, table_from_rows
from tests.adjudication.judges import judge_servers, says
from tests.adjudication.paper_copies import injected_item, truth_rows

pytestmark = pytest.mark.integration  # adjudication runs checks in the sandbox's worker processes

A_TAIL = 'quote: "Total & 130"\n\nINJECTED ERROR\nInjection ID: P1/copy-1/'
C_TAIL = "Nice paper.\n\nINJECTED ERROR\nInjection ID: P1/copy-1/"
E_TAIL = "align*}\n\nINJECTED ERROR\nInjection ID: P1/copy-1/"
YES = {"detected": True, "confidence": 0.9, "evidence": "total wrong", "reason": "same error"}
# The degenerate review of issue 15: every judge says "detected" at confidence 0 with invented evidence.
GAMED = {"detected": True, "confidence": 0.0, "evidence": "the sign flip in the expansion", "reason": "?"}
NO = {"detected": False, "confidence": 0.95, "evidence": None, "reason": "not mentioned"}
UNSURE_NO = {"detected": False, "confidence": 0.5, "evidence": None, "reason": "maybe"}

PANEL = {
    "a": [says(E_TAIL, **GAMED), says(A_TAIL + "1", **YES), says(A_TAIL + "3", **YES), says(C_TAIL + "1", **NO), says(C_TAIL + "2", **UNSURE_NO),
          {"match": {"contains": C_TAIL + "3"}, "response": {"text": "I cannot tell."}}],
    "b": [says(E_TAIL, **GAMED), says(A_TAIL + "1", **YES), says(A_TAIL + "3", **YES), says(C_TAIL + "1", **NO), says(C_TAIL + "2", **UNSURE_NO),
          says(C_TAIL + "3", **(YES | {"evidence": "Nice paper."}))],
    "c": [says(E_TAIL, **GAMED), says(A_TAIL + "1", **YES), says(A_TAIL + "3", **NO), says(C_TAIL + "1", **NO), says(C_TAIL + "2", **UNSURE_NO),
          says(C_TAIL + "3", **(NO | {"confidence": 0.9}))],
    "e": [{"match": {"contains": E_TAIL}, "response": {"text": "context length exceeded"}},
          says(A_TAIL + "3", detected=False, confidence=0.8, reason="the flag is about the table"),
          says(C_TAIL + "2", detected=True, confidence=0.85, evidence="Nice paper.", reason="full paper read"),
          {"match": {"contains": C_TAIL + "3"}, "response": {"text": "{\"detected\": \"perhaps\"}"}}],
}


def outputs() -> list[dict]:
    review_a = Output("P1/copy-1", detail={"review_text": "Issues listed.", "prompt_style": "structured", "flags": [
        {"flag_id": "P1/copy-1/f1", "quote": "Total & 130", "location": "Table 1", "type": "numerics",
         "description": "total wrong", "check": None}]})
    review_c = Output("P1/copy-1", detail={"review_text": "Nice paper.", "prompt_style": "free_form", "flags": []})
    failed = Output.failed("P1/copy-1", "provider timed out", "provider")
    review_d = Output("P1/copy-1", detail={"review_text": "", "prompt_style": "mechanical", "flags": []})
    review_e = Output("P1/copy-1", detail={"review_text": "\\begin{align*}\n\\begin{align*}", "prompt_style": "free_form",
                                           "flags": []})
    return [review_e.to_row("run-e", "rev-E", 0), review_a.to_row("run-a", "rev-A", 0), failed.to_row("run-b", "rev-B", 0), review_c.to_row("run-c", "rev-C", 0),
            review_d.to_row("run-d", "rev-D", 0)]


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("detection")
    items = table_from_rows([injected_item().to_row()], ITEM_SCHEMA)
    with judge_servers(tmp, PANEL) as judges:
        config = PaperAdjudicationConfig(panel=[judges["a"], judges["b"], judges["c"]], escalation=judges["e"])
        table = adjudicate_paper_run(items, truth_rows(), outputs(), config, services=LLMServices(),
                                     cache_dir=str(tmp / "cache"))
    return table


def row(table, system: str, n: int) -> tuple[str, list[dict], dict]:
    (r,) = [r for r in table.to_pylist() if r["system"] == system and r["unit_id"] == f"P1/copy-1/{n}"]
    return r["outcome"], json.loads(r["votes_json"]), json.loads(r["detail_json"])


def test_every_reviewer_and_injection_has_one_verdict_row(verdicts):
    assert verdicts.schema.equals(VERDICT_SCHEMA, check_metadata=True)
    assert verdicts.num_rows == 15 and set(verdicts.column("unit_kind").to_pylist()) == {"injection"}
    assert {(r["system"], r["run_id"]) for r in verdicts.to_pylist()} == {("rev-A", "run-a"), ("rev-B", "run-b"),
                                                                         ("rev-C", "run-c"), ("rev-D", "run-d"),
                                                                         ("rev-E", "run-e")}


def test_a_review_that_raised_nothing_misses_every_injection_without_judges(verdicts):
    for n in (1, 2, 3):
        outcome, votes, detail = row(verdicts, "rev-D", n)
        assert (outcome, votes, detail["matched_by"]) == ("missed", [], "no_findings")
        assert detail["unanimous"] is None  # no judge voted: nothing to be unanimous about


def test_a_flag_quoting_the_injected_span_is_detected_without_judges(verdicts):
    outcome, votes, detail = row(verdicts, "rev-A", 2)
    assert outcome == "detected" and detail["matched_by"] == "quote"
    assert [v["role"] for v in votes] == ["quote_match"] and votes[0]["judge"] == "mechanical"
    assert detail["unanimous"] is None
    assert detail | {} == detail and detail["severity"] == "S2" and detail["error_type"] == "numerics"


def test_unanimous_confident_panel_is_final(verdicts):
    outcome, votes, detail = row(verdicts, "rev-A", 1)
    assert outcome == "detected" and detail == {"error_type": "mathematics", "severity": "S1", "subtype": "sign_flip",
                                                "paper_id": "P1", "copy": 1, "visible": None, "matched_by": "panel",
                                                "escalated": False, "unanimous": True,
                                                "review_quotes": {"flags": 1, "quoted": 1, "over_long": 0,
                                                                  "token_only": 0}}
    assert [v["family"] for v in votes] == ["a", "b", "c"] and all(v["detected"] for v in votes)
    outcome, _, detail = row(verdicts, "rev-C", 1)
    assert outcome == "missed" and not detail["escalated"]


def test_split_vote_escalates_and_the_escalation_judge_decides(verdicts):
    outcome, votes, detail = row(verdicts, "rev-A", 3)
    assert outcome == "missed" and detail["matched_by"] == "escalation" and detail["escalated"]
    assert [v["role"] for v in votes] == ["panel", "panel", "panel", "escalation"]
    assert [v["detected"] for v in votes] == [True, True, False, False] and not detail["unanimous"]


def test_low_confidence_majority_escalates_and_can_be_reversed(verdicts):
    outcome, votes, detail = row(verdicts, "rev-C", 2)
    assert outcome == "detected" and detail["escalated"] and votes[-1]["confidence"] == 0.85


def test_tie_with_an_abstaining_judge_and_an_unreadable_escalation_is_undecided(verdicts):
    outcome, votes, detail = row(verdicts, "rev-C", 3)
    assert outcome == "undecided" and detail["escalated"] and "escalation gave no verdict" in detail["undecided_reason"]
    assert votes[0]["detected"] is None and "no verdict" in votes[0]["reason"]
    assert votes[-1]["role"] == "escalation" and votes[-1]["detected"] is None


def test_a_failed_review_is_unscored_for_every_injection(verdicts):
    for n in (1, 2, 3):
        outcome, votes, detail = row(verdicts, "rev-B", n)
        assert outcome == "unscored" and votes == [] and "provider timed out" in detail["unscored_reason"]


def test_detected_votes_without_evidence_in_the_review_and_a_failed_escalation_are_never_detected(verdicts):
    """Issue 15: a review of repeated `\\begin{align*}` scored 9/9 on confidence-0 votes and a failed escalation."""
    for n in (1, 2, 3):
        outcome, votes, detail = row(verdicts, "rev-E", n)
        assert outcome == "undecided" and detail["escalated"]
        panel = [v for v in votes if v["role"] == "panel"]
        assert len(panel) == 3 and all(v["detected"] is None for v in panel)
        assert all("evidence not found in the review" in v["reason"] for v in panel)
        assert votes[-1]["role"] == "escalation" and votes[-1]["detected"] is None


def test_evidence_in_review_tolerates_markup_not_invention():
    from adjudication.papers.detection import EVIDENCE_MIN_RATIO, evidence_in_review

    review = "The expansion $(a+b)^2 = a^2 - 2ab + b^2$ has the wrong sign on the cross term."
    assert evidence_in_review("expansion (a+b)^2 = a^2 - 2ab + b^2 has the wrong sign", review)[0]
    assert evidence_in_review("the wrong  sign on the\ncross term", review)[0]
    found, score = evidence_in_review("the table total is inconsistent", review)
    assert not found and score < EVIDENCE_MIN_RATIO
    assert not evidence_in_review("sign", review)[0]  # too short to mean anything
    assert not evidence_in_review(None, review)[0]


async def _escalation_less(votes):
    from adjudication.papers.detection import DetectionMatcher

    class Fixed:
        def __init__(self, v):
            self.v = v

        async def detection_vote(self, prompt, role):
            return self.v | {"role": role}

    matcher = DetectionMatcher([Fixed(v) for v in votes], None, 0.7)
    review = PaperReview(review_text="The cross term has the wrong sign.", prompt_style="free_form", flags=[])
    return await matcher.judge_injection({"injection_id": "x", "file": "main.tex", "start": 0, "end": 1}, review, {}, "main.tex")


def test_a_low_confidence_majority_with_no_escalation_judge_is_undecided():
    import asyncio

    yes = {"judge": "j", "family": "f", "detected": True, "outcome": None, "confidence": 0.4,
           "evidence": "the cross term has the wrong sign", "reason": "r"}
    outcome, _, detail = asyncio.run(_escalation_less([yes, yes]))
    assert outcome == "undecided" and "no escalation judge" in detail["undecided_reason"]
    outcome, _, _ = asyncio.run(_escalation_less([yes | {"confidence": 0.9}, yes | {"confidence": 0.8}]))
    assert outcome == "detected"
