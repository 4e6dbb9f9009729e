"""The mechanical paper reviewer on hand-built copies and on a real paper, checks in the sandbox pool."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from storage.records import Item
from tests.adjudication.paper_copies import CLEAN_TEX, clean_item, injected_copy, injected_item
from tests.helpers.paths import SHARED_DATA
from verifiers.registry import SystemSpec, build_system
from verifiers.reviewers.statements import extract_statements
from verifiers.system import RunContext

pytestmark = pytest.mark.integration  # checks run in the sandbox's worker processes


@pytest.fixture(scope="module")
def reviewer():
    system = build_system(SystemSpec("paper_reviewer_mechanical", {"workers": 1}))
    yield system
    system.close()


def review(system, items):
    return asyncio.run(system.run(items, RunContext("run-m", "2026-05-05")))


def test_extracts_chain_table_totals_and_percent_of_from_the_clean_copy():
    kinds = sorted(s.kind for s in extract_statements({"main.tex": CLEAN_TEX}))
    assert kinds == ["math.statement", "numerics.percentage_of", "numerics.table_column_total",
                     "numerics.table_column_total"]


def test_clean_copy_has_no_flags_and_every_check_is_confirmed(reviewer):
    (out,) = review(reviewer, [clean_item()])
    assert out.error is None and out.label is None
    assert out.detail["flags"] == [] and out.detail["check_outcomes"] == {"confirmed": 4}
    assert out.detail["prompt_style"] == "mechanical"


def test_injected_copy_flags_sign_flip_table_total_and_abstract_drift_with_verbatim_quotes(reviewer):
    (out,) = review(reviewer, [injected_item()])
    flags = out.detail["flags"]
    assert [f["check"]["kind"] for f in flags] == ["math.statement", "numerics.table_column_total",
                                                   "numerics.abstract_body"]
    assert [f["type"] for f in flags] == ["mathematics", "numerics", "numerics"]
    assert [f["flag_id"] for f in flags] == ["P1/copy-1/f1", "P1/copy-1/f2", "P1/copy-1/f3"]
    text, injections = injected_copy()
    for flag, injection in zip(flags, injections, strict=True):
        assert flag["check"]["result"]["outcome"] == "refuted"
        q = flag["check"]["quotes"][0]
        assert text[q["start"]:q["end"]] == q["text"] == flag["quote"]
        assert q["start"] < injection["end"] and q["end"] > injection["start"]  # the flag points at the injection
    assert flags[1]["check"]["result"]["evidence"]["computed"] == 120.0
    assert out.detail["check_outcomes"] == {"confirmed": 2, "refuted": 3}


def test_broken_copy_is_an_input_failure_and_the_rest_of_the_batch_is_reviewed(reviewer):
    broken = Item("P2/copy-0", "paper_copy", "hand", None, {"paper_id": "P2", "copy": 0, "files": {}})
    outs = review(reviewer, [broken, clean_item()])
    assert outs[0].error_kind == "input" and outs[1].error is None


@pytest.mark.requires_shared_data
def test_real_clean_paper_raises_no_flag(reviewer):
    root = SHARED_DATA / "papers" / "legwork-2022"
    files = {str(p.relative_to(root)): p.read_text(errors="replace") for p in Path(root).glob("*.tex")}
    item = Item("legwork/copy-0", "paper_copy", "real", None, {"paper_id": "legwork", "copy": 0,
                                                              "main_file": "ms.tex", "files": files})
    (out,) = review(reviewer, [item])
    assert out.error is None
    assert out.detail["statements"] >= 5 and out.detail["flags"] == []


def test_percentages_of_a_split_are_checked_to_stay_within_100(reviewer):
    text = (r"The posterior holds 90\% (with the remaining 40\% in the complementary case)." "\n"
            r"Of all runs, 60\% converge and the remaining 40\% do not.")
    item = Item("P3/copy-1", "paper_copy", "hand", None, {"paper_id": "P3", "copy": 1, "files": {"main.tex": text}})
    (out,) = review(reviewer, [item])
    assert [f["quote"] for f in out.detail["flags"]] == [r"90\% (with the remaining 40\%"]
    assert out.detail["check_outcomes"] == {"refuted": 1, "confirmed": 1}
