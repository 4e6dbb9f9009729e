"""Import of reviews produced elsewhere: one Markdown or JSON file per copy."""

from __future__ import annotations

import asyncio
import json

from tests.adjudication.paper_copies import clean_item, injected_item
from verifiers.registry import SystemSpec, build_system
from verifiers.system import RunContext


def test_json_and_markdown_reviews_are_read_and_a_missing_file_is_an_input_failure(tmp_path):
    (tmp_path / "P1").mkdir()
    (tmp_path / "P1" / "copy-1.json").write_text(json.dumps({"review_text": "see issues", "issues": [
        {"quote": "Total & 130", "type": "Numerics", "description": "does not add up"}]}))
    (tmp_path / "P1__copy-0.md").write_text("# Review\n\n1. The claim \"mean ratio is 0.34\" lacks errors.\n2. Typo.\n")
    system = build_system(SystemSpec("paper_review_import", {"directory": str(tmp_path)}))
    missing = injected_item().__class__("P9/copy-2", "paper_copy", "hand", None, {})
    outs = asyncio.run(system.run([injected_item(), clean_item(), missing], RunContext("r", "2026-05-05")))
    assert outs[0].detail["flags"] == [{"flag_id": "P1/copy-1/f1", "quote": "Total & 130", "location": None,
                                        "type": "numerics", "description": "does not add up", "check": None}]
    assert outs[0].detail["prompt_style"] == "imported" and outs[0].detail["review_text"] == "see issues"
    assert [f["quote"] for f in outs[1].detail["flags"]] == ["mean ratio is 0.34", None]
    assert outs[2].error_kind == "input" and "P9/copy-2" in outs[2].error


def test_unreadable_json_is_a_parse_failure(tmp_path):
    (tmp_path / "P1__copy-0.json").write_text("{not json")
    system = build_system(SystemSpec("paper_review_import", {"directory": str(tmp_path)}))
    (out,) = asyncio.run(system.run([clean_item()], RunContext("r", "2026-05-05")))
    assert out.error_kind == "parse"
