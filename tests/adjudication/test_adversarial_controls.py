"""Issue 21: numbers that survive an adversary. Quote-everything and token-quote reviews, quotes
that locate nothing, descriptions that name nothing, and a sycophantic judge must not buy a
detection rate; unit tests (local judges, no servers, no checker processes)."""

from __future__ import annotations

import json

import pyarrow as pa

from adjudication.papers.adjudicate import (
    PaperAdjudicationConfig,
    adjudicate_calibrated,
    adjudicate_paper_controls,
    adjudicate_paper_run,
)
from adjudication.papers.calibration import CALIBRATION_MAX_CREDIT, judge_calibration
from adjudication.papers.controls import VAGUE_DESCRIPTION, control_cases
from adjudication.papers.quote_match import (
    MAX_QUOTE_CHARS,
    names_the_error,
    quote_matches,
    quote_specificity,
)
from scoring.papers.metrics import paper_audit_metrics
from scoring.papers.report import write_paper_report
from storage.records import Output
from storage.schemas import ITEM_SCHEMA, table_from_rows
from tests.adjudication.judges import StrictJudge, SycophantJudge
from tests.adjudication.paper_copies import injected_copy, injected_item, truth_rows


class NoChecks:  # detection never runs a check; this keeps the sandbox pool from starting
    async def run(self, kind, payload):  # pragma: no cover - never called on injected copies
        raise AssertionError("no check expected")


def _items():
    return table_from_rows([injected_item().to_row()], ITEM_SCHEMA)


def _payloads_truths():
    payloads = {r["item_id"]: json.loads(r["payload_json"]) for r in _items().to_pylist()}
    return payloads, {r["item_id"]: json.loads(r["extra_json"]) for r in truth_rows()}


def _flag(quote: str, description: str, n: int = 1) -> dict:
    return {"flag_id": f"P1/copy-1/f{n}", "quote": quote, "location": None, "type": None,
            "description": description, "check": None}


def test_every_copy_gets_a_quote_everything_and_a_token_quotes_control():
    payloads, truths = _payloads_truths()
    cases = {c["system"]: json.loads(c["detail_json"]) for c in control_cases(payloads, truths, {})}
    text = payloads["P1/copy-1"]["files"]["main.tex"]
    everything = cases["control:quote_everything"]["flags"]
    assert [f["quote"] for f in everything] == [text]  # one .tex file, quoted whole; the .bib is not a file to quote
    assert all(f["description"] == VAGUE_DESCRIPTION for f in everything)
    tokens = [f["quote"] for f in cases["control:token_quotes"]["flags"]]
    assert {"0", "+", "}"} <= set(tokens) and all(t in text and len(t) <= 3 for t in tokens)


def test_over_long_and_token_only_quotes_locate_nothing():
    text, injections = injected_copy()
    files = {"main.tex": text}
    table_total = injections[1]
    # Both overlap the changed characters, so the quote matcher of issue 15 credited them.
    assert quote_specificity(text) == "over_long" and len(text) > MAX_QUOTE_CHARS
    assert quote_matches(_flag(text, "total wrong"), table_total, files) is None
    assert quote_specificity("130") == "token_only"
    assert quote_matches(_flag("130", "total wrong"), table_total, files) is None
    assert quote_matches(_flag("Total & 130", "total wrong"), table_total, files) is not None


def test_a_description_must_name_the_error_or_its_kind():
    _, (sign, total, abstract) = injected_copy()
    assert not names_the_error(VAGUE_DESCRIPTION, total)
    assert not names_the_error("This passage looks wrong.", sign)
    assert names_the_error("the total does not add up", total)
    assert names_the_error("sign error in the expansion", sign)
    assert names_the_error("0.36 here but 0.34 in the results", abstract | {"changed_injected": "0.36"})


def test_without_a_panel_the_adversarial_controls_detect_nothing_and_a_vague_located_flag_misses(tmp_path):
    vague = Output("P1/copy-1", detail={"review_text": "x", "prompt_style": "structured",
                                        "flags": [_flag("Total & 130", "This passage looks wrong.")]})
    named = Output("P1/copy-1", detail={"review_text": "x", "prompt_style": "structured",
                                        "flags": [_flag("Total & 130", "the total does not add up")]})
    outputs = [vague.to_row("run-v", "vague", 0), named.to_row("run-n", "named", 0)]
    config = PaperAdjudicationConfig(panel=[])
    rows = adjudicate_paper_run(_items(), truth_rows(), outputs, config, checks=NoChecks()).to_pylist()
    table_total = {r["system"]: (r["outcome"], json.loads(r["detail_json"])["matched_by"])
                   for r in rows if r["unit_id"] == "P1/copy-1/2"}
    assert table_total == {"vague": ("missed", "quote_unnamed"), "named": ("detected", "quote")}
    controls = adjudicate_paper_controls(_items(), truth_rows(), outputs, config, checks=NoChecks())
    metrics = {(r["system"], r["metric"]): r for r in
               paper_audit_metrics(controls, run_id="r", n_interval=20, n_paired=20, n_permutations=5).to_pylist()
               if r["stratum"] == "all"}
    for control in ("control:quote_everything", "control:token_quotes", "control:random_quote", "control:null"):
        assert metrics[(control, "detection_over_all")]["value"] == 0.0, control
    # the over-long and token-only quotes are counted per reviewer
    assert metrics[("control:quote_everything", "flags_over_long_quote")]["value"] == 1
    assert metrics[("control:token_quotes", "flags_token_only_quote")]["value"] >= 10


