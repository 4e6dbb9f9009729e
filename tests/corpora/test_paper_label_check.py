"""Issue 21, item 4: an injection is the error its type names, and a reader of the paper alone can find it.

Unit tests of `label_check.label_mismatch` on small papers, of the injector fixes behind the
garbled injections the hand labels found, and of the rule stand-ins that fill a cell before it is
skipped.
"""

from __future__ import annotations

import json

import pytest

from corpora.papers.audit_corpus import build_paper_audit_corpus
from corpora.papers.injectors_core import segment_end
from corpora.papers.injectors_math import dimensional_absurdity, exponent_flip
from corpora.papers.subtypes import paper_subtypes
from tests.corpora.latex_snippets import HEAD, TAIL, check, paper_of


@pytest.mark.parametrize(("body", "original", "injected", "subtype", "reason"), [
    # a formula change is never a citation misquote (cover-your-basis: cos(theta)=1 -> 2)
    ("The mean is at $\\cos\\theta=1$ and the rest free \\citep{Talbot}.", "\\cos\\theta=1$", "\\cos\\theta=2$",
     "quantitative_qualifier_misquote", "changes maths"),
    # the authors' own sentence is not a cited work's claim
    ("We evaluate on 13 series from the library \\citep{lib}. Abstract: 13 series.", "on 13 series", "on 15 series",
     "quantitative_qualifier_misquote", "authors' own work"),
    # a value only the cited work could show wrong (celerite: 4 years of Kepler data)
    ("The estimator \\citep{VanderPlas} uses the full 4 years of data.", "full 4 years", "full 5 years",
     "quantitative_qualifier_misquote", "only the cited work"),
    ("The data run from 1610 to 2011 \\citep{lean}.", "from 1610 to", "from 1740 to",
     "quantitative_qualifier_misquote", "only the cited work"),
    # identifiers are not quantities (euler-inversion: a grant number; a catalogue id; a function's name)
    ("LU was supported by grant PRPI 22.1.09345.01.2 from the university.", "22.1.09345", "221.09345",
     "order_of_magnitude_mismatch", "names a thing"),
    ("The star KIC~1430163 rotates slowly, as KIC~1430163 shows.", "star KIC~1430163", "star KIC~1430164",
     "headline_digit_swap", "names a thing"),
    ("The event GW150914 was the first.", "GW150914 was", "GW150915 was", "headline_digit_swap", "names a thing"),
    ("This is the Mat\\'ern-3/2 function here.", "ern-3/2 f", "ern-3/3 f", "order_of_magnitude_mismatch",
     "names a thing"),
    ("The data are part of survey 1038 of the agency.", "survey 1038", "survey 10380",
     "order_of_magnitude_mismatch", "names a thing"),
    # an observing campaign, sector or quarter is a name (held out, rodluger/everest_paper: Campaign 11 -> 12)
    ("Campaign 11 light curves display a similar excess in residual noise, as Campaign 11 data do.",
     "Campaign 11 light", "Campaign 12 light", "repeated_constant_drift", "names a thing"),
    ("We use TESS Sector~14 and Sector~14 again.", "Sector~14 and", "Sector~15 and", "repeated_constant_drift",
     "names a thing"),
    # "batch size" in a table with no total is no table_row_total error
    ("\\begin{tabular}{cc}\nbatch size & 256 \\\\\nepochs & 205 \\\\\n\\end{tabular}\n", "& 256 \\\\", "& 255 \\\\",
     "table_row_total_mismatch", "no total"),
    ("\\begin{tabular}{cc}\nN & 1000 \\\\\n\\end{tabular}\nFor N below 1000 it is fast.", "& 1000 \\\\",
     "& 990 \\\\", "table_row_total_mismatch", "no total"),
    # a factor is not a count; "above" pointing at the text reverses no claim
    ("It is a factor of 20 faster. We ran 20 chains.", "factor of 20 faster", "factor of 2 faster",
     "sample_size_disagreement", "a factor"),
    ("The bijections discussed above can be adapted \\citep{d}.", "discussed above can", "discussed below can",
     "direction_reversal", "points at the text"),
])  # fmt: skip
def test_mislabelled_or_uncheckable_injections_are_refused(tmp_path, body, original, injected, subtype, reason):
    why = check(tmp_path, body, original, injected, subtype)
    assert why is not None and reason in why, why


@pytest.mark.parametrize(("body", "original", "injected", "subtype"), [
    ("As measured by \\citet{x}, the rate is 3.88 days. A fit also gives 3.88 days.", "is 3.88 days", "is 3.98 days",
     "quantitative_qualifier_misquote"),
    ("\\begin{tabular}{cc}\na & 12 \\\\\nb & 30 \\\\\nTotal & 42 \\\\\n\\end{tabular}\n", "& 12 \\\\", "& 13 \\\\",
     "table_row_total_mismatch"),
    ("Grains with sizes below 1 um \\citep{B} are stable.", "below 1 um", "above 1 um", "direction_reversal"),
    ("The benchmark uses 13 data sets. Section 2 repeats the 13 data sets.", "uses 13 data", "uses 31 data",
     "headline_digit_swap"),
])  # fmt: skip
def test_injections_that_are_what_they_say_pass(tmp_path, body, original, injected, subtype):
    assert check(tmp_path, body, original, injected, subtype) is None


