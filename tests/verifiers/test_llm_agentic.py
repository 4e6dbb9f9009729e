"""llm_agentic: a scripted tool-use dialogue from the replay server, real litellm tool calls, and
an in-memory bibliographic source implementing the `BibSource` protocol."""

from __future__ import annotations

import asyncio
import json

import pytest

from clients.bib_record import Author, BibRecord
from clients.errors import SourceOutageError
from clients.lent_services import RunServices
from clients.llm_gateway import LLMServices
from storage.records import Item
from tests.helpers.replay_server import replay_server, server_stats
from verifiers.citations.llm_agentic import aggregate
from verifiers.registry import SystemSpec, build_system
from verifiers.system import RunContext

pytestmark = pytest.mark.integration  # a replay server subprocess

KNOWN = "Attention Is All You Need"


class MemorySource:
    """A tiny offline index: exact records, title search by substring."""

    def __init__(self, name: str, records: list[BibRecord], down: bool = False) -> None:
        self.name, self.records, self.down, self.calls = name, records, down, 0

    async def lookup_doi(self, doi: str) -> BibRecord | None:
        self.calls += 1
        if self.down:
            raise SourceOutageError("marked down", source=self.name)
        return next((r for r in self.records if r.doi == doi), None)

    async def search_title(self, title: str, limit: int = 5) -> list[BibRecord]:
        self.calls += 1
        if self.down:
            raise SourceOutageError("marked down", source=self.name)
        return [r for r in self.records if title.lower() in (r.title or "").lower()][:limit]


def item(key: str, title: str) -> Item:
    return Item(key, "citation", "t", None, {"bibtex_type": "inproceedings", "fields": {
        "title": title, "author": "Ashish Vaswani and Noam Shazeer", "year": "2017", "booktitle": "NeurIPS"}})


def rules(query_source: str) -> list[dict]:
    verdict = json.dumps({"label": "HALLUCINATED", "confidence": 0.8, "reason": "lookup evidence"})
    call = [{"id": "call_1", "name": f"search_{query_source}", "arguments": json.dumps({"query": KNOWN})}]
    return [{"match": {"last_role": "tool"}, "response": {"text": verdict, "model_id": "m-2026"}},
            {"match": {"contains": "BibTeX entry"}, "response": {"text": None, "tool_calls": call}}]


def run(url: str, items: list[Item], provided: dict, tmp_path, **args):
    system = build_system(SystemSpec("llm_agentic", {"model": "openai/agent", "api_base": f"{url}/v1", **args}))
    ctx = RunContext("r", "2026-05-05", cache_dir=str(tmp_path / args.get("aggregation", "model")),
                     services=RunServices("r", "2026-05-05", llm=LLMServices(), lent_sources=provided,
                                          source_names=tuple(sorted(provided))))
    return system, asyncio.run(system.run(items, ctx))


def test_tool_calls_evidence_and_the_aggregation_rules(tmp_path):
    memory = MemorySource("memory", [BibRecord("memory", KNOWN, (Author("Vaswani", "Ashish"),), 2017, "NeurIPS")])
    empty = MemorySource("empty", [])
    with replay_server(recordings=rules("memory"), tmp=tmp_path) as url:
        _, [out] = run(url, [item("a", KNOWN)], {"memory": memory, "empty": empty}, tmp_path)
        assert out.label == "HALLUCINATED" and out.confidence == 0.8
        assert out.api_calls == 1 and out.api_sources_queried == ["memory"] and memory.calls == 1
        assert out.detail["evidence"] == {"memory": "match"} and out.detail["model_calls"] == 2
        assert out.model_id == "m-2026" and out.tokens_in > 0
        assert out.detail["labels_by_rule"] == {"model": "HALLUCINATED", "consensus": "UNCERTAIN",
                                                "any_no_match": "HALLUCINATED"}
        _, [cons] = run(url, [item("a", KNOWN)], {"memory": memory, "empty": empty}, tmp_path, aggregation="consensus")
        assert (cons.label, cons.confidence) == ("UNCERTAIN", 0.5)
        assert server_stats(url)["requests"] == 4


def test_source_outage_is_error_evidence_never_absence(tmp_path):
    down = MemorySource("memory", [], down=True)
    with replay_server(recordings=rules("memory"), tmp=tmp_path) as url:
        _, [out] = run(url, [item("a", KNOWN)], {"memory": down}, tmp_path, aggregation="any_no_match")
    assert out.detail["evidence"] == {"memory": "error"}
    assert out.detail["labels_by_rule"]["any_no_match"] == "HALLUCINATED"  # the model's own verdict, not absence
    assert aggregate("VALID", {"memory": "error"})["any_no_match"] == "VALID"
    assert aggregate("VALID", {"memory": "absent"})["any_no_match"] == "HALLUCINATED"


def test_model_that_never_commits_within_k_calls_gets_uncertain(tmp_path):
    loop = [{"id": "c", "name": "search_memory", "arguments": json.dumps({"query": "x"})}]
    endless = [{"match": {}, "response": {"text": None, "tool_calls": loop}}]
    memory = MemorySource("memory", [])
    with replay_server(recordings=endless, tmp=tmp_path) as url:
        system, [out] = run(url, [item("a", "Unknown")], {"memory": memory}, tmp_path, max_tool_calls=2)
    assert (out.label, out.confidence) == ("UNCERTAIN", 0.5) and out.detail["cap_exceeded"]
    assert out.api_calls == 2 and out.detail["model_calls"] == 3 and memory.calls == 2


def test_missing_sources_fail_every_item_with_the_reason(tmp_path):
    with replay_server(recordings=rules("memory"), tmp=tmp_path) as url:
        _, outs = run(url, [item("a", KNOWN), item("b", "B")], {}, tmp_path, sources=["nosuch_source"])
        _, none = run(url, [item("a", KNOWN)], {}, tmp_path)  # the run lends none and the system names none
    assert all(o.error_kind == "system" and "sources not provided by the run: ['nosuch_source']" in o.error
               for o in outs)  # fmt: skip
    assert none[0].error_kind == "system" and "needs at least one bibliographic source" in none[0].error
