"""AUDIT INVALID for the review audit: `review_null` must score nothing, and `review_flag_all` must
not reach a detector's figure within its interval (scoring/reviews/validity.py)."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from scoring.reviews.validity import review_invalid_reasons
from tests.helpers.paths import REPO_ROOT

CONTROLS = {"null": "null", "all": "flag_all"}


def _row(system: str, metric: str, value: float, ci_low: float = math.nan, stratum: str = "all") -> dict:
    return {"system": system, "metric": metric, "stratum": stratum, "value": value, "ci_low": ci_low, "n": 40}


def test_flag_all_reaching_the_interval_beating_the_value_or_staying_below():
    rows = [_row("all", "sentence_f1", 0.30), _row("all", "token_f1", 0.10), _row("all", "review_recall", 1.0),
            _row("det", "sentence_f1", 0.50, ci_low=0.25),  # 0.30 is inside its interval: reaches
            _row("det", "token_f1", 0.05, ci_low=0.01),  # 0.10 above its value: beats
            _row("det", "review_recall", 0.5, ci_low=0.3),  # recall is not checked: flagging everything has it all
            _row("null", "sentence_f1", 0.0), _row("null", "token_f1", 0.0)]
    reasons = review_invalid_reasons(rows, CONTROLS, track="injected")
    assert len(reasons) == 2
    assert "reaches detector det's sentence_f1 0.500 [95% CI low 0.250]" in reasons[0]
    assert "(token_f1 0.100, n = 40) beats detector det's token_f1 0.050" in reasons[1]
    clear = [r | {"ci_low": 0.35} if r["system"] == "det" and r["metric"] == "sentence_f1" else r for r in rows
             if r["metric"] != "token_f1"]
    assert review_invalid_reasons(clear, CONTROLS, track="injected") == []
    # without an interval the detector's value is the bar
    assert review_invalid_reasons([_row("all", "sentence_f1", 0.3), _row("det", "sentence_f1", 0.3)], CONTROLS,
                                  track="injected")  # fmt: skip
    assert review_invalid_reasons([_row("all", "sentence_f1", 0.3), _row("det", "sentence_f1", 0.31)], CONTROLS,
                                  track="injected") == []  # fmt: skip


def test_null_scoring_anything_invalidates_every_figure_and_nan_is_not_a_score():
    rows = [_row("null", "sentence_f1", 0.2), _row("null", "sentence_precision", math.nan), _row("det", "sentence_f1", 0.9)]
    reasons = review_invalid_reasons(rows, {"null": "null"}, track="injected", system="det")
    assert reasons == ["AUDIT INVALID: the null control null (flags nothing) scores above zero on sentence_f1 "
                       "(injected track): the scoring awards detections to nothing."]  # fmt: skip
    assert review_invalid_reasons([_row("null", "sentence_precision", math.nan)], {"null": "null"}, track="injected") == []


def test_the_natural_track_checks_segment_precision_and_f1_only():
    rows = [_row("all", "segment_precision", 0.2), _row("all", "segment_recall", 1.0), _row("all", "segment_f1", 0.33),
            _row("det", "segment_precision", 0.4, 0.25), _row("det", "segment_recall", 0.1, 0.05),
            _row("det", "segment_f1", 0.16, 0.1)]
    reasons = review_invalid_reasons(rows, CONTROLS, track="natural")
    assert len(reasons) == 1 and "beats detector det's segment_f1 0.160" in reasons[0] and "natural track" in reasons[0]


def test_the_bundled_sample_says_its_type_figures_are_no_better_than_calling_everything_number():
    """The sample config's corpus and its three systems, in process: review_lexical's detection figures stand,
    its Task 2 figures equal review_flag_all's (3 injections, both type every flagged sentence Number)."""
    from audits import get_audit
    from cluster.run_config import load_config
    from corpora.reviews.corpus_io import truth_from_dict
    from corpora.reviews.records import ReviewCopy
    from scoring.reviews import score_reviews
    from storage.records import Item
    from verifiers.registry import SystemSpec, build_system
    from verifiers.system import RunContext

    corpus = get_audit("reviews").build_corpus(load_config(REPO_ROOT / "configs" / "review_audit.toml"), None)
    items = [Item.from_row(r) for r in corpus.items.to_pylist()]
    truths = [truth_from_dict(json.loads(e)) for e in corpus.truth.column("extra_json").to_pylist()]
    copies = {i.item_id: ReviewCopy.from_payload(i.payload) for i in items}
    rows = []
    for name in ("review_lexical", "review_null", "review_flag_all"):
        outputs = asyncio.run(build_system(SystemSpec(name)).run(items, RunContext("r", "2026-12-01")))
        rows += score_reviews(truths, copies, {o.item_id: o for o in outputs}, n_resamples=200).rows("r", name)
    controls = {"review_null": "null", "review_flag_all": "flag_all"}
    reasons = review_invalid_reasons(rows, controls, track="injected", system="review_lexical")
    assert [r.split("'s ")[1].split(" ")[0] for r in reasons] == ["type_macro_f1", "type_oracle_macro_f1"]
    assert all("reaches detector review_lexical's" in r and "0.400" in r for r in reasons)
    flag_all = {r["metric"]: r["value"] for r in rows if r["system"] == "review_flag_all" and r["stratum"] == "all"}
    assert flag_all["review_f1"] == pytest.approx(2 * (3 / 11) / (1 + 3 / 11))  # the share of injected copies only
