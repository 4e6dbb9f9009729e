"""Issue 15: built-in controls (null, random-quote, shuffled reviews) scored like real reviewers."""

from __future__ import annotations

import json

from adjudication.papers.adjudicate import PaperAdjudicationConfig, adjudicate_paper_controls
from adjudication.papers.controls import NULL_REVIEW, control_cases
from clients.llm_gateway import LLMServices
from scoring.papers.metrics import paper_audit_metrics
from scoring.papers.report import audit_validity, write_paper_report
from storage.records import Item, Output
from storage.schemas import ITEM_SCHEMA, table_from_rows
from tests.adjudication.paper_copies import injected_item, truth_rows

P2_TEXT = ("\\documentclass{article}\n\\begin{document}\nWe count the stars in the field. The answer is 13 "
           "bright stars after the cut, which we use throughout.\n\\end{document}\n")


def two_papers():
    p2 = Item("P2/copy-1", "paper_copy", "hand", None,
              {"paper_id": "P2", "copy": 1, "main_file": "main.tex", "files": {"main.tex": P2_TEXT}})
    start = P2_TEXT.index("13")
    inj = {"injection_id": "P2/copy-1/1", "error_type": "numerics", "severity": "S2", "subtype": "x", "file": "main.tex",
           "start": start - 11, "end": start + 2, "original": "The answer is 12", "injected": "The answer is 13",
           "changed_start": start + 1, "changed_end": start + 2, "rationale": "r", "mechanism": "rule"}
    truth = truth_rows() + [{"item_id": "P2/copy-1", "label": None, "extra_json": json.dumps(
        {"paper_id": "P2", "copy": 1, "clean": False, "injections": [inj]})}]
    items = table_from_rows([injected_item().to_row(), p2.to_row()], ITEM_SCHEMA)
    return items, truth


def reviewer_outputs():
    # A reviewer that quotes the P1 table total (a true detection on P1) and says nothing on P2.
    a = Output("P1/copy-1", detail={"review_text": "x", "prompt_style": "structured", "flags": [
        {"flag_id": "P1/copy-1/f1", "quote": "Total & 130", "type": "numerics", "description": "total wrong"}]})
    b = Output("P2/copy-1", detail={"review_text": "fine", "prompt_style": "structured", "flags": []})
    return [a.to_row("run-a", "rev-A", 0), b.to_row("run-a", "rev-A", 0)]


def test_control_cases_cover_every_injected_copy_and_shuffle_across_papers():
    items, truth = two_papers()
    payloads = {r["item_id"]: json.loads(r["payload_json"]) for r in items.to_pylist()}
    truths = {r["item_id"]: json.loads(r["extra_json"]) for r in truth}
    cases = control_cases(payloads, truths, {"rev-A": reviewer_outputs()})
    by = {(c["system"], c["item_id"]): json.loads(c["detail_json"]) for c in cases}
    assert by[("control:null", "P1/copy-1")]["review_text"] == NULL_REVIEW
    assert by[("control:null", "P1/copy-1")]["flags"] == []
    quotes = [f["quote"] for f in by[("control:random_quote", "P1/copy-1")]["flags"]]
    assert len(quotes) >= 3 and all(q in payloads["P1/copy-1"]["files"]["main.tex"] for q in quotes)
    # The review of P1 is scored against P2's injections and vice versa.
    assert by[("control:shuffled:rev-A", "P2/copy-1")]["shuffled_from"] == "P1/copy-1"
    assert by[("control:shuffled:rev-A", "P1/copy-1")]["shuffled_from"] == "P2/copy-1"
    assert cases == control_cases(payloads, truths, {"rev-A": reviewer_outputs()})  # seeded


def test_controls_are_adjudicated_and_reported_beside_the_reviewer(tmp_path):
    items, truth = two_papers()
    config = PaperAdjudicationConfig(panel=[])
    table = adjudicate_paper_controls(items, truth, reviewer_outputs(), config, services=LLMServices(),
                                      cache_dir=str(tmp_path / "c"))
    rows = table.to_pylist()
    assert {r["run_id"] for r in rows} == {"controls"}
    outcome = {(r["system"], r["unit_id"]): r["outcome"] for r in rows}
    assert all(o == "missed" for (s, _), o in outcome.items() if s == "control:null")
    # The table-total quote means nothing on P2: the shuffled review detects nothing there.
    assert outcome[("control:shuffled:rev-A", "P2/copy-1/1")] == "missed"
    metrics = paper_audit_metrics(table, run_id="r", n_interval=50, n_paired=50, n_permutations=10).to_pylist()
    assert audit_validity(metrics) is None
    files = write_paper_report(tmp_path / "rep", table, metrics=table_from_rows(metrics, _schema()))
    md = files[0].read_text()
    assert "## Controls" in md and "AUDIT INVALID" not in md.split("## Glossary")[0]  # the glossary defines it


def _schema():
    from storage.schemas import METRIC_SCHEMA

    return METRIC_SCHEMA


def test_a_null_control_above_the_tolerance_invalidates_the_audit():
    row = {"system": "control:null", "metric": "detection_rate", "stratum": "all", "value": 0.2}
    assert "AUDIT INVALID" in audit_validity([row])
    assert audit_validity([row | {"value": 0.05}]) is None


def test_shuffled_reviews_stay_within_their_track():
    def copy(paper: str, n: int, track: str | None) -> tuple[str, dict, dict]:
        item = f"{paper}/copy-{n}" if track is None else f"{paper}/erratum-{n}"
        extra = {"paper_id": paper, "copy": n, "clean": False, "injections": []} | ({"track": track} if track else {})
        return item, {"files": {"main.tex": P2_TEXT}}, extra

    made = [copy("P1", 1, None), copy("P2", 1, None), copy("N1", 1, "natural"), copy("N2", 1, "natural"),
            copy("N2", 2, "natural")]
    payloads = {i: p for i, p, _ in made}
    truths = {i: t for i, _, t in made}
    outputs = [Output(i, detail={"review_text": "r", "prompt_style": "structured", "flags": []}).to_row("run", "rev", 0)
               for i in payloads]
    shuffled = {json.loads(c["detail_json"])["shuffled_from"]: c["item_id"]
                for c in control_cases(payloads, truths, {"rev": outputs}) if c["system"] == "control:shuffled:rev"}
    assert shuffled == {"P1/copy-1": "P2/copy-1", "P2/copy-1": "P1/copy-1",  # injected against injected
                        "N1/erratum-1": "N2/erratum-1",  # natural against natural, never an injected copy
                        "N2/erratum-1": "N1/erratum-1", "N2/erratum-2": "N1/erratum-1"}  # fewer copies: cyclic
