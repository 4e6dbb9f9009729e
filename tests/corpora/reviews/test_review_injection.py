"""Seeded injection into reviews: screening, rule injectors, equivalence filter, exact truth spans,
counts, determinism, and the LLM path (scripted gateway; the real gateway on the replay server)."""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass

import pytest

from corpora.reviews.changes import change_span
from corpora.reviews.corpus_builder import BuildConfig, ReviewInjectionBuilder
from corpora.reviews.corpus_io import read_jsonl, write_jsonl
from corpora.reviews.equivalence import EquivalenceVerifier, normalise, rule_equivalent
from corpora.reviews.ingest import review_source
from corpora.reviews.llm_injector import LLMInjector
from corpora.reviews.rule_injectors import (
    entity_candidates,
    number_candidates,
    rule_edit,
    temporal_candidates,
)
from corpora.reviews.screening import LLMFeasibilityCheck, screen_sentence
from corpora.reviews.segmentation import check_offsets
from corpora.reviews.taxonomy import review_taxonomy

PAPER = ("We fine-tune BERT and RoBERTa on GLUE, MNLI and SQuAD. The threshold is 0.2. GLUE GLUE SQuAD SQuAD RoBERTa "
         "RoBERTa. We propose SpAdapt, which beats the LoRA baseline. SpAdapt outperforms LoRA. "
         "The SpAdapt method and the LoRA method.")  # fmt: skip
REVIEW = (
    "Summary:\nThe paper fine-tunes BERT on GLUE and reports 85.4% accuracy. "
    "The authors use 3 datasets and a threshold of 0.5. "
    "Recent work already outperforms this method, because it is simple. "
    "The writing is clear. "
    "SpAdapt outperforms LoRA on all tasks."
)


def _sources(n=3):
    return [review_source(f"p{k}:r1", f"p{k}", REVIEW, PAPER, "mem", k) for k in range(n)]


# ---------------------------------------------------------------- rules
def test_number_candidates_skip_names_references_and_markers():
    s = "1. GPT-4 and T5 in Table 3 (Sec. 4.2): accuracy 85.4% vs 1,000 samples, p < 0.05, lr = 0.001, 1) x 2) y, in 2019."
    found = {s[c.start : c.end]: c.leaf for c in number_candidates(s)}
    assert found == {"85.4": "Reported Score Mismatch", "1,000": "Count Mismatch", "0.05": "P-Value Mismatch",
                     "0.001": "Scale Parameter Error", "2019": "Event Year Fabrication"}  # fmt: skip
    s2 = "As shown by Lee et al. (2021), three runs."
    assert {s2[c.start : c.end]: c.leaf for c in number_candidates(s2)} == {
        "2021": "Citation Year Substitution", "three": "Count Mismatch"}  # fmt: skip


def test_rule_edits_keep_format_and_change_value():
    rng = random.Random(3)
    s = "Accuracy rises from 85.4% to 92.1% with 1,000 samples and three seeds."
    for c in number_candidates(s):
        edit = rule_edit("number", s, c, rng)
        old, new = s[c.start : c.end], edit.replacement
        assert new != old
        assert ("." in new) == ("." in old) and ("," in new) == ("," in old)
        if old.endswith(".4") or old.endswith(".1"):
            assert len(new.split(".")[1]) == 1 and float(new) < 100
    t = "Recent methods fail in 2020, unlike this one."
    assert [(t[c.start : c.end], c.leaf) for c in temporal_candidates(t)] == [
        ("Recent", "Recency Misstatement"), ("2020", "Date Shift")]  # fmt: skip
    assert rule_edit("temporal", t, temporal_candidates(t)[0], rng).replacement == "Early"
    # a modal verb only where no time reference exists, and only one reported from the paper: the
    # reviewer's own speculation ("the method might fail") says nothing about the paper
    m = "The authors state that the method might fail, and it would help to add runs."
    assert [(m[c.start : c.end], c.leaf) for c in temporal_candidates(m)] == [("might", "Modality Shift")]
    assert temporal_candidates("The method might fail, and it would help to add runs.") == []
    assert temporal_candidates("Recent methods might fail, unlike this one.")[0].kind == "recency"
    assert len(temporal_candidates("Recent methods might fail, unlike this one.")) == 1
    # a time reference to other work only where the paper is set against it
    assert temporal_candidates("The authors ground the work in prior literature.") == []
    e = "We compare BERT with SpAdapt on GLUE in terms of accuracy."
    cands = entity_candidates(e, PAPER)
    assert [(e[c.start : c.end], c.kind) for c in cands] == [
        ("BERT", "encoder_model"), ("SpAdapt", "paper_method"), ("GLUE", "nlu_dataset"), ("accuracy", "classification_metric")]  # fmt: skip
    # a swap puts in a name of the same class that neither the paper nor the sentence writes (the paper
    # fine-tunes RoBERTa on MNLI too: "RoBERTa" or "MNLI" in BERT's or GLUE's place could be true of it)
    news = {rule_edit("entity", e, cands[0], random.Random(seed), PAPER).replacement for seed in range(30)}
    assert news and news.isdisjoint({"BERT", "RoBERTa"}) and news <= {"ALBERT", "DistilBERT", "DeBERTa", "ELECTRA", "XLNet"}
    news = {rule_edit("entity", e, cands[2], random.Random(seed), PAPER).replacement for seed in range(30)}
    assert news == {"SuperGLUE", "SNLI", "MMLU"}  # of the same task, never named by the paper nor part of GLUE
    assert rule_edit("entity", e, cands[1], rng, PAPER).replacement == "LoRA"  # the paper's own method for its method
    # metric names: a lower-case one may be capitalised, an acronym must match exactly ("map" is a verb)
    assert [c.kind for c in entity_candidates("Accuracy and mAP differ by 2 points.")] == [
        "classification_metric", "vision_metric"]  # fmt: skip
    # a lower-case metric word where nothing is measured is a common noun, not an entity
    assert entity_candidates("The trade-off between interpretability and accuracy is discussed.") == []
    assert entity_candidates("LLMs learn to map words to concepts on a GPU.", "GPU GPU GPU AND AND AND") == []


