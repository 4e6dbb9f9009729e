"""The citation verifiers over the real `clients/` sources against the 127.0.0.1 replay server
(tests/helpers/bib_server.py): recorded answers, injected 5xx / 429, true call counts."""

from __future__ import annotations

import asyncio

import pytest

from clients.http import HttpOptions
from clients.retry import RetryPolicy
from storage.records import Item
from tests.helpers.bib_server import Fault, start_bib_server
from verifiers.registry import SystemSpec, build_system
from verifiers.system import RunContext

CTX = RunContext(run_id="test", snapshot="2026-05-05")
XGBOOST = {"title": "XGBoost: A Scalable Tree Boosting System", "author": "Tianqi Chen and Carlos Guestrin",
           "year": "2016", "booktitle": "KDD", "doi": "10.1145/2939672.2939785"}


@pytest.fixture(scope="module")
def server():  # noqa: ANN201
    bib = start_bib_server()
    yield bib
    bib.stop()


def item(item_id: str, **fields: str) -> Item:
    return Item(item_id, "citation", "test", "dev", {"bibtex_type": "inproceedings", "fields": fields})


def options(server, *names: str) -> dict:  # noqa: ANN001
    fast = HttpOptions(retry=RetryPolicy(max_attempts=2, base_wait=0.01, max_wait=0.05), timeout=5.0, mailto=None)
    return {"http_options": fast, "base_urls": {n: server.base_url(n) for n in names}}


def test_doi_only_against_recorded_crossref_and_doi_org(server) -> None:  # noqa: ANN001
    system = build_system(SystemSpec("doi_only", {"sources": ["doi_org", "crossref"],
                                                  "client_options": options(server, "doi_org", "crossref")}))
    items = [item("real", **XGBOOST), item("fake", **{**XGBOOST, "doi": "10.1145/0000000.9999999"})]
    out = {o.item_id: o for o in asyncio.run(system.run(items, CTX))}
    assert out["real"].label == "VALID" and out["real"].api_sources_queried == ["doi_org", "crossref"]
    assert out["fake"].label == "HALLUCINATED" and "doi_org" in out["fake"].reason  # the registry's own 404
    assert out["real"].api_calls == 2


def test_server_errors_give_uncertain_with_the_reason(server) -> None:  # noqa: ANN001
    server.inject("doi_org", *[Fault("500")] * 4)
    server.inject("crossref", *[Fault("429", retry_after=0.01)] * 4)
    system = build_system(SystemSpec("doi_only", {"sources": ["doi_org", "crossref"],
                                                  "client_options": options(server, "doi_org", "crossref")}))
    fake = item("fake", **{**XGBOOST, "doi": "10.1145/0000000.9999999"})
    (out,) = asyncio.run(system.run([fake], CTX))
    assert out.label == "UNCERTAIN" and "doi_org" in out.reason and "crossref" in out.reason
    assert out.predicted_type is None


def test_field_match_over_crossref_and_dblp(server) -> None:  # noqa: ANN001
    system = build_system(SystemSpec("field_match", {"sources": ["crossref", "dblp"],
                                                     "client_options": options(server, "crossref", "dblp")}))
    out = {o.item_id: o for o in asyncio.run(system.run([item("real", **XGBOOST)], CTX))}
    assert out["real"].label in ("VALID", "UNCERTAIN")
    assert out["real"].label != "HALLUCINATED", out["real"].reason
    assert out["real"].api_sources_queried == ["crossref", "dblp"] and out["real"].api_calls >= 3
