"""Issue 15: undecided verdicts are counted beside every rate, never inside it; no judges -> n/a."""

from __future__ import annotations

import json
import math

from scoring.papers.metrics import paper_audit_metrics
from scoring.papers.report import _sections
from storage.schemas import VERDICT_SCHEMA, table_from_rows


def _row(paper: str, n: int, outcome: str, unanimous: bool | None = None) -> dict:
    return {"run_id": "r", "system": "rev", "item_id": f"{paper}/copy-1", "unit_id": f"{paper}/copy-1/{n}",
            "unit_kind": "injection", "outcome": outcome, "votes_json": "[]",
            "detail_json": json.dumps({"paper_id": paper, "error_type": "numerics", "severity": "S2",
                                       "escalated": False, "unanimous": unanimous})}


def test_undecided_injections_leave_the_denominator_and_are_reported():
    rows = [_row("P1", 1, "detected"), _row("P1", 2, "undecided"), _row("P1", 3, "undecided"),
            _row("P2", 1, "missed"), _row("P2", 2, "unscored")]
    metrics = paper_audit_metrics(table_from_rows(rows, VERDICT_SCHEMA), run_id="r", n_interval=50, n_paired=50,
                                  n_permutations=10).to_pylist()
    idx = {(m["system"], m["metric"], m["stratum"]): m for m in metrics}
    assert idx[("rev", "detection_rate", "all")]["value"] == 0.5 and idx[("rev", "detection_rate", "all")]["n"] == 2
    assert idx[("rev", "undecided_injections", "all")]["value"] == 2
    assert idx[("rev", "unscored_injections", "all")]["value"] == 1
    # Quote matches and empty reviews had no judges: unanimity is n/a, not 1.000.
    assert math.isnan(idx[("rev", "unanimity_rate", "all")]["value"])
    # over all injections, undecided and unscored ones stay in the denominator: 1 / 5
    assert idx[("rev", "detection_over_all", "all")]["value"] == 0.2 and idx[("rev", "detection_over_all", "all")]["n"] == 5
    # the detection table is the one with an "undecided" column (the controls' tables come before it)
    head, body = next(table for (_, _, table) in _sections(metrics) if "undecided" in table[0])
    cells = dict(zip(head, body[0], strict=True))
    assert (cells["undecided"], cells["unscored"], cells["visible / all"]) == ("2", "1", "5 / 5")


def test_detection_is_reported_over_visible_injections_beside_all():
    def vis(n: int, outcome: str, visible: bool | None) -> dict:
        r = _row("P1", n, outcome)
        d = json.loads(r["detail_json"]) | {"visible": visible}
        return r | {"detail_json": json.dumps(d)}

    rows = [vis(1, "detected", True), vis(2, "missed", False), vis(3, "missed", False), vis(4, "missed", None)]
    metrics = paper_audit_metrics(table_from_rows(rows, VERDICT_SCHEMA), run_id="r", n_interval=50, n_paired=50,
                                  n_permutations=10).to_pylist()
    idx = {(m["metric"], m["stratum"]): m for m in metrics if m["system"] == "rev"}
    assert idx[("detection_rate", "all")]["value"] == 0.25
    assert idx[("detection_rate", "visible=yes")]["value"] == 0.5 and idx[("detection_rate", "visible=yes")]["n"] == 2
    assert idx[("invisible_injections", "all")]["value"] == 2


def test_escalation_rate_is_na_without_judges_and_counts_failed_escalations():
    quote = [_row("P1", 1, "detected"), _row("P1", 2, "missed")]
    metrics = paper_audit_metrics(table_from_rows(quote, VERDICT_SCHEMA), run_id="r", n_interval=50, n_paired=50,
                                  n_permutations=10).to_pylist()
    idx = {(m["system"], m["metric"]): m for m in metrics if m["stratum"] == "all"}
    assert math.isnan(idx[("rev", "escalation_rate")]["value"])
    judged = _row("P1", 3, "undecided") | {"votes_json": json.dumps([
        {"judge": "j", "family": "f", "detected": None, "role": "panel"},
        {"judge": "e", "family": "g", "detected": None, "role": "escalation"}])}
    judged["detail_json"] = json.dumps(json.loads(judged["detail_json"]) | {"escalated": True})
    metrics = paper_audit_metrics(table_from_rows(quote + [judged], VERDICT_SCHEMA), run_id="r", n_interval=50,
                                  n_paired=50, n_permutations=10).to_pylist()
    idx = {(m["system"], m["metric"]): m for m in metrics if m["stratum"] == "all"}
    assert idx[("rev", "escalation_rate")]["value"] == 1.0 and idx[("rev", "escalation_rate")]["n"] == 1
