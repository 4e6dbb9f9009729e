"""scoring.citations.run_comparison on paper audits: per injection, detected before and not after (and back)."""

from __future__ import annotations

import json

from scoring.citations.run_comparison import Side, compare_runs, mcnemar_exact
from storage.run_record import RunRecord
from storage.schemas import OUTPUT_SCHEMA, TRUTH_SCHEMA, VERDICT_SCHEMA, table_from_rows


def _side(run_id: str, model: str, detected: set[str]) -> Side:
    manifest = {"run_id": run_id, "corpus": {"name": "papers", "version": "v1", "items": 2}, "snapshot": "2026-11-01",
                "code_revision": "c" * 40, "system": {"name": "paper_reviewer_llm", "args": {"model": model}}}
    outputs = table_from_rows([dict(run_id=run_id, system="r", item_id=f"p1/copy-{i}", shard_id=0, label="VALID",
                                    confidence=0.5) for i in (1, 2)], OUTPUT_SCHEMA)  # fmt: skip
    verdicts = table_from_rows([dict(run_id=run_id, system="r", item_id=f"p1/copy-{i}", unit_id=f"inj-{i}",
                                     unit_kind="injection", outcome="detected" if f"inj-{i}" in detected else "missed",
                                     detail_json=json.dumps({"error_type": f"type{i}"})) for i in (1, 2)]
                               + [dict(run_id=run_id, system="r", item_id="p1/copy-1", unit_id="flag-1",
                                       unit_kind="flag", outcome="false_positive")], VERDICT_SCHEMA)  # fmt: skip
    return Side(RunRecord.from_stored(manifest, None, storage_uri=f"/x/{run_id}"), outputs, verdicts)


def test_injections_lost_and_gained():
    truth = table_from_rows([dict(item_id=f"p1/copy-{i}", label=None) for i in (1, 2)], TRUTH_SCHEMA)
    c = compare_runs(_side("a", "m1", {"inj-1"}), _side("b", "m2", {"inj-2"}), truth, n_resamples=0)
    assert [(i.unit_id, i.change, i.error_type, i.before, i.after) for i in c.injections] == [
        ("inj-1", "lost", "type1", "detected", "missed"), ("inj-2", "gained", "type2", "missed", "detected")]
    assert c.differences == [("system.args.model", "m1", "m2")]
    assert c.mcnemar is None and c.changes == [] and "no labelled shared items" in c.notes[0]


def test_mcnemar_exact_hand_values():
    assert mcnemar_exact(0, 0).p_value == 1.0
    assert mcnemar_exact(3, 0).p_value == 0.25  # 2 * 0.5**3
    assert abs(mcnemar_exact(7, 2).p_value - 2 * (1 + 9 + 36) / 512) < 1e-12  # 2 * P(X <= 2 | n=9)
