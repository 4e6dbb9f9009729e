"""The JSON output contract: strict, fenced, embedded, salvaged, and counted failures."""

from __future__ import annotations

import math

import pytest

from clients.errors import ParseError
from clients.llm_json import ParseStats, parse_json_answer

REQ = ("label", "confidence")
OPT = ("reason",)


def test_strict_fenced_and_embedded_objects_are_read_with_their_method():
    assert parse_json_answer('{"label": "VALID", "confidence": 0.8}', REQ).method == "strict"
    fenced = parse_json_answer('Here:\n```json\n{"label": "HALLUCINATED", "confidence": 0.9}\n```\nbye', REQ)
    assert fenced.method == "fenced" and fenced.data["label"] == "HALLUCINATED"
    embedded = parse_json_answer('My verdict is {"label": "VALID", "confidence": 0.7, "reason": "a {b} c"} ok', REQ)
    assert embedded.method == "embedded" and embedded.data["reason"] == "a {b} c"


def test_truncated_object_is_salvaged_only_when_required_fields_are_whole():
    cut = '```json\n{"label": "VALID", "confidence": 0.95, "reason": "The DOI resol'
    salvaged = parse_json_answer(cut, REQ, OPT)
    assert salvaged.method == "salvaged"
    assert salvaged.data == {"label": "VALID", "confidence": 0.95}
    with pytest.raises(ParseError):
        parse_json_answer('{"label": "VALID", "confid', REQ, OPT)


@pytest.mark.parametrize("text", ["", "   ", "The citation looks real to me.", '["VALID", 0.9]', '{"label": "VALID"}'])
def test_answers_without_a_usable_object_raise_parse_error(text):
    with pytest.raises(ParseError):
        parse_json_answer(text, REQ)


def test_parse_stats_keep_failures_apart():
    stats = ParseStats()
    assert math.isnan(stats.failure_rate)
    for method in ("strict", "strict", "salvaged", None):
        stats.record(method)
    assert stats.attempted == 4 and stats.failed == 1
    assert stats.failure_rate == 0.25
    assert stats.methods == {"strict": 2, "salvaged": 1}
