"""False-positive adjudication on a clean copy: typing, routing to checkers and panels, outcomes."""

from __future__ import annotations

import json

import pytest

from adjudication.papers.adjudicate import PaperAdjudicationConfig, adjudicate_paper_run
from adjudication.papers.false_positive import numbers_printed
from clients.llm_gateway import LLMServices
from storage.records import Output
from storage.schemas import ITEM_SCHEMA, VERDICT_SCHEMA, table_from_rows
from tests.adjudication.judges import judge_servers, says
from tests.adjudication.paper_copies import CLEAN_TEX, clean_item, truth_rows

pytestmark = pytest.mark.integration  # adjudication runs checks in the sandbox's worker processes

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
    ("mathematics", "k is not 2 pi over lambda", "k := 2\\pi/\\lambda", None),
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
          says(point(3) + "\nPAPER", kind="math.equality", payload={"lhs": "(a+b)^2", "rhs": "a^2 + b^2"}),
          says(point(0) + "\nPAPER", kind="numerics.table_column_total", payload={"values": ["40", "80"], "total": "120"}),
          says(point(8) + "\nPAPER", kind="math.equality", payload={"lhs": "k", "rhs": "2\\pi/\\lambda"})],
    "a": [panel_says(0, "confirmed_issue"), panel_says(8, "false_positive"), says("CITED WORK smith2020", outcome="confirmed_issue", confidence=0.9), panel_says(2, "false_positive"),
          panel_says(5, "false_positive"), panel_says(6, "confirmed_issue")],
    "b": [panel_says(0, "confirmed_issue"), panel_says(8, "false_positive"), says("CITED WORK smith2020", outcome="confirmed_issue", confidence=0.7), panel_says(2, "false_positive"),
          panel_says(5, "false_positive"), panel_says(6, "false_positive")],
    "c": [panel_says(0, "false_positive"), panel_says(8, "false_positive"), says("CITED WORK smith2020", outcome="ambiguous", confidence=0.6), panel_says(2, "false_positive"),
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
    assert table.schema.equals(VERDICT_SCHEMA) and table.num_rows == 10
    outcome, votes, detail = by_unit["P1/copy-0/review"]
    assert outcome == "unscored" and "quota" in detail["unscored_reason"]
    assert {r["unit_kind"] for r in table.to_pylist() if r["system"] == "rev-X"} == {"flag"}


def test_a_flag_is_never_rated_by_rerunning_its_own_check(verdicts):
    """Issue 15: re-running the flag's own check made the mechanical reviewer's FP rate 0 by construction."""
    outcome, votes, detail = flag(verdicts, 1)
    assert "check_origin" not in detail and "checker" not in [v["role"] for v in votes]
    assert "own check kind 'numerics.table_column_total'" in detail["no_check"]
    assert outcome == "confirmed_issue" and detail["matched_by"] == "panel_general"


def test_a_definition_is_never_checked_as_an_identity(verdicts):
    outcome, votes, detail = flag(verdicts, 9)
    assert detail["no_check"] == "the quoted statement is a definition, not an identity"
    assert outcome == "false_positive" and detail["matched_by"] == "panel_general"


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


def test_is_definition_reads_definition_markers_not_equations():
    from adjudication.papers.false_positive import is_definition

    for text in ("k := 2\\pi/\\lambda", "a \\equiv b", "Let $x = 2$", "we define $k = 2\\pi/\\lambda n$",
                 "k = 2\\pi/\\lambda n, where n is the index"):
        assert is_definition(text), text
    for text in ("k = 2\\pi/\\lambda", "the deleted term", "F = (a+b)^2"):
        assert not is_definition(text), text


def test_without_an_independent_adjudicator_flags_are_undecided_and_the_fp_rate_is_na(tmp_path):
    """Issue 15: no panel gave "false-positive rate 0.000" over 18 ambiguous flags."""
    import math

    from scoring.papers.metrics import paper_audit_metrics

    items = table_from_rows([clean_item().to_row()], ITEM_SCHEMA)
    config = PaperAdjudicationConfig(panel=[])
    table = adjudicate_paper_run(items, truth_rows(), [review_row()], config, services=LLMServices(),
                                 cache_dir=str(tmp_path / "cache"))
    rows = table.to_pylist()
    assert len(rows) == len(FLAGS) and {r["outcome"] for r in rows} == {"undecided"}
    assert {json.loads(r["detail_json"])["matched_by"] for r in rows} == {"no_adjudicator"}
    metrics = {(m["metric"], m["stratum"]): m for m in paper_audit_metrics(
        table, run_id="r", n_interval=50, n_paired=50, n_permutations=10).to_pylist() if m["system"] == "rev-X"}
    assert math.isnan(metrics[("false_positive_rate", "all")]["value"])
    assert metrics[("undecided_flags", "all")]["value"] == len(FLAGS)
