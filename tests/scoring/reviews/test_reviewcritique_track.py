"""The ReviewCritique track on the real data (evaluation only), loaded by the corpus ingest
(corpora/reviews/ingest.py): segment counts as its README states them, and an everything-is-deficient
detector (through `review_import`) scored per reviewer/type."""

from __future__ import annotations

import asyncio
import json

import pytest

from corpora.reviews.ingest import load_reviewcritique
from scoring.reviews import score_segments
from storage.records import Item
from tests.helpers.paths import SHARED_DATA
from verifiers.registry import SystemSpec, build_system
from verifiers.system import RunContext

DATA = SHARED_DATA / "hallupeer" / "reviewcritique" / "ReviewCritique_LLM.jsonl"


@pytest.mark.requires_shared_data
def test_flag_everything_detector_scores_the_base_rates_per_reviewer_and_type(tmp_path):
    loaded = load_reviewcritique(DATA)
    assert loaded.errors == []
    copies, truths = [r.copy for r in loaded.reviews], [r.truth for r in loaded.reviews]
    reviewer_of = {r.copy.review_id: r.reviewer for r in loaded.reviews}
    items = [Item(c.review_id, "review", "reviewcritique_llm", None, c.to_payload()) for c in copies]
    assert len(copies) == 60 and sum(len(c.sentences) for c in copies) == 1610
    assert sum(sum(t.sentence_labels.values()) for t in truths) == 226
    path = tmp_path / "all.jsonl"
    path.write_text("".join(json.dumps({"review_id": c.review_id, "sentence_labels": list(range(len(c.sentences)))}) + "\n"
                            for c in copies))  # fmt: skip
    system = build_system(SystemSpec("review_import", {"path": str(path)}))
    outputs = asyncio.run(system.run(items, RunContext("rc", "2026-09-10")))
    s = score_segments(truths, {c.review_id: c for c in copies}, {o.item_id: o for o in outputs}, reviewer_of,
                       n_resamples=200)  # fmt: skip
    assert s.value("segment_recall") == 1.0 and s.value("segment_precision") == pytest.approx(226 / 1610)
    assert s.value("segment_mcc") is None  # no predicted negatives: undefined, not 0
    for reviewer, (n, bad) in {"claude_opus": (621, 82), "gpt4": (457, 67), "gemini_pro_1.5": (532, 77)}.items():
        assert s.get("segment_precision", f"reviewer={reviewer}").n == n
        assert s.value("segment_precision", f"reviewer={reviewer}") == pytest.approx(bad / n)
    # a type's stratum: its deficient segments (65 + 3 spelled "out-of-scope") and the 1,384 sound ones
    assert s.get("segment_recall", "error_type=Out-of-scope").n == 68 + 1384
    assert s.value("segment_precision", "error_type=Neglect") == pytest.approx(14 / (14 + 1384))
    lo, hi = s.get("segment_precision").ci_low, s.get("segment_precision").ci_high
    assert lo < 226 / 1610 < hi  # paper-level interval around the base rate
