"""HalluPeer's Task 2 oracle setting (fig. 20 of every sentence), Task 3's label-conditioned
localisation (fig. 21), the general-purpose prompt (fig. 19) and the LCS / full-paper evidence,
through the judge with a scripted in-process gateway (no server): answers chosen by hand, metric
values computed by hand."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from clients.errors import ParseError
from clients.llm_request import LLMResponse
from corpora.reviews.records import ANCHORS, ReviewPrediction
from scoring.reviews import score_reviews
from tests.verifiers.review_detectors.review_table import PAPERS, items_of, table
from verifiers.review_detectors import prompts
from verifiers.review_detectors.evidence import PaperEvidence
from verifiers.review_detectors.llm_judge import ReviewJudge

pytest.importorskip("bm25s")

FLAGGED = {"It reaches 95.0% accuracy on Cora.", "The writing could be clearer.", "Results improve on every benchmark."}
# the type the judge gives a sentence told it is hallucinated (fig. 20); R4's is wrong on purpose
TYPES = {"It reaches 95.0% accuracy on Cora.": "Number", "The authors fine-tune RoBERTa on SQuAD.": "Entity",
         "Results improve on every benchmark.": "Hyperbole"}  # fmt: skip
# fig. 21: the sentence returned when asked for a type (others: none)
LOCALISED = {"Number": "It reaches 95.0% accuracy on Cora.", "Entity": "the authors fine-tune roberta on squad.",
             "Overgeneralization": "The method is simple."}  # fmt: skip


class ScriptedGateway:
    """Answers each prompt by what it asks; records the prompts."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def complete(self, messages, params) -> LLMResponse:
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        if "TARGET HALLUCINATION LABEL" in prompt:
            anchor = re.search(r'concept: "([^"]+)"', prompt).group(1)
            said = LOCALISED.get(anchor)
            listed = prompt.split("### REVIEW SENTENCES")[1]
            return self._answer({"result": [said] if said and said.lower() in listed.lower() else []})
        sentence = re.findall(r'### REVIEW SENTENCE\n"""(.*?)"""', prompt, re.S)[-1]
        if "ALREADY been judged as hallucinated" in prompt:
            return self._answer({"label": TYPES.get(sentence, "Temporal")})
        return self._answer({"reasoning": "r", "hallucination": sentence in FLAGGED})

    @staticmethod
    def _answer(data: dict) -> LLMResponse:
        return LLMResponse(json.dumps(data), "scripted", tokens_in=10, tokens_out=5)


def run_judge(copies, **args):
    judge = ReviewJudge("scripted", prompt_style="cot", **args)
    gateway = ScriptedGateway()
    outputs = [asyncio.run(judge.judge(item, gateway)) for item in items_of(copies)]
    return outputs, gateway


def test_oracle_typing_asks_every_sentence_and_scores_apart_from_end_to_end():
    """Gold typed sentences: R1 s1 Number (flagged, typed Number), R3 s0 Entity (not flagged; typed
    Entity when told), R4 s0 Overgeneralization (flagged, typed Hyperbole).
    End to end: TP 1, FP 1 (Hyperbole), FN 2 -> micro 2/5; per label Number 1, Entity 0,
    Overgeneralization 0, Hyperbole 0 -> macro 1/4 (gold or predicted), 1/3 (gold labels).
    Oracle: TP 2, FP 1, FN 1 -> micro 2/3; Number 1, Entity 1, Overgen. 0, Hyperbole 0 -> macro
    1/2, over gold labels 2/3."""
    copies, truths = table()
    copies, truths = copies[:4], truths[:4]
    outputs, gateway = run_judge(copies, oracle_types=True)
    assert len(gateway.prompts) == 2 * 8  # detection and type for each of the 8 sentences
    r3 = ReviewPrediction.from_detail(outputs[2].detail["review"])
    assert r3.oracle_types == {0: "Entity", 1: "Temporal"} and r3.sentence_types == {}
    r4 = ReviewPrediction.from_detail(outputs[3].detail["review"])
    assert r4.sentence_types == {0: "Hyperbole"}  # the flagged sentence's type is the oracle answer
    s = score_reviews(truths, {c.review_id: c for c in copies}, {o.item_id: o for o in outputs}, n_resamples=50)
    assert s.value("type_micro_f1") == pytest.approx(2 / 5) and s.value("type_macro_f1") == pytest.approx(1 / 4)
    assert s.value("type_macro_f1_gold") == pytest.approx(1 / 3)
    assert s.value("type_oracle_micro_f1") == pytest.approx(2 / 3)
    assert s.value("type_oracle_macro_f1") == pytest.approx(1 / 2)
    assert s.value("type_oracle_macro_f1_gold") == pytest.approx(2 / 3)
    # without oracle typing the oracle figure is undefined, the end-to-end one unchanged
    plain, gateway = run_judge(copies, classify_types=True)
    assert len(gateway.prompts) == 8 + 3  # a type call per flagged sentence only
    s = score_reviews(truths, {c.review_id: c for c in copies}, {o.item_id: o for o in plain}, n_resamples=50)
    assert s.value("type_oracle_micro_f1") is None and s.value("type_micro_f1") == pytest.approx(2 / 5)


