"""Typed records that cross rooms (storage/records.py): closed sets checked at construction, the
paper review detail one model with the bytes it always had, `SystemSpec` data in storage."""

from __future__ import annotations

import asyncio
import json

import pytest

from adjudication.papers.controls import control_cases
from adjudication.papers.detection import DetectionMatcher
from storage import records
from storage.records import Output, PaperReview, SystemSpec


@pytest.mark.parametrize("fields", [
    {"error": "boom", "error_kind": "oops"},           # an error kind outside ErrorKind
    {"label": "MAYBE", "confidence": 0.5},             # a label outside Label
    {"label": "valid", "confidence": 0.5},
    {"label": "VALIDATED", "detail": {"flags": []}},   # a labelled review is still checked
])  # fmt: skip
def test_output_refuses_values_outside_the_literals(fields: dict) -> None:
    with pytest.raises(ValueError, match="item i1: (label|error_kind) must be one of"):
        Output("i1", **fields)


def test_the_literals_are_the_checked_sets() -> None:
    assert records.LABELS == ("VALID", "HALLUCINATED", "UNCERTAIN")
    assert set(records.ERROR_KINDS) == {"input", "provider", "parse", "outage", "system", "budget"}
    assert Output.failed("i1", "no file", "input").error_kind == "input"


def test_a_review_detail_keeps_its_keys_in_order_and_bytes() -> None:
    flags = [{"flag_id": "p/copy-1/f1", "quote": "x = 2", "location": None, "type": None, "description": "d",
              "check": None}]  # fmt: skip
    as_built_before = {"review_text": "r", "prompt_style": "control", "flags": flags}
    review = PaperReview(review_text="r", prompt_style="control", flags=flags)
    assert json.dumps(review.to_detail(), ensure_ascii=False) == json.dumps(as_built_before, ensure_ascii=False)
    mechanical = PaperReview(review_text="m", prompt_style="mechanical", flags=[], check_outcomes={"verified": 2},
                             statements=2, outcomes_by_kind={})  # fmt: skip
    assert list(mechanical.to_detail()) == ["review_text", "prompt_style", "flags", "check_outcomes", "statements",
                                            "outcomes_by_kind"]  # fmt: skip


def test_a_prompt_style_outside_the_closed_set_is_refused() -> None:
    with pytest.raises(ValueError, match="prompt_style"):
        PaperReview(review_text="r", prompt_style="mechanic", flags=[])


def test_an_output_row_reads_back_as_a_typed_review() -> None:
    detail = PaperReview(review_text="r", prompt_style="free_form", flags=[], shown_spans=[{"file": "a", "start": 0,
                                                                                            "end": 3}]).to_detail()  # fmt: skip
    row = Output("p/copy-1", detail=detail, api_calls=1).to_row("run", "sys", 0)
    output = Output.from_row(row)
    assert output.detail == detail and output.api_calls == 1
    review = output.detail_as(PaperReview)
    assert review.prompt_style == "free_form" and review.shown_spans == [{"file": "a", "start": 0, "end": 3}]
    with pytest.raises(ValueError, match="item p/copy-1: detail is not a PaperReview"):
        Output("p/copy-1", "UNCERTAIN", 0.0, detail={"outage_sources": ["checkers"]}).detail_as(PaperReview)


def test_a_review_outside_the_contract_is_unscored_and_named() -> None:
    truth = {"paper_id": "p", "copy": 1, "injections": [{"injection_id": "p/copy-1/i1", "file": "main.tex",
                                                         "start": 0, "end": 1, "error_type": "numerics"}]}  # fmt: skip
    output = {"item_id": "p/copy-1", "error": None, "detail_json": json.dumps({"review": "no style, no flags"})}
    (row,) = asyncio.run(DetectionMatcher([]).adjudicate(output, truth, {"main.tex": "x"}, "main.tex"))
    assert row["outcome"] == "unscored"
    assert "item p/copy-1: detail is not a PaperReview" in json.loads(row["detail_json"])["unscored_reason"]


def test_controls_build_typed_reviews() -> None:
    payloads = {"p/copy-1": {"files": {"main.tex": "The value is large. It was measured twice in 2020."}}}
    truths = {"p/copy-1": {"paper_id": "p", "copy": 1, "clean": False}}
    for case in control_cases(payloads, truths, {}):
        review = Output.from_row(case).detail_as(PaperReview)
        assert review.prompt_style == "control"


def test_system_spec_is_storage_data_and_the_registry_adds_identity() -> None:
    from verifiers.registry import SystemSpec as RegistrySpec

    plain = SystemSpec("field_match", {"index_path": "x.jsonl", "max_concurrency": 8}, "fm")
    known = RegistrySpec("field_match", {"index_path": "x.jsonl", "max_concurrency": 8}, "fm")
    assert isinstance(known, SystemSpec) and known.to_dict() == plain.to_dict() and known.display_name == "fm"
    # the registry knows max_concurrency is a runtime argument: not hashed
    assert known.config_hash() == RegistrySpec("field_match", {"index_path": "x.jsonl"}).config_hash()
    assert plain.config_hash() != known.config_hash()  # storage alone knows no runtime arguments
    assert SystemSpec("prescreen").config_hash() == RegistrySpec("prescreen").config_hash()
