"""Aspect tags: rule-based by cue words and section headings; the LLM option with its fallback."""

from __future__ import annotations

import asyncio
import json

from corpora.reviews.aspects import ASPECTS, LLMAspectTagger, rule_aspect, rule_aspects
from corpora.reviews.ingest import retag_aspects, review_source
from tests.corpora.reviews.test_review_injection import ScriptedGateway


def test_rule_aspects_by_cues_and_headings():
    texts = ["Summary Of The Paper:", "The paper evaluates BERT on three benchmarks.", "Weaknesses:",
             "The writing is unclear and Figure 2 is confusing.", "The idea is novel.",
             "Code is not released, so results are hard to reproduce.", "Prior work (Lee et al.) is not cited.",
             "Hmm."]  # fmt: skip
    assert rule_aspects(texts) == ["summary", "summary", "other", "clarity", "novelty", "reproducibility",
                                   "related_work", "other"]  # fmt: skip
    assert rule_aspect("Accuracy improves by 3 points over the baseline on two datasets.") == "experiments"
    assert set(rule_aspects(texts)) <= set(ASPECTS)


def test_llm_aspect_tagger_with_fallback_and_retagging():
    answers = iter([json.dumps({"Aspects": ["Clarity"]}), "I think novelty", json.dumps({"Aspects": ["Results"]})])
    gateway = ScriptedGateway(lambda prompt: next(answers))
    tagger = LLMAspectTagger(gateway)
    src = review_source("r", "p", "Strengths:\nThe idea is novel. It is fine. Scores rise.", "", "mem", 1)
    [tagged] = asyncio.run(retag_aspects([src], tagger))
    # the heading is not asked; an unusable answer falls back to the rule tag (novelty) and is counted
    assert [s.aspect for s in tagged.copy.sentences] == ["other", "clarity", "other", "results"]
    assert tagger.stats.asked == 3 and tagger.stats.parse_failures == 1
    assert 'REVIEW SENTENCE: "The idea is novel."' in gateway.prompts[0] and '"related_work"' in gateway.prompts[0]
    assert tagged.copy.review_text == src.copy.review_text
