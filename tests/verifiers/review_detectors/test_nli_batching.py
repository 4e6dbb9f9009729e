"""The NLI baseline batched (several numbered sentences per call, one boolean per sentence) and its
per-sentence parse failures, on the hand-made review table with a scripted in-process backend."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from clients.lent_services import RunServices
from clients.llm_gateway import LLMServices
from clients.llm_request import LLMRequest, LLMResponse
from corpora.reviews.records import ReviewPrediction
from scoring.reviews import score_reviews
from storage.records import Item
from tests.verifiers.review_detectors.review_table import items_of, table
from verifiers.registry import SystemSpec, build_system
from verifiers.system import RunContext

# Not entailed (= hallucinated) by the table's papers: R1 s1 (95.0%) and R3 s0 (RoBERTa).
NOT_ENTAILED = {"It reaches 95.0% accuracy on Cora.", "The authors fine-tune RoBERTa on SQuAD."}


class ScriptedNLI:
    """A model backend answering batched NLI prompts from `NOT_ENTAILED`, with `spoil(sentence)`
    giving the text of a sentence's value (a bad value, or None: left out of the list)."""

    def __init__(self, spoil=None, raw: dict[str, str] | None = None) -> None:
        self.spoil, self.raw, self.prompts, self.params = spoil or {}, raw or {}, [], []

    async def generate(self, request: LLMRequest, timeout: float) -> LLMResponse:
        prompt = request.messages[-1]["content"]
        self.prompts.append(prompt)
        self.params.append(request.params)
        for marker, text in self.raw.items():
            if marker in prompt:
                return LLMResponse(text, "scripted-nli", 100, 10)
        if "Hypotheses (numbered sentences" in prompt:
            block = prompt.split("Hypotheses (numbered sentences of a peer review of that paper):\n")[1].split("\n\n")[0]
            values = []
            for sentence in re.findall(r"^\d+\. (.*)$", block, re.M):
                value = self.spoil.get(sentence, json.dumps(sentence not in NOT_ENTAILED))
                if value is not None:
                    values.append(value)
            return LLMResponse('{"entailed": [' + ", ".join(values) + "]}", "scripted-nli", 100, 10)
        sentence = prompt.split("Hypothesis (a sentence of a peer review of that paper):\n")[1].split("\n\n")[0]
        value = self.spoil.get(sentence, json.dumps(sentence not in NOT_ENTAILED))
        return LLMResponse(f'{{"entailed": {value}}}', "scripted-nli", 100, 10)


def run_nli(backend: ScriptedNLI, **args):
    ctx = RunContext("run-nli", "2026-09-10", services=RunServices("test", "", llm=LLMServices(backends={"scripted": backend})))
    system = build_system(SystemSpec("review_nli", {"model": "self/scripted", **args}))
    copies, truths = table()
    outputs = asyncio.run(system.run(items_of(copies), ctx))
    return system, {o.item_id: o for o in outputs}, copies, truths


