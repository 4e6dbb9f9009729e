"""cascade: prescreen first, the LLM only on its UNCERTAIN residue, both scoring stances."""

from __future__ import annotations

import asyncio

import pytest

from clients.lent_services import RunServices
from clients.llm_gateway import LLMServices
from storage.records import Item
from tests.helpers.replay_server import replay_server, server_stats
from verifiers.registry import SystemSpec, build_system
from verifiers.system import RunContext

pytestmark = pytest.mark.integration  # a replay server subprocess

ITEMS = [
    Item("future", "citation", "t", None, {"bibtex_type": "article", "fields": {
        "title": "A", "author": "Ada Lovelace and Alan Turing", "year": "2031", "journal": "Nature"}}),
    Item("fine", "citation", "t", None, {"bibtex_type": "article", "fields": {
        "title": "B", "author": "Ada Lovelace and Alan Turing", "year": "2020", "journal": "Nature"}}),
    Item("gap", "citation", "t", None, {"bibtex_type": "article", "fields": {
        "title": "C", "author": "Ada Lovelace and Alan Turing", "year": "2020"}}),
]


def cascade(url: str, mode: str):
    stage2 = {"name": "llm_zero_shot", "args": {"model": "openai/stage2", "api_base": f"{url}/v1"}}
    return build_system(SystemSpec("cascade", {"stage2": stage2, "mode": mode}))


def run(system, tmp_path):
    ctx = RunContext("r", "2026-05-05", cache_dir=str(tmp_path), services=RunServices("test", "", llm=LLMServices()))
    return {o.item_id: o for o in asyncio.run(system.run(ITEMS, ctx))}


def test_only_the_uncertain_residue_reaches_the_llm_and_a_verdict_there_decides(tmp_path):
    with replay_server("--default-content", '{"label": "VALID", "confidence": 0.7}') as url:
        out = run(cascade(url, "aggressive"), tmp_path)
        assert server_stats(url)["requests"] == 2  # "gap" (UNCERTAIN) and "fine" (no rule fired: defers)
    assert (out["future"].label, out["future"].detail["stage"]) == ("HALLUCINATED", 1)
    assert out["future"].tokens_in is None and out["future"].detail["decided_by"] == "prescreen"
    # prescreen's "no rule fired" VALID at 0.60 found nothing: it defers instead of deciding
    assert (out["fine"].label, out["fine"].detail["stage"]) == ("VALID", 2)
    assert [(t["system"], t["label"], t["confidence"]) for t in out["fine"].detail["trail"]] == [
        ("prescreen", "VALID", 0.6), ("llm_zero_shot", "VALID", 0.7)]
    assert (out["gap"].label, out["gap"].confidence, out["gap"].detail["stage"]) == ("VALID", 0.7, 2)
    assert out["gap"].tokens_in > 0


def test_residual_uncertain_is_kept_or_flagged_at_055_by_mode(tmp_path):
    with replay_server("--default-content", '{"label": "UNCERTAIN", "confidence": 0.4}') as url:
        conservative = run(cascade(url, "conservative"), tmp_path / "c")["gap"]
        aggressive = run(cascade(url, "aggressive"), tmp_path / "a")["gap"]
    assert (conservative.label, conservative.confidence) == ("UNCERTAIN", 0.4)
    assert (aggressive.label, aggressive.confidence) == ("HALLUCINATED", 0.55)
    for out in (conservative, aggressive):
        assert out.detail["conservative_label"] == "UNCERTAIN" and out.detail["aggressive_label"] == "HALLUCINATED"


def test_stage2_parse_failure_is_residual_not_a_verdict(tmp_path):
    with replay_server("--default-content", "no idea") as url:
        out = run(cascade(url, "conservative"), tmp_path)["gap"]
    assert out.label == "UNCERTAIN" and out.detail["stage2_error"].startswith("parse")


def test_four_stage_cascade_records_which_stage_decided(tmp_path):
    """prescreen -> closed-world index -> open-world index -> LLM: each item stops at the first
    stage with a confident verdict; the LLM sees only what is still undecided."""
    from index.build import IndexSource, build_index

    bib = tmp_path / "real.bib"
    bib.write_text("@article{b, title={Analytical Engines}, author={Ada Lovelace and Alan Turing}, year={2020}, "
                   "journal={Nature}}\n", encoding="utf-8")
    index = tmp_path / "idx.parquet"
    build_index([IndexSource("bibtex", str(bib))], index)
    items = [
        ITEMS[0],  # future year: prescreen
        Item("real", "citation", "t", None, {"bibtex_type": "article", "fields": {
            "title": "Analytical Engines", "author": "Ada Lovelace and Alan Turing", "year": "2020",
            "journal": "Nature"}}),
        Item("unknown", "citation", "t", None, {"bibtex_type": "article", "fields": {
            "title": "Difference Engines Revisited", "author": "Ada Lovelace", "year": "2020", "journal": "Nature"}}),
    ]
    with replay_server("--default-content", '{"label": "HALLUCINATED", "confidence": 0.8}') as url:
        stages = ["prescreen",
                  {"name": "field_match", "args": {"index_path": str(index)}, "label": "index"},
                  {"name": "llm_zero_shot", "args": {"model": "openai/last", "api_base": f"{url}/v1"}}]
        system = build_system(SystemSpec("cascade", {"stages": stages}))
        ctx = RunContext("r", "2026-05-05", cache_dir=str(tmp_path), services=RunServices("test", "", llm=LLMServices()))
        out = {o.item_id: o for o in asyncio.run(system.run(items, ctx))}
        assert server_stats(url)["requests"] == 1
    assert {k: (o.label, o.detail["decided_by"]) for k, o in out.items()} == {
        "future": ("HALLUCINATED", "prescreen"), "real": ("VALID", "index"), "unknown": ("HALLUCINATED", "llm_zero_shot")}
    assert [t["label"] for t in out["unknown"].detail["trail"]] == ["VALID", "UNCERTAIN", "HALLUCINATED"]
    assert out["real"].detail["why"].startswith("matched in 1 source")


def test_cascade_needs_two_stages():
    import pytest

    with pytest.raises(ValueError, match="at least two stages"):
        build_system(SystemSpec("cascade", {"stages": ["prescreen"]}))


def test_llm_agentic_without_sources_is_refused():
    import pytest

    with pytest.raises(ValueError, match="at least one bibliographic source"):
        build_system(SystemSpec("llm_agentic", {"model": "openai/x", "sources": []}))