def test_change_span_is_token_aligned():
    cases = [("Acc is 85.4% here.", "Acc is 85.7% here.", "85.4", "85.7"),
             ("We use 1,000 samples.", "We use 1,478 samples.", "1,000", "1,478"),
             ("It does not work.", "It does work.", "not work", "work"),
             ("GPT-4 is used.", "PaLM is used.", "GPT-4", "PaLM")]  # fmt: skip
    for a, b, old, new in cases:
        os_, oe, ns, ne = change_span(a, b)
        assert (a[os_:oe], b[ns:ne]) == (old, new)
    assert change_span("same", "same") == (0, 0, 0, 0)


def test_rule_equivalence():
    assert rule_equivalent("The gain is 0.50 points.", "the gain is 0.5 points")
    assert rule_equivalent("They use five datasets and 1,000 samples.", "They use 5 datasets and 1000 samples.")
    assert rule_equivalent("It reaches 90 %.", "It reaches 90%.")
    assert not rule_equivalent("It reaches 90%.", "It reaches 91%.")
    assert not rule_equivalent("It might work.", "It will work.")
    assert normalise("“Quoted” — text.") == '"quoted" - text'


def test_screening_follows_prerequisites_and_aspects():
    tx = review_taxonomy()
    assert screen_sentence("Summary:", "summary", tx) == ()
    got = screen_sentence("The authors report 85.4% accuracy on GLUE, because BERT is strong.", "results", tx, PAPER)
    assert {"Number", "Entity", "Attribution Failure", "Reasoning Error", "Hyperbole"} <= set(got)
    assert "Temporal" not in got
    # §4.1: no Number (or Hyperbole) edits in a clarity sentence
    clear = screen_sentence("Figure 3 with 5 panels is clear and well written.", "clarity", tx)
    assert "Number" not in clear and "Hyperbole" not in clear
    assert "Number" in screen_sentence("Figure 3 with 5 panels is clear and well written.", "experiments", tx)


# ---------------------------------------------------------------- builder (rules only)
def _build(seed, copies=2, sources=None, **kw):
    # builder mechanics on a paper that does not state the review's values: grounding off here
    # (grounding itself: test_injection_grounding.py)
    kw.setdefault("require_grounding", False)
    builder = ReviewInjectionBuilder(config=BuildConfig(seed=seed, injected_copies=copies, injections_per_copy=(1, 3), **kw))
    return builder, builder.build(sources or _sources())