def test_label_conditioned_localisation_asks_each_type_and_marks_the_returned_sentence():
    """Nine fig. 21 calls a review. R1 (gold Number "95.0%") gets its sentence 1 for Number; R3
    (gold Entity "RoBERTa") gets sentence 0, returned in lower case; R4 (gold Overgeneralization
    "every benchmark") gets sentence 1 ("The method is simple.", wrong). Span matches within each
    gold type: exact 0 of 3+3; overlap 2: 2*2/6. Tokens: gold "95 . 0 %" 4, "RoBERTa" 1, "every
    benchmark" 2; R1 marks 10 tokens (TP 4), R3 9 ("fine - tune": TP 1), R4 5 (TP 0):
    TP 5, FP 19, FN 2 -> 10/31."""
    copies, truths = table()
    copies, truths = copies[:4], truths[:4]
    outputs, gateway = run_judge(copies, localise_by_label=True)
    assert len(gateway.prompts) == 8 + 9 * 4
    r1 = ReviewPrediction.from_detail(outputs[0].detail["review"])
    s1 = copies[0].sentences[1]
    assert [(sp.start, sp.end) for sp in r1.label_spans["Number"]] == [(s1.start, s1.end)]
    assert set(r1.label_spans) == set(ANCHORS) and r1.label_spans["Hyperbole"] == ()
    s = score_reviews(truths, {c.review_id: c for c in copies}, {o.item_id: o for o in outputs}, n_resamples=50)
    assert s.value("lc_exact_span_f1") == 0.0
    assert s.value("lc_overlap_span_f1") == pytest.approx(4 / 6)
    assert s.value("lc_token_f1") == pytest.approx(10 / 31)


def test_a_localisation_answer_naming_no_sentence_is_a_parse_error():
    sentences = ["It reaches 95.0% accuracy on Cora.", "The method is simple."]
    assert prompts.read_localise_answer('{"result": []}', sentences) is None
    assert prompts.read_localise_answer('{"result": ["the  method is simple."]}', sentences) == 1
    assert prompts.read_localise_answer('{"result": ["95.0% accuracy"]}', sentences) == 0  # part of a sentence
    for bad in ('{"result": ["Something else."]}', '{"result": ["a", "b"]}', '{"result": "x"}', "no json"):
        with pytest.raises(ParseError):
            prompts.read_localise_answer(bad, sentences)
    p = prompts.localise_prompt("Number", "EVIDENCE", sentences)
    assert 'concept: "Number"' in p and "The method is simple." in p and '{"result": [] }' in p


def test_general_prompt_is_figure_19_without_reasoning_steps():
    p = prompts.sentence_prompt("general", "EV", "THE SENTENCE")
    assert '{"hallucination": <true or false> }' in p and "Reasoning steps" not in p and "Contrastive" not in p
    assert prompts.read_sentence_answer("general", '{"hallucination": true}').hallucinated is True


def test_lcs_evidence_is_the_chunk_with_the_longest_common_word_subsequence():
    paper = ("alpha beta gamma delta epsilon. " * 1 + "zeta eta theta iota kappa. "
             + "the model reaches accuracy on cora with graphnet. ")  # fmt: skip
    ev = PaperEvidence(paper, chunk_size=5, overlap=0)
    (best,) = ev.lcs_top("GraphNet reaches 95% accuracy on Cora")
    assert best.text == "the model reaches accuracy on"
    assert best.score == 3  # reaches, accuracy, on / cora ... in order: longest common subsequence
    assert ev.lcs_top("nothing shared here") == []


def test_full_paper_evidence_is_the_whole_text_and_the_judge_shows_it():
    copies, _ = table()
    outputs, gateway = run_judge(copies[:1], evidence="full_paper")
    assert all(PAPERS["P1"] in p for p in gateway.prompts)
    assert outputs[0].detail["evidence"] == "full_paper"
    long = PaperEvidence("word " * 100_000)
    (chunk,) = long.full_paper(max_chars=1000)
    assert len(chunk.text) < 1100 and chunk.text.endswith("[... paper cut at 1000 characters]")
    lcs_outputs, gateway = run_judge(copies[:1], evidence="lcs")
    assert lcs_outputs[0].error is None and len(gateway.prompts) == 2
    with pytest.raises(ValueError, match="evidence must be one of"):
        ReviewJudge("m", evidence="oracle")  # type: ignore[arg-type]