def test_a_sycophantic_judge_is_uncalibrated_and_cannot_make_a_reviewer_perfect(tmp_path):
    # A real-ish review: the table total quoted and named, plus a vague prose remark.
    review = Output("P1/copy-1", detail={"review_text": "Mostly fine.", "prompt_style": "structured", "flags": [
        _flag("Total & 130", "the total does not add up"),
        _flag("", "The derivations could be explained better.", 2)]})
    outputs = {"run-a": [review.to_row("run-a", "rev-A", 0)]}
    config = PaperAdjudicationConfig(panel=[SycophantJudge()])
    # Before issue 21: the sycophant's copied evidence passes the evidence check, every injection "detected".
    before = adjudicate_paper_run(_items(), truth_rows(), outputs["run-a"], config, checks=NoChecks())
    assert set(before.column("outcome").to_pylist()) == {"detected"}

    verdicts, excluded = adjudicate_calibrated(_items(), truth_rows(), outputs, config, checks=NoChecks())
    assert excluded == {"local/sycophant"}
    calibration = judge_calibration(verdicts["controls"].to_pylist())["local/sycophant"]
    assert calibration.rate("control:quote_everything") == 1.0 > CALIBRATION_MAX_CREDIT
    assert calibration.rate("control:null") == 1.0  # it credits a review that says nothing
    outcomes = {r["unit_id"]: r["outcome"] for r in verdicts["run-a"].to_pylist()}
    assert outcomes == {"P1/copy-1/1": "missed", "P1/copy-1/2": "detected", "P1/copy-1/3": "missed"}
    votes = [v for r in verdicts["run-a"].to_pylist() for v in json.loads(r["votes_json"])]
    assert {v["role"] for v in votes if v["judge"] == "local/sycophant"} == {"uncalibrated"}  # recorded, not counted
    rows = paper_audit_metrics(verdicts["run-a"], run_id="r", n_interval=20, n_paired=20,
                               n_permutations=5).to_pylist()
    assert [r["value"] for r in rows if (r["system"], r["metric"], r["stratum"]) == ("rev-A", "detection_rate", "all")] \
        == [1 / 3]
    both = paper_audit_metrics(verdicts["controls"], run_id="r", n_interval=20, n_paired=20, n_permutations=5)
    flags = {(r["system"], r["metric"]): r["value"] for r in both.to_pylist()}
    assert flags[("local/sycophant", "judge_uncalibrated")] == 1.0
    # the report says so, and counts the over-long and token-only quotes
    combined = pa.concat_tables([verdicts["run-a"], verdicts["controls"]])
    md = write_paper_report(tmp_path / "report", combined, n_interval=20, n_paired=20, n_permutations=5)[0].read_text()
    calibration_section = md.split("## Judge calibration")[1].split("## ")[0]
    assert "local/sycophant" in calibration_section and "excluded (uncalibrated)" in calibration_section
    quotes_section = md.split("## Quote specificity")[1].split("## ")[0]
    assert "control:quote_everything" in quotes_section and "control:token_quotes" in quotes_section


def test_a_strict_judge_stays_calibrated_and_keeps_its_votes():
    review = Output("P1/copy-1", detail={"review_text": "Mostly fine.", "prompt_style": "structured",
                                         "flags": [_flag("", "The derivations could be explained better.")]})
    config = PaperAdjudicationConfig(panel=[StrictJudge()])
    verdicts, excluded = adjudicate_calibrated(_items(), truth_rows(), {"run-a": [review.to_row("run-a", "rev-A", 0)]},
                                               config, checks=NoChecks())  # fmt: skip
    assert excluded == frozenset()
    votes = [v for r in verdicts["run-a"].to_pylist() for v in json.loads(r["votes_json"])]
    assert votes and {v["role"] for v in votes} == {"panel"}