def test_label_check_rejects_in_the_validator_and_the_draw_is_counted(tmp_path):
    # the only cited number is checkable only from the cited work: the cell is re-drawn or skipped, counted
    body = ("\\begin{abstract}We show a result.\\end{abstract}\n"
            "The survey \\citep{smith} found 4 galaxies.\n\\begin{equation}\ny = a x + b\n\\end{equation}\n")  # fmt: skip
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "main.tex").write_text(HEAD + body + TAIL, encoding="utf-8")
    corpus = build_paper_audit_corpus([tmp_path / "p"], seed=1, check_compile=False)
    for row in corpus.truth.to_pylist():
        extra = json.loads(row["extra_json"])
        for inj in extra["injections"]:
            assert not (inj["error_type"] == "citations" and inj["changed_original"] in ("4",)), inj
    draws = [json.loads(r["extra_json"]).get("draws", {}) for r in corpus.truth.to_pylist()]
    assert sum(d.get("invalid", 0) for d in draws) >= 1


def test_left_is_not_a_relation():
    # celerite: "\exp\left(...\right)" ended the right-hand side at "\left", so a term went in between
    content = " S = \\frac{A}{Q^2}\\,\\exp\\left(-x^2\\right) \\le 3"
    assert content[segment_end(content, 4) :].startswith("\\le 3")


def test_dimensional_absurdity_needs_a_real_left_hand_side(tmp_path):
    paper = paper_of(tmp_path, "\\begin{align}\n\\text{NSR}^2 = \\frac{N_0^2 + C}{C^2}.\n\\end{align}\n"
                               "\\begin{equation}\nE = m c^2\n\\end{equation}\n")  # fmt: skip
    added = [p.injected[len(p.original) - len(p.original.lstrip()):] for p in dimensional_absurdity(paper)]
    assert all("(^2)" not in p.injected and "\\left(^" not in p.injected for p in dimensional_absurdity(paper))
    assert any("\\left(E\\right)^{2}" in p.injected for p in dimensional_absurdity(paper)), added


def test_exponent_flip_keeps_brackets_balanced(tmp_path):
    paper = paper_of(tmp_path, "\\begin{equation}\nh = \\Phi^{(l-1)}(x) + y^{a-b}\n\\end{equation}\n")
    flips = exponent_flip(paper)
    assert flips and all(p.injected.count("(") == p.injected.count(")") for p in flips)
    assert not any("1)-(l" in p.injected for p in flips)


def test_stand_ins_are_rules_of_their_llm_subtypes_combination_and_never_drawn():
    reg = paper_subtypes()
    stand_ins = [s for s in reg.subtypes if s.stands_in_for]
    assert {s.stands_in_for for s in stand_ins} == {"methodological_qualifier_drift", "conditional_claim_drop",
                                                      "sweeping_generalisation"}  # fmt: skip
    for s in stand_ins:
        target = reg.get(s.stands_in_for)
        assert s.mechanism == "rule" and target.mechanism == "llm"
        assert (s.error_type, s.severity) == (target.error_type, target.severity)
        assert s not in reg.for_combination(s.error_type, s.severity)
        assert reg.stand_ins(s.error_type, s.severity) == [s]


def test_a_cell_no_rule_of_its_combination_fills_gets_a_stand_in(tmp_path):
    # general S3: abstract_body_contradiction finds no polar word in the abstract; the LLM sub-types
    # have no proposer; the hedge in the conclusions fills the cell through the stand-in
    body = ("\\begin{abstract}We present a method.\\end{abstract}\n\\section{Conclusions}\n"
            "The method typically converges in few steps, and it often helps.\n")  # fmt: skip
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "main.tex").write_text(HEAD + body + TAIL, encoding="utf-8")
    corpus = build_paper_audit_corpus([tmp_path / "p"], seed=3, check_compile=False)
    filled = []
    for row in corpus.truth.to_pylist()[1:]:
        extra = json.loads(row["extra_json"])
        filled += [s for s in extra["substituted"] if s["error_type"] == "general" and s["severity"] == "S3"]
        assert not [s for s in extra["skipped"] if (s["error_type"], s["severity"]) == ("general", "S3")]
        assert extra["draws"]["stand_ins"] == sum(s["stand_in"] for s in extra["substituted"])
    assert len(filled) == 1 and filled[0]["filled_by"] == "overclaiming_certainty" and filled[0]["stand_in"]
