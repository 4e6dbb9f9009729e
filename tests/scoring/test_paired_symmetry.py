"""The paired test's two-sided p-value does not depend on argument order, and a per-entry file
without `api_calls` reports no mean API calls (null, not 0.0)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scoring.citations.entry_table import EntryTable
from scoring.citations.result_file import score_prediction_file
from scoring.multiple_testing import holm
from scoring.paired_test import paired_bootstrap
from storage.schemas import OUTPUT_SCHEMA, TRUTH_SCHEMA, table_from_rows


def _systems() -> tuple[EntryTable, EntryTable]:
    """40 hallucinated + 40 valid entries; `good` is right on all, `bad` misses 24 hallucinations."""
    truth_rows, good, bad = [], [], []
    for i in range(80):
        hall = i < 40
        truth_rows.append(dict(item_id=f"e{i}", label="HALLUCINATED" if hall else "VALID",
                               hallucination_type="fabricated_doi" if hall else None,
                               difficulty_tier=1 if hall else None))
        truth_label = "HALLUCINATED" if hall else "VALID"
        good.append(dict(run_id="g", system="good", item_id=f"e{i}", shard_id=0, label=truth_label, confidence=0.9))
        bad_label = "VALID" if hall and i < 24 else truth_label
        bad.append(dict(run_id="b", system="bad", item_id=f"e{i}", shard_id=0, label=bad_label, confidence=0.9))
    truth = table_from_rows(truth_rows, TRUTH_SCHEMA)
    return (EntryTable.from_tables(truth, table_from_rows(good, OUTPUT_SCHEMA)),
            EntryTable.from_tables(truth, table_from_rows(bad, OUTPUT_SCHEMA)))


def test_two_sided_p_is_the_same_either_way_round_and_small_when_the_first_system_is_worse():
    good, bad = _systems()
    ab = paired_bootstrap(bad, good, metric="f1_hallucination", n_resamples=500, names=("bad", "good"))
    ba = paired_bootstrap(good, bad, metric="f1_hallucination", n_resamples=500, names=("good", "bad"))
    # the worse system first: the interval excludes 0 on the negative side, so the test must reject
    assert ab.diff < 0 and ab.diff_ci[1] < 0
    assert ab.p_one_sided == 1.0  # H0 "bad <= good" is never contradicted ...
    assert ab.p_two_sided < 0.01  # ... but the two-sided test is; doubling the lower tail said 1.0 here
    assert ba.p_two_sided == ab.p_two_sided
    assert ba.diff == pytest.approx(-ab.diff)
    assert ba.diff_ci == pytest.approx((-ab.diff_ci[1], -ab.diff_ci[0]))
    # so a correction over a family that holds it can call it significant
    assert holm([ab.p_two_sided, 0.5])[0] < 0.05


def test_identical_systems_give_p_one():
    good, _ = _systems()
    same = paired_bootstrap(good, good, n_resamples=100)
    assert same.diff == 0 and same.p_two_sided == 1.0


def test_per_entry_file_without_api_calls_reports_null_mean(tmp_path):
    entries = tmp_path / "tiny.jsonl"
    entries.write_text("\n".join(json.dumps(e) for e in [
        {"bibtex_key": "a", "label": "VALID"},
        {"bibtex_key": "b", "label": "HALLUCINATED", "hallucination_type": "fabricated_doi", "difficulty_tier": 1},
    ]) + "\n")
    preds = tmp_path / "tool_tiny.jsonl"
    preds.write_text("\n".join(json.dumps(p) for p in [
        {"bibtex_key": "a", "pred_label": "VALID", "pred_confidence": 0.9},
        {"bibtex_key": "b", "pred_label": "HALLUCINATED", "pred_confidence": 0.8},
    ]) + "\n")
    _, result = score_prediction_file(entries, preds)
    assert result["mean_api_calls"] is None
    counted = tmp_path / "other_tiny.jsonl"
    counted.write_text("\n".join(json.dumps(p) for p in [
        {"bibtex_key": "a", "label": "VALID", "confidence": 0.9, "api_calls": 3},
        {"bibtex_key": "b", "label": "HALLUCINATED", "confidence": 0.8, "api_calls": 1},
    ]) + "\n")
    _, result = score_prediction_file(entries, counted)
    assert result["mean_api_calls"] == 2.0
    assert np.isfinite(result["mean_api_calls"])