def test_one_call_per_review_answers_every_sentence():
    backend = ScriptedNLI()
    system, by_id, copies, truths = run_nli(backend)
    assert len(backend.prompts) == 5 and all(o.api_calls == 1 for o in by_id.values())  # 5 reviews of 2 sentences
    assert all(p.count("\n0. ") == 1 and p.count("\n1. ") == 1 for p in backend.prompts)
    # JSON mode asks for the answer's shape: one required boolean per sentence number
    answers = backend.params[0]["response_format"]["json_schema"]["schema"]["properties"]["entailed"]
    assert answers == {"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 2}
    assert backend.params[0]["max_tokens"] == 32
    r1 = ReviewPrediction.from_detail(by_id["R1"].detail["review"])
    assert (by_id["R1"].label, r1.sentence_labels) == ("HALLUCINATED", {0: False, 1: True})
    start = copies[0].sentences[1]
    assert [(s.start, s.end) for s in r1.spans] == [(start.start, start.end)]
    assert [by_id[r].label for r in ("R2", "R3", "R4", "R5")] == ["VALID", "HALLUCINATED", "VALID", "VALID"]
    assert system.parse_stats.attempted == 10 and system.parse_stats.failed == 0
    scores = score_reviews(truths, {c.review_id: c for c in copies}, by_id, n_resamples=20)
    assert scores.value("review_precision") == 1.0 and scores.value("review_recall") == pytest.approx(2 / 3)


def test_a_bad_value_leaves_its_sentence_unanswered_not_the_review():
    # R1: the flagged sentence's value is "maybe" -> R1 s1 unanswered; R1 UNCERTAIN (s0 answered, not flagged)
    # R3: sentence 1 left out of the answer -> R3 s1 unanswered, R3 still HALLUCINATED by s0
    backend = ScriptedNLI(spoil={"It reaches 95.0% accuracy on Cora.": '"maybe"', "Results improve by 2 points.": None})
    system, by_id, copies, truths = run_nli(backend)
    r1, r3 = by_id["R1"], by_id["R3"]
    assert r1.error is None and r1.label == "UNCERTAIN"
    assert r1.detail["unanswered_sentences"] == [1] and r1.detail["parse_failures"] == 1
    assert "sentence 1: value for sentence 1 'maybe' is not true or false" in r1.detail["parse_errors"]
    assert ReviewPrediction.from_detail(r1.detail["review"]).sentence_labels == {0: False}
    assert ReviewPrediction.from_detail(r1.detail["review"]).review_hallucinated is None
    assert r3.error is None and r3.label == "HALLUCINATED" and r3.detail["unanswered_sentences"] == [1]
    assert "sentence 1: no value for sentence 1 (1 values for 2 sentences)" in r3.detail["parse_errors"]
    assert system.parse_stats.failed == 2 and system.parse_stats.attempted == 10
    scores = score_reviews(truths, {c.review_id: c for c in copies}, by_id, n_resamples=20)
    assert scores.coverage["errored"] == {} and scores.coverage["unanswered"]["review"] == 1


def test_an_answer_without_any_value_fails_only_its_review_and_a_cut_answer_keeps_its_values():
    backend = ScriptedNLI(raw={"0. The paper proposes GraphNet": "I cannot tell.",
                               "0. Training takes 3 hours": '{"entailed": [true, fal'})  # cut by max_tokens
    system, by_id, _, _ = run_nli(backend)
    assert by_id["R1"].error_kind == "parse" and by_id["R1"].detail["parse_failures"] == 2
    r2 = by_id["R2"]
    assert r2.error is None and r2.label == "UNCERTAIN" and r2.detail["parse_methods"] == ["salvaged"]
    assert ReviewPrediction.from_detail(r2.detail["review"]).sentence_labels == {0: False}
    assert r2.detail["unanswered_sentences"] == [1]
    assert all(by_id[r].error is None for r in ("R3", "R4", "R5"))


def test_one_sentence_per_call_also_fails_per_sentence():
    backend = ScriptedNLI(spoil={"The authors fine-tune RoBERTa on SQuAD.": '"perhaps"'})
    system, by_id, _, _ = run_nli(backend, sentences_per_call=1)
    assert len(backend.prompts) == 10 and all("Hypothesis (a sentence" in p for p in backend.prompts)
    r3 = by_id["R3"]
    assert r3.error is None and r3.label == "UNCERTAIN" and r3.detail["unanswered_sentences"] == [0]
    assert by_id["R1"].label == "HALLUCINATED" and system.parse_stats.failed == 1


def test_batches_split_a_long_review_and_share_their_evidence():
    backend = ScriptedNLI()
    copies, _ = table()
    long = copies[0].to_payload()
    sentences = [dict(s, index=i) for i, s in enumerate(long["sentences"] * 5)]
    ctx = RunContext("run-nli", "2026-09-10", services=RunServices("test", "", llm=LLMServices(backends={"scripted": backend})))
    system = build_system(SystemSpec("review_nli", {"model": "self/scripted", "sentences_per_call": 4}))
    (out,) = asyncio.run(system.run([Item("L", "review", "t", None, long | {"sentences": sentences})], ctx))
    assert len(backend.prompts) == 3 and out.api_calls == 3  # 10 sentences, 4 per call
    # the paper is one passage: every batch shows it once, not once per sentence
    assert [p.count("[0] We propose GraphNet") for p in backend.prompts] == [1, 1, 1]
    labels = ReviewPrediction.from_detail(out.detail["review"]).sentence_labels
    assert out.label == "HALLUCINATED" and labels == {i: i % 2 == 1 for i in range(10)}