def test_builder_truth_spans_labels_and_counts():
    builder, corpus = _build(seed=7)
    assert corpus.unavailable_anchors == ("False Concatenation", "Attribution Failure", "Overgeneralization",
                                          "Reasoning Error", "Hyperbole", "Context-based Meaning Error")  # fmt: skip
    ids = [c.review_id for c in corpus.copies]
    assert ids[:3] == ["p0:r1#clean", "p0:r1#inj1", "p0:r1#inj2"] and len(ids) == 9
    truths = {t.review_id: t for t in corpus.truths}
    base = _sources(1)[0].copy
    for copy in corpus.copies:
        truth = truths[copy.review_id]
        check_offsets(copy.review_text, copy.sentences)
        assert len(copy.sentences) == len(base.sentences)
        assert set(truth.sentence_labels) == set(range(len(base.sentences)))
        if copy.review_id.endswith("#clean"):
            assert copy.review_text == base.review_text and not truth.hallucinated and not any(truth.sentence_labels.values())
            continue
        assert truth.hallucinated and 1 <= len(truth.injections) <= 3
        assert {i.sentence_index for i in truth.injections} == {k for k, v in truth.sentence_labels.items() if v}
        for inj in truth.injections:
            assert copy.review_text[inj.start : inj.end] == inj.injected != inj.original
            sentence = copy.sentences[inj.sentence_index]
            assert sentence.start <= inj.start < inj.end <= sentence.end
            assert truth.sentence_types[inj.sentence_index] == inj.anchor
            assert inj.anchor in ("Number", "Entity", "Temporal") and inj.injector == f"rule:{inj.anchor.lower()}"
            assert review_taxonomy().path_of(inj.anchor, inj.leaf)[-1] == inj.leaf
            # the untouched rest of the review is the original text
            before = base.sentences[inj.sentence_index]
            assert before.text.replace(inj.original, inj.injected, 1) == sentence.text or inj.original in before.text
    counts = corpus.counts.as_dict()["total"]
    kept = sum(len(t.injections) for t in corpus.truths)
    assert counts["kept"] == kept
    assert counts["attempts"] == counts["kept"] + counts["equivalent"] + counts["parse_failures"] + counts["rejected"]
    assert counts["screened"] > 0 and counts["parse_failures"] == counts["rejected"] == 0


def test_builder_is_deterministic_for_a_seed(tmp_path):
    _, a = _build(seed=11)
    _, b = _build(seed=11, concurrency=1)  # concurrency does not change the result
    _, c = _build(seed=12)
    write_jsonl(a.copies, a.truths, tmp_path / "a_items.jsonl", tmp_path / "a_truth.jsonl", "x")
    write_jsonl(b.copies, b.truths, tmp_path / "b_items.jsonl", tmp_path / "b_truth.jsonl", "x")
    write_jsonl(c.copies, c.truths, tmp_path / "c_items.jsonl", tmp_path / "c_truth.jsonl", "x")
    assert (tmp_path / "a_items.jsonl").read_bytes() == (tmp_path / "b_items.jsonl").read_bytes()
    assert (tmp_path / "a_truth.jsonl").read_bytes() == (tmp_path / "b_truth.jsonl").read_bytes()
    assert (tmp_path / "a_truth.jsonl").read_bytes() != (tmp_path / "c_truth.jsonl").read_bytes()
    assert a.version == b.version != c.version
    copies, truths, errors = read_jsonl(tmp_path / "a_items.jsonl", tmp_path / "a_truth.jsonl")
    assert errors == [] and copies == a.copies and [truths[x.review_id] for x in copies] == a.truths


def test_anchor_restriction_and_a_review_with_nothing_to_inject():
    _, corpus = _build(seed=1, anchors=("Temporal",))
    assert {i.anchor for t in corpus.truths for i in t.injections} == {"Temporal"}
    dull = [review_source("q:r1", "q", "Nice. Good job overall here. The writing is clear.", "", "mem", 1)]
    _, empty = _build(seed=1, sources=dull)
    assert [c.review_id for c in empty.copies] == ["q:r1#clean"]
    assert [s["review_id"] for s in empty.skipped] == ["q:r1#inj1", "q:r1#inj2"]
    assert "no sentence passed screening" in empty.skipped[0]["reason"]


# ---------------------------------------------------------------- LLM path, scripted gateway
@dataclass
class _Answer:
    text: str | None


class ScriptedGateway:
    """Answers by the anchor/leaf named in the prompt (the prompt is the contract under test)."""

    def __init__(self, script):
        self.script = script
        self.prompts: list[str] = []

    async def complete(self, messages, params=None):
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        return _Answer(self.script(prompt))


def _sentence_of(prompt: str) -> str:
    return prompt.split("Injection_Sentence: ", 1)[1].split("\n", 1)[0]


