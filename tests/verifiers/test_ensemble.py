"""ensemble: majority and confidence-weighted votes over registered systems."""

from __future__ import annotations

import asyncio

import pytest

from clients.lent_services import RunServices
from clients.llm_gateway import LLMServices
from storage.records import Item, Output
from tests.helpers.replay_server import replay_server
from verifiers.ensemble import combine
from verifiers.registry import SystemSpec, build_system
from verifiers.system import RunContext

pytestmark = pytest.mark.integration  # a replay server subprocess

ITEM = Item("x", "citation", "t", None, {"bibtex_type": "article", "fields": {
    "title": "T", "author": "Ada Lovelace and Alan Turing", "year": "2021", "journal": "Nature"}})


def members(url: str) -> list[dict]:
    return [
        {"name": "prescreen", "label": "rules"},  # VALID @ 0.60 (no rule fires)
        {"name": "prescreen", "args": {"reference_year": 2000}, "label": "rules-2000"},  # future year: HALLUCINATED @ 0.95
        {"name": "llm_zero_shot", "args": {"model": "openai/m", "api_base": f"{url}/v1"}, "label": "llm"},
    ]


def test_votes_over_registered_members(tmp_path):
    ctx = RunContext("r", "2026-05-05", cache_dir=str(tmp_path), services=RunServices("test", "", llm=LLMServices()))
    with replay_server("--default-content", '{"label": "HALLUCINATED", "confidence": 0.9}') as url:
        for rule in ("majority", "confidence_weighted"):
            system = build_system(SystemSpec("ensemble", {"members": members(url), "rule": rule}))
            [out] = asyncio.run(system.run([ITEM], ctx))
            assert out.label == "HALLUCINATED"
            assert abs(out.confidence - (0.4 + 0.95 + 0.9) / 3) < 1e-12
            assert out.detail["votes"]["rules"] == ("VALID", 0.6) and out.tokens_in > 0


def test_ties_abstain_and_errored_members_do_not_vote():
    valid, flag = Output("x", label="VALID", confidence=0.9), Output("x", label="HALLUCINATED", confidence=0.6)
    assert combine([valid, flag], "majority") == ("UNCERTAIN", 0.5)
    label, confidence = combine([valid, flag], "confidence_weighted")
    assert label == "VALID" and abs(confidence - 0.65) < 1e-12  # mean P(H) = (0.1 + 0.6) / 2


def test_no_member_answering_is_an_error(tmp_path):
    ctx = RunContext("r", "2026-05-05", cache_dir=str(tmp_path), services=RunServices("test", "", llm=LLMServices()))
    with replay_server("--default-content", "not json") as url:
        system = build_system(SystemSpec("ensemble", {"members": [members(url)[2]]}))
        [out] = asyncio.run(system.run([ITEM], ctx))
    assert out.label is None and out.error_kind == "system" and "parse" in out.error
