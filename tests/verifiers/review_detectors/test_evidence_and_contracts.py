"""BM25 evidence from the paper, and the answer contracts of the judge prompts."""

from __future__ import annotations

import asyncio

import pytest

from clients.errors import ParseError
from storage.records import Item
from verifiers.registry import SystemSpec, build_system
from verifiers.review_detectors import prompts
from verifiers.review_detectors.evidence import PaperEvidence, chunk_words, render_evidence
from verifiers.system import RunContext

pytest.importorskip("bm25s")

PAPER = ("We train a graph transformer on Cora and reach 81.2 percent accuracy. " * 2
         + "The appendix lists hyperparameters such as learning rate and dropout. " * 4
         + "Our ablation removes the positional encoding and accuracy drops sharply. " * 2)  # fmt: skip


def test_chunks_are_overlapping_word_windows():
    assert chunk_words("a b c d e f g", 3, 1) == ["a b c", "c d e", "e f g"]
    assert chunk_words("   ", 3, 1) == []


def test_bm25_puts_the_passage_sharing_rare_words_first():
    ev = PaperEvidence(PAPER, chunk_size=12, overlap=2)
    top = ev.top("accuracy on Cora with a graph transformer", 2)
    assert top and "Cora" in top[0].text and top[0].score >= top[-1].score > 0
    assert "positional" in ev.top("ablation of the positional encoding", 1)[0].text


def test_no_evidence_for_an_empty_paper_or_a_query_of_stop_words():
    assert PaperEvidence("").top("anything at all", 3) == []
    assert PaperEvidence(PAPER, chunk_size=12).top("it is the", 3) == []
    assert PaperEvidence(PAPER, chunk_size=12).top("zebra quokka", 3) == []
    assert "no passage" in render_evidence([])


@pytest.mark.parametrize(("style", "answer", "hallucinated"), [
    ("cot", '{"reasoning": "x", "hallucination": true}', True),
    ("contrast", '{"supporting_evidence": "a", "contradicting_evidence": "b", "hallucination": "false"}', False),
    ("kr", "Reasoning...\n#Your Judgement#: No", False),
    ("kr", "#Your Judgement#: No\nOn reflection:\n#Your Judgement#: **Yes**", True),
    ("nli", '{"entailed": false}', True),
    ("nli", '{"entailed": true}', False),
])  # fmt: skip
def test_sentence_answers_that_meet_their_contract(style, answer, hallucinated):
    assert prompts.read_sentence_answer(style, answer).hallucinated is hallucinated


@pytest.mark.parametrize(("style", "answer"), [
    ("cot", '{"reasoning": "x"}'), ("cot", '{"hallucination": "maybe"}'), ("kr", "Yes."), ("nli", ""),
])  # fmt: skip
def test_answers_that_break_their_contract_are_parse_errors(style, answer):
    with pytest.raises(ParseError):
        prompts.read_sentence_answer(style, answer)


def test_type_answers_must_name_an_anchor():
    assert prompts.read_type_answer('{"label": "reasoning error"}') == "Reasoning Error"
    with pytest.raises(ParseError, match="not one of the nine anchors"):
        prompts.read_type_answer('{"label": "Other"}')


def test_prompts_carry_the_evidence_and_the_sentence():
    p = prompts.sentence_prompt("contrast", "[0] EVIDENCE", "THE SENTENCE")
    assert '"""[0] EVIDENCE"""' in p and '"""THE SENTENCE"""' in p and "Contrastive reasoning" in p
    assert "Review statement: THE SENTENCE\n#Answer#: THE SENTENCE" in prompts.sentence_prompt("kr", "E", "THE SENTENCE")
    assert all(name in prompts.type_prompt("E", "S") for name in prompts.ANCHOR_DEFINITIONS)


def test_an_item_that_is_not_a_review_is_an_input_failure():
    item = Item("c1", "citation", "t", None, {"fields": {}})
    (out,) = asyncio.run(build_system(SystemSpec("review_lexical")).run([item], RunContext("r", "2026-09-10")))
    assert out.error_kind == "input" and "not 'review'" in out.error
