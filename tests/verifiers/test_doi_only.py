"""doi_only: a resolving DOI is VALID, an authoritative 'no' is HALLUCINATED, anything else UNCERTAIN."""

from __future__ import annotations

import asyncio
from pathlib import Path

from clients.errors import RateLimitedError, TransientError
from index.offline_index import open_index
from storage.records import Item
from tests.verifiers.sources import FailingSource, NamedIndex
from verifiers.registry import SystemSpec, build_system
from verifiers.system import RunContext

CTX = RunContext(run_id="test", snapshot="2026-05-05")


def item(item_id: str, **fields: str) -> Item:
    return Item(item_id, "citation", "test", "dev", {"bibtex_type": "inproceedings", "fields": fields})


ITEMS = [
    item("real", title="AdapLeR", author="Ali Modarressi", year="2022", doi="https://doi.org/10.18653/v1/2022.acl-long.1"),
    item("unknown", title="X", author="A B", year="2022", doi="10.18653/v1/2022.acl-long.99999"),
    item("malformed", title="X", author="A B", year="2022", doi="11.5/abc"),
    item("nodoi", title="X", author="A B", year="2022"),
]


def run(system, items=ITEMS):  # noqa: ANN001, ANN201
    return {o.item_id: o for o in asyncio.run(system.run(items, CTX))}


def test_offline_index_only_never_calls_absence_fabrication(real_index_path: Path) -> None:
    out = run(build_system(SystemSpec("doi_only", {"sources": ["offline_index"], "index_path": str(real_index_path)})))
    assert out["real"].label == "VALID" and out["real"].api_calls == 1 and out["real"].api_sources_queried == ["offline_index"]
    assert out["unknown"].label == "UNCERTAIN" and "not an authoritative" in out["unknown"].reason
    assert out["malformed"].label == "HALLUCINATED" and out["malformed"].predicted_type == "fabricated_doi"
    assert out["malformed"].api_calls == 0
    assert out["nodoi"].label == "UNCERTAIN" and out["nodoi"].subtests == {"doi_resolves": None}


def test_authoritative_or_closed_world_absence_is_fabrication(real_index_path: Path) -> None:
    registry = NamedIndex("doi_org", open_index(real_index_path))
    out = run(build_system(SystemSpec("doi_only", {"sources": [registry]})))
    assert out["unknown"].label == "HALLUCINATED" and out["unknown"].confidence == 0.9
    closed = run(build_system(SystemSpec("doi_only", {"sources": ["offline_index"], "index_path": str(real_index_path),
                                                       "closed_world": True})))
    assert closed["unknown"].label == "HALLUCINATED" and closed["real"].label == "VALID"


def test_outage_and_rate_limit_are_uncertain_never_hallucinated(real_index_path: Path) -> None:
    down = FailingSource("doi_org", TransientError("HTTP 503", source="doi_org", status=503))
    limited = FailingSource("crossref", RateLimitedError("slow down", retry_after=30, source="crossref"))
    out = run(build_system(SystemSpec("doi_only", {"sources": [down, limited]})))
    for key in ("real", "unknown"):
        assert out[key].label == "UNCERTAIN"
        assert "TransientError: doi_org" in out[key].reason and "RateLimitedError: crossref" in out[key].reason
        assert out[key].api_calls == 2 and out[key].api_sources_queried == ["doi_org", "crossref"]
        assert out[key].detail["outage_sources"] == ["doi_org", "crossref"]
    assert down.calls == 2 and limited.calls == 2
    # one source down, another resolves: the DOI exists
    mixed = run(build_system(SystemSpec("doi_only", {"sources": [down, "offline_index"], "index_path": str(real_index_path)})))
    assert mixed["real"].label == "VALID" and "outage_sources" not in mixed["real"].detail
    assert mixed["unknown"].label == "UNCERTAIN" and mixed["unknown"].detail["outage_sources"] == ["doi_org"]
    assert out["malformed"].label == "HALLUCINATED" and out["malformed"].detail is None  # decided without a source