def _script(prompt: str) -> str:
    if "compatibility checker" in prompt:
        return "false" if "Overgeneralization" in prompt else "true"
    sentence = _sentence_of(prompt)
    if "HALLUCINATION TYPE\nHyperbole" in prompt:
        return json.dumps({"sentence": sentence.replace("outperforms", "vastly outperforms")})
    if "HALLUCINATION TYPE\nReasoning Error" in prompt:
        return "I would change the cause."  # not the JSON contract
    if "HALLUCINATION TYPE\nAttribution Failure" in prompt:
        return json.dumps({"sentence": sentence.replace("The authors", "the Authors")})  # a no-op edit
    if "HALLUCINATION TYPE\nContext-based Meaning Error" in prompt:
        return json.dumps({"sentence": "Totally different words that share nothing with the original one."})
    return json.dumps({"sentence": sentence.replace("the", "thе", 1)})  # a homoglyph: not equivalent


def test_llm_path_counts_parse_failures_equivalents_rejections_and_infeasible():
    gateway = ScriptedGateway(_script)
    config = BuildConfig(seed=5, injected_copies=6, injections_per_copy=(2, 3), prefer_rules=True,
                         anchors=("Hyperbole", "Reasoning Error", "Attribution Failure", "Overgeneralization",
                                  "Context-based Meaning Error"))  # fmt: skip
    builder = ReviewInjectionBuilder(config=config, llm_injector=LLMInjector(gateway),
                                     feasibility=LLMFeasibilityCheck(gateway))  # fmt: skip
    corpus = builder.build(_sources(2))
    per = corpus.counts.as_dict()["per_anchor"]
    assert per["Overgeneralization"]["infeasible"] > 0 and per["Overgeneralization"]["kept"] == 0
    assert per["Reasoning Error"]["parse_failures"] == per["Reasoning Error"]["attempts"] > 0
    assert per["Attribution Failure"]["equivalent"] == per["Attribution Failure"]["attempts"] > 0
    assert per["Context-based Meaning Error"]["rejected"] == per["Context-based Meaning Error"]["attempts"] > 0
    assert per["Hyperbole"]["kept"] > 0
    kept = [i for t in corpus.truths for i in t.injections]
    assert {i.anchor for i in kept} == {"Hyperbole"}
    assert all(i.injector == "llm" and i.injected == "vastly outperforms" and i.original == "outperforms" for i in kept)
    assert all(i.leaf in {n.name for n in review_taxonomy().leaves("Hyperbole")} for i in kept)
    assert builder.llm.stats.parse_failures == per["Reasoning Error"]["parse_failures"]
    # Hyperbole on a sentence without "outperforms" returns it unchanged: discarded as equivalent too
    assert builder.verifier.stats.rule_equivalent == corpus.counts.total("equivalent") > per["Attribution Failure"]["equivalent"]
    # the injection prompt carries the anchor definition and the leaf's instruction
    prompt = next(p for p in gateway.prompts if "HALLUCINATION TYPE\nHyperbole" in p)
    assert "exaggerated or overstated" in prompt and "Hallucination_Instruction: The review text" in prompt


def test_llm_equivalence_judge():
    answers = iter(["1", "0", "maybe"])
    verifier = EquivalenceVerifier(ScriptedGateway(lambda p: next(answers)))

    async def run():
        return [await verifier.equivalent("A is good.", f"A is fine{k}.") for k in range(3)]

    assert asyncio.run(run()) == [True, False, False]
    assert verifier.stats.judge_equivalent == 1 and verifier.stats.judge_parse_failures == 1


# ---------------------------------------------------------------- the real gateway on the replay server
@pytest.mark.timeout(120)
@pytest.mark.integration
def test_llm_injector_through_the_gateway_and_replay_server(tmp_path):
    from clients.llm_gateway import LLMGateway, LLMServices
    from clients.retry import RetryPolicy
    from tests.helpers.replay_server import replay_server, server_stats

    sentence = "SpAdapt outperforms LoRA on all tasks."
    rules = [{"match": {"contains": "HALLUCINATION TYPE\nHyperbole"},
              "response": {"text": json.dumps({"sentence": "SpAdapt dramatically outperforms LoRA on all tasks."})}},
             {"match": {"contains": "HALLUCINATION TYPE"}, "response": {"text": "not json"}}]  # fmt: skip
    source = review_source("r:1", "r", sentence + " The method, because it is sparse, is fast.", PAPER, "mem", 1)
    with replay_server(recordings=rules, tmp=tmp_path) as url:
        gateway = LLMGateway("openai/test-model", LLMServices(retry=RetryPolicy(max_attempts=2, base_wait=0.01)),
                             api_base=f"{url}/v1")  # fmt: skip
        config = BuildConfig(seed=0, injected_copies=3, injections_per_copy=(1, 1), anchors=("Hyperbole", "Reasoning Error"))
        corpus = ReviewInjectionBuilder(config=config, llm_injector=LLMInjector(gateway, {"seed": 0})).build([source])
        served = server_stats(url)
    counts = corpus.counts.as_dict()
    kept = [i for t in corpus.truths for i in t.injections]
    assert kept and all(i.injected == "dramatically outperforms" and i.original == "outperforms" for i in kept)
    assert counts["total"]["attempts"] == served["ok"] == served["requests"]  # one request per LLM attempt
    assert counts["total"]["parse_failures"] == counts["per_anchor"].get("Reasoning Error", {}).get("parse_failures", 0)


