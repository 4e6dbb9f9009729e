"""The citation verifiers over the real `clients/` sources against the 127.0.0.1 replay server
(tests/helpers/bib_server.py): recorded answers, injected 5xx / 429 / timeouts, true call counts,
and the outage contract: an answer that depended on a failed source is UNCERTAIN and carries
`detail["outage_sources"]`, which the run summary counts to withhold scores."""

from __future__ import annotations

import asyncio
import itertools

import pyarrow as pa
import pytest

from audits.summary import count_outage_answers
from clients.http import HttpOptions
from clients.outage_guard import OutageGuard
from clients.retry import RetryPolicy
from storage.records import Item, Output
from tests.helpers.bib_server import BibServer, Fault, start_bib_server
from verifiers.registry import SystemSpec, build_system
from verifiers.system import RunContext

_RUNS = itertools.count()


def ctx() -> RunContext:
    """A run of its own each time: the outage guard is per run (and process), so no history carries over."""
    return RunContext(run_id=f"test-{next(_RUNS)}", snapshot="2026-05-05")


XGBOOST = {"title": "XGBoost: A Scalable Tree Boosting System", "author": "Tianqi Chen and Carlos Guestrin",
           "year": "2016", "booktitle": "KDD", "doi": "10.1145/2939672.2939785"}


@pytest.fixture(scope="module")
def bib():  # noqa: ANN201
    bib = start_bib_server()
    yield bib
    bib.stop()


@pytest.fixture
def server(bib: BibServer) -> BibServer:
    """The module's server with no faults or counts left over from another test."""
    bib.faults.clear()
    bib.reset_stats()
    return bib


def item(item_id: str, **fields: str) -> Item:
    return Item(item_id, "citation", "test", "dev", {"bibtex_type": "inproceedings", "fields": fields})


def options(server, *names: str, timeout: float = 5.0, guard: OutageGuard | None = None) -> dict:  # noqa: ANN001
    fast = HttpOptions(retry=RetryPolicy(max_attempts=2, base_wait=0.01, max_wait=0.05), timeout=timeout,
                       mailto=None, guard=guard)  # fmt: skip
    return {"http_options": fast, "base_urls": {n: server.base_url(n) for n in names}}


def run_one(system, entry: Item) -> Output:  # noqa: ANN001
    (out,) = asyncio.run(system.run([entry], ctx()))
    return out


def outage_count(*outputs: Output) -> int:
    """What the lead's run summary counts, over the stored rows of these outputs."""
    return count_outage_answers(pa.Table.from_pylist([o.to_row("test", "s", 0) for o in outputs]))


MUIR = {"title": "Do doctors cause or prevent cerebral edema in children with diabetic ketoacidosis? "
                 "Cerebral edema in DKA", "author": "Andrew Muir", "year": "2000", "journal": "Pediatric Diabetes",
        "doi": "10.1046/j.1399543x.2000.010407.x"}
FAKE = item("fake", **{**XGBOOST, "doi": "10.1145/0000000.9999999"})


def test_doi_only_against_recorded_crossref_and_doi_org(server) -> None:  # noqa: ANN001
    system = build_system(SystemSpec("doi_only", {"sources": ["doi_org", "crossref"],
                                                  "client_options": options(server, "doi_org", "crossref")}))
    items = [item("real", **XGBOOST), item("fake", **{**XGBOOST, "doi": "10.1145/0000000.9999999"})]
    out = {o.item_id: o for o in asyncio.run(system.run(items, ctx()))}
    assert out["real"].label == "VALID" and out["real"].api_sources_queried == ["doi_org", "crossref"]
    assert out["fake"].label == "HALLUCINATED" and "doi_org" in out["fake"].reason  # the registry's own 404
    assert out["real"].api_calls == 2


def test_server_errors_give_uncertain_with_the_reason(server) -> None:  # noqa: ANN001
    server.inject("doi_org", *[Fault("500")] * 4)
    server.inject("crossref", *[Fault("429", retry_after=0.01)] * 4)
    system = build_system(SystemSpec("doi_only", {"sources": ["doi_org", "crossref"],
                                                  "client_options": options(server, "doi_org", "crossref")}))
    out = run_one(system, FAKE)
    assert out.label == "UNCERTAIN" and "doi_org" in out.reason and "crossref" in out.reason
    assert out.predicted_type is None and out.detail["outage_sources"] == ["doi_org", "crossref"]
    assert server.stats["doi_org"].statuses[500] == 2 and server.stats["crossref"].statuses[429] == 2


def test_field_match_over_crossref_and_dblp(server) -> None:  # noqa: ANN001
    system = build_system(SystemSpec("field_match", {"sources": ["crossref", "dblp"],
                                                     "client_options": options(server, "crossref", "dblp")}))
    out = {o.item_id: o for o in asyncio.run(system.run([item("real", **XGBOOST)], ctx()))}
    assert out["real"].label in ("VALID", "UNCERTAIN")
    assert out["real"].label != "HALLUCINATED", out["real"].reason
    assert out["real"].api_sources_queried == ["crossref", "dblp"] and out["real"].api_calls >= 3


