"""False-positive adjudication on a clean copy: typing, routing to checkers and panels, outcomes."""

from __future__ import annotations

import json

import pytest

from adjudication.false_positive import numbers_printed
from adjudication.paper_audit import PaperAdjudicationConfig, adjudicate_paper_run
from clients.llm_gateway import LLMServices
from storage.records import Output
from storage.schemas import ITEM_SCHEMA, VERDICT_SCHEMA, table_from_rows
from tests.adjudication.judges import judge_servers, says
from tests.adjudication.paper_copies import CLEAN_TEX, clean_item, truth_rows

FLAGS = [  # (type, description, quote, own check)
    ("numerics", "column total is wrong", "Total & 120 & 30",
     {"kind": "numerics.table_column_total", "payload": {"values": ["40", "80"], "total": "120"}}),
    ("numerics", "25% of 120 is not 30", "30 of the 120 galaxies (25\\%", None),
    ("numerics", "the ratio of masses is off", None, None),
    ("mathematics", "the expansion drops the cross term", "F = (a+b)^2 = a^2 + 2ab + b^2", None),
    ("citations", "Smith finds a different ratio", "as found by \\citet{smith2020}", None),
    ("general", "the conclusions are overstated", None, None),
    ("general", "the sample is unusual", None, None),
    ("general", "Perhaps the authors could add a figure", None, None),
]


def point(n: int) -> str:
    return f"Point: {FLAGS[n][1]}\n"


def panel_says(n: int, outcome: str) -> dict:
    return says(point(n), outcome=outcome, confidence=0.8, reason=f"judged {outcome}")


SCRIPTS = {
    "t": [says(point(7) + "\nAnswer", clear=False, type="general"),
          says("Is it a clear, specific claim", clear=True, type=None),
          says(point(1) + "\nPAPER", kind="numerics.percentage_of", payload={"percent": "25%", "of": "120", "stated": "30"}),
          says(point(2) + "\nPAPER", kind="numerics.ratio", payload={"numerator": "999", "denominator": "30", "stated": "3"}),
          says(point(3) + "\nPAPER", kind="math.equality", payload={"lhs": "(a+b)^2", "rhs": "a^2 + b^2"})],
    "a": [says("CITED WORK smith2020", outcome="confirmed_issue", confidence=0.9), panel_says(2, "false_positive"),
          panel_says(5, "false_positive"), panel_says(6, "confirmed_issue")],
    "b": [says("CITED WORK smith2020", outcome="confirmed_issue", confidence=0.7), panel_says(2, "false_positive"),
          panel_says(5, "false_positive"), panel_says(6, "false_positive")],
    "c": [says("CITED WORK smith2020", outcome="ambiguous", confidence=0.6), panel_says(2, "false_positive"),
          panel_says(5, "confirmed_issue"), panel_says(6, "ambiguous")],
}


def review_row() -> dict:
    flags = [{"flag_id": f"P1/copy-0/f{n}", "type": t, "description": d, "quote": q, "location": None, "check": c}
             for n, (t, d, q, c) in enumerate(FLAGS, start=1)]
    return Output("P1/copy-0", detail={"review_text": "r", "prompt_style": "imported", "flags": flags}).to_row(
        "run-x", "rev-X", 0)


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fp")
    cited = tmp / "cited"
    cited.mkdir()
    (cited / "smith2020.txt").write_text("We find a mean line ratio of 0.52 in our sample.")
    failed = Output.failed("P1/copy-0", "quota", "budget").to_row("run-y", "rev-Y", 0)
    items = table_from_rows([clean_item().to_row()], ITEM_SCHEMA)
    with judge_servers(tmp, SCRIPTS) as j:
        config = PaperAdjudicationConfig(panel=[j["a"], j["b"], j["c"]], typer=j["t"], check_builder=j["t"],
                                         cited_texts_dir=str(cited))
        table = adjudicate_paper_run(items, truth_rows(), [review_row(), failed], config, services=LLMServices(),
                                     cache_dir=str(tmp / "cache"))
    return {r["unit_id"]: (r["outcome"], json.loads(r["votes_json"]), json.loads(r["detail_json"]))
            for r in table.to_pylist()}, table


def flag(verdicts, n):
    return verdicts[0][f"P1/copy-0/f{n}"]


def test_one_row_per_flag_and_one_unscored_review_row_for_the_failed_reviewer(verdicts):
    by_unit, table = verdicts
    assert table.schema.equals(VERDICT_SCHEMA) and table.num_rows == 9
    outcome, votes, detail = by_unit["P1/copy-0/review"]
    assert outcome == "unscored" and "quota" in detail["unscored_reason"]
    assert {r["unit_kind"] for r in table.to_pylist() if r["system"] == "rev-X"} == {"flag"}


def test_numerics_flag_with_its_own_check_is_rerun_and_a_holding_total_is_a_false_positive(verdicts):
    outcome, votes, detail = flag(verdicts, 1)
    assert outcome == "false_positive" and detail["matched_by"] == "checker" and detail["check_origin"] == "flag"
    assert votes[-1]["role"] == "checker" and "numerics.table_column_total confirmed" in votes[-1]["reason"]


def test_check_builder_turns_a_numerics_flag_into_a_percentage_check(verdicts):
    outcome, _, detail = flag(verdicts, 2)
    assert outcome == "false_positive" and detail["check"]["kind"] == "numerics.percentage_of"
    assert detail["check_origin"] == "check_builder"


def test_a_check_using_numbers_not_in_the_paper_goes_to_the_general_panel(verdicts):
    outcome, votes, detail = flag(verdicts, 3)
    assert detail["no_check"] == "check builder used numbers not printed in the paper"
    assert outcome == "false_positive" and detail["matched_by"] == "panel_general" and detail["unanimous"]


def test_mathematics_flag_refuted_by_sympy_is_a_confirmed_issue(verdicts):
    outcome, votes, detail = flag(verdicts, 4)
    assert outcome == "confirmed_issue" and detail["check"]["outcome"] == "refuted"
    assert detail["flag_type"] == "mathematics"


def test_citation_flag_panel_gets_the_cited_work(verdicts):
    outcome, votes, detail = flag(verdicts, 5)
    assert outcome == "confirmed_issue" and detail["cited_keys"] == ["smith2020"] and not detail["unanimous"]
    assert [v["outcome"] for v in votes if v["role"] == "panel"] == ["confirmed_issue", "confirmed_issue", "ambiguous"]


def test_general_flags_take_the_panel_majority_or_ambiguous_without_one(verdicts):
    assert flag(verdicts, 6)[0] == "false_positive"
    outcome, votes, detail = flag(verdicts, 7)
    assert outcome == "ambiguous" and sorted(v["outcome"] for v in votes if v["role"] == "panel") == [
        "ambiguous", "confirmed_issue", "false_positive"]


def test_unclear_flag_is_ambiguous_without_a_panel(verdicts):
    outcome, votes, detail = flag(verdicts, 8)
    assert outcome == "ambiguous" and detail["matched_by"] == "typer" and [v["role"] for v in votes] == ["typer"]


def test_numbers_printed_accepts_thousands_separators_and_rejects_new_numbers():
    assert numbers_printed({"values": ["40", "80"], "total": "120"}, CLEAN_TEX)
    assert not numbers_printed({"stated": "999"}, CLEAN_TEX)