def test_rule_anchors_go_to_the_llm_when_rules_are_not_preferred():
    gateway = ScriptedGateway(lambda p: json.dumps({"sentence": _sentence_of(p).replace("3", "4")}))
    config = BuildConfig(seed=2, injected_copies=2, injections_per_copy=(1, 1), anchors=("Number",), prefer_rules=False,
                         require_grounding=False)  # the fixture paper does not state the review's numbers
    corpus = ReviewInjectionBuilder(config=config, llm_injector=LLMInjector(gateway)).build(_sources(1))
    kept = [i for t in corpus.truths for i in t.injections]
    assert kept and all(i.injector == "llm" and (i.original, i.injected) == ("3", "4") for i in kept)
    assert all("HALLUCINATION TYPE\nNumber >" in p for p in gateway.prompts)


def test_a_large_float_beside_small_numbers_is_no_overflow():
    """"10.2M parameters" beside depths 20 and 40: 2 ** 10.2e6 overflowed a float and stopped a whole build
    of 152 real reviews (held-out batch 15)."""
    from corpora.reviews.rule_injectors import arithmetic_tied

    assert not arithmetic_tied(10.2e6, [20.0, 40.0]) and arithmetic_tied(16.0, [4.0])
    s = "It scales to a depth of 1202 with 10.2M parameters, fewer than at depths of 20 and 40."
    assert [s[c.start : c.end] for c in number_candidates(s)] == ["1202", "20", "40"]  # raised before


def test_a_rule_raising_on_one_review_costs_that_review_only(monkeypatch):
    import corpora.reviews.corpus_builder as builder_module

    real = builder_module.screen_sentence

    def screen(text, *args, **kw):
        if "POISON" in text:
            raise OverflowError("Numerical result out of range")
        return real(text, *args, **kw)

    monkeypatch.setattr(builder_module, "screen_sentence", screen)
    sources = _sources(2) + [review_source("bad:r1", "bad", "POISON 3 sentences here. " + REVIEW, PAPER, "reviews.jsonl", 7)]
    _, corpus = _build(seed=7, sources=sources)
    assert {c.review_id for c in corpus.copies if c.paper_id == "bad"} == {"bad:r1#clean"}  # its clean copy stays
    assert sum(t.hallucinated for t in corpus.truths if t.paper_id != "bad") >= 2  # the others are injected
    failed = [s for s in corpus.skipped if s["review_id"].startswith("bad:")]
    assert [s["review_id"] for s in failed] == ["bad:r1#inj1", "bad:r1#inj2"]
    assert failed[0]["reason"] == "injection failed (reviews.jsonl:7): OverflowError: Numerical result out of range"


def test_the_build_job_reports_a_review_lost_to_a_rule_error(monkeypatch, tmp_path, capsys):
    """The same through `jobs/build_review_corpus.py`: the other reviews built, the lost copies named
    on stderr and in report.json."""
    import corpora.reviews.corpus_builder as builder_module
    from jobs.build_review_corpus import main as build_corpus

    real = builder_module.screen_sentence
    monkeypatch.setattr(builder_module, "screen_sentence", lambda text, *a, **kw: (
        (_ for _ in ()).throw(OverflowError("out of range")) if "POISON" in text else real(text, *a, **kw)))
    rows = [{"paper_id": "good", "paper_text": PAPER, "review_text": REVIEW},
            {"paper_id": "bad", "paper_text": PAPER, "review_text": "POISON here. " + REVIEW}]
    reviews = tmp_path / "reviews.jsonl"
    reviews.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert build_corpus([str(reviews), "--seed", "0", "--copies", "1", "--out", str(tmp_path / "built")]) == 0
    out, err = capsys.readouterr()
    assert "2 reviews -> " in out  # both kept: the lost one as its clean copy
    assert "1 injected copies lost to an error" in err and "OverflowError: out of range" in err
    report = json.loads((tmp_path / "built" / "report.json").read_text())
    assert [s for s in report["skipped"] if s.get("error")][0]["reason"].startswith(f"injection failed ({reviews}:2)")