def test_doi_only_marks_outage_sources_only_when_the_answer_depended_on_them(server) -> None:  # noqa: ANN001
    system = build_system(SystemSpec("doi_only", {"sources": ["doi_org", "crossref"],
                                                  "client_options": options(server, "doi_org", "crossref",
                                                                            timeout=0.3)}))
    server.inject("doi_org", Fault("500"), Fault("500"))
    server.inject("crossref", Fault("timeout", delay=1.0), Fault("timeout", delay=1.0))
    both_down = run_one(system, FAKE)
    assert both_down.label == "UNCERTAIN" and both_down.detail["outage_sources"] == ["doi_org", "crossref"]
    assert "HTTP 500" in both_down.reason and "timeout" in both_down.reason
    assert both_down.api_calls == 2 and server.stats["crossref"].faults["timeout"] == 2
    # the registry down but Crossref resolves the DOI: VALID, no outage to count
    server.inject("doi_org", Fault("500"), Fault("500"))
    resolved = run_one(system, item("real", **XGBOOST))
    assert resolved.label == "VALID" and "outage_sources" not in resolved.detail
    # the registry down and Crossref (not authoritative) says 404: undecided because of doi_org
    server.inject("doi_org", Fault("500"), Fault("500"))
    undecided = run_one(system, FAKE)
    assert undecided.label == "UNCERTAIN" and undecided.detail["outage_sources"] == ["doi_org"]
    assert "crossref" not in undecided.reason
    # both answer: a definite verdict, nothing to count
    answered = run_one(system, FAKE)
    assert answered.label == "HALLUCINATED" and "outage_sources" not in answered.detail, answered.reason
    assert outage_count(both_down, resolved, undecided, answered) == 2


def test_outage_guard_refusals_are_outages_with_no_network_call(server) -> None:  # noqa: ANN001
    guard = OutageGuard(window_seconds=60, threshold=0.5, min_events=1, cooldown_seconds=60)
    system = build_system(SystemSpec("doi_only", {"sources": ["crossref"],
                                                  "client_options": options(server, "crossref", guard=guard)}))
    server.inject("crossref", Fault("500"), Fault("500"))
    first = run_one(system, item("real", **XGBOOST))
    assert first.label == "UNCERTAIN" and first.detail["outage_sources"] == ["crossref"] and guard.is_down("crossref")
    sent = server.stats["crossref"].requests
    refused = run_one(system, item("real", **XGBOOST))
    assert refused.label == "UNCERTAIN" and "SourceOutageError" in refused.reason
    assert refused.detail["outage_sources"] == ["crossref"] and server.stats["crossref"].requests == sent == 2
    assert guard.report().refused == {"crossref": 1}


def test_field_match_outage_is_uncertain_with_outage_sources(server) -> None:  # noqa: ANN001
    system = build_system(SystemSpec("field_match", {"sources": ["crossref", "dblp"], "aggregation": "any_missing",
                                                     "client_options": options(server, "crossref", "dblp",
                                                                               timeout=0.3)}))
    server.inject("crossref", *[Fault("500")] * 4)  # DOI lookup and title search, two attempts each
    server.inject("dblp", *[Fault("timeout", delay=1.0)] * 4)
    down = run_one(system, item("real", **XGBOOST))
    assert down.label == "UNCERTAIN" and down.predicted_type is None
    assert down.detail["outage_sources"] == ["crossref", "dblp"] and down.detail["decision_path"] == "uncertain"
    assert "crossref doi lookup" in down.reason and "dblp title lookup" in down.reason
    # dblp down, crossref matches the entry (its title only with the recorded subtitle merged): decided
    server.faults.clear()
    server.inject("dblp", *[Fault("500")] * 4)
    decided = run_one(system, item("real", **MUIR))
    assert decided.label == "VALID", decided.reason
    assert decided.detail["sources"]["crossref"]["match_similarity"] == 1.0
    assert "outage_sources" not in decided.detail and decided.detail["sources"]["dblp"]["title"] == "error"
    assert outage_count(down, decided) == 1


def test_citeintegrity_rule_outage_is_uncertain_with_outage_sources(server) -> None:  # noqa: ANN001
    system = build_system(SystemSpec("citeintegrity", {"rule": "doi_membership", "sources": ["crossref"],
                                                       "client_options": options(server, "crossref")}))
    server.inject("crossref", Fault("429", retry_after=0.01), Fault("500"))
    out = run_one(system, item("real", **XGBOOST))
    assert out.label == "UNCERTAIN" and out.detail["outage_sources"] == ["crossref"]
    assert "HTTP 500" in out.reason and out.api_calls == 1 and server.stats["crossref"].requests == 2
    answered = run_one(system, item("real", **XGBOOST))
    assert answered.label == "VALID" and "outage_sources" not in answered.detail
