"""verifiers/citations/source_set.py: lookups classified from the real clients/errors.py tree, and the one
outage helper (`no_evidence`) every rule-based citation verifier uses."""

from __future__ import annotations

import asyncio
import re

import pytest

from clients.errors import (
    AuthError,
    BadRequestError,
    CacheMissError,
    NotFoundError,
    ParseError,
    RateLimitedError,
    SourceOutageError,
    TransientError,
)
from storage.records import Item
from tests.verifiers.sources import FailingSource
from verifiers.citations.field_match import FieldMatchVerifier
from verifiers.citations.source_set import CountedSource, Lookup, SourceFailure, no_evidence, outage_sources
from verifiers.system import RunContext


def ask(error: Exception) -> Lookup:
    return asyncio.run(CountedSource(FailingSource("crossref", error)).doi("10.1/x"))


def test_not_found_is_absent_and_only_an_outage_is_an_error() -> None:
    assert ask(NotFoundError("gone", source="crossref", status=404)).status == "absent"
    down = ask(SourceOutageError("marked unavailable", source="crossref"))
    assert down.status == "error" and down.reason.startswith("SourceOutageError: crossref")
    assert ask(RateLimitedError("slow down", source="crossref")).status == "error"
    assert ask(TransientError("HTTP 503", source="crossref", status=503)).status == "error"


@pytest.mark.parametrize("error", [KeyError("title"), TypeError("'NoneType' is not subscriptable"),
                                   ParseError("unreadable body", source="crossref"),
                                   BadRequestError("bad query", source="crossref", status=400)])
def test_a_parse_or_programming_error_is_the_items_failure_not_an_outage(error: Exception) -> None:
    with pytest.raises(SourceFailure) as caught:
        ask(error)
    assert caught.value.reason.startswith(f"crossref doi lookup failed: {type(error).__name__}")
    assert "sources.py:" in caught.value.reason  # the traceback, summarised: where the adapter broke


def test_a_replay_without_the_answer_is_skipped_not_an_error_nor_an_outage() -> None:
    lookup = ask(CacheMissError("not in frozen cache", source="crossref"))
    assert lookup.status == "skipped" and "not in frozen cache" in lookup.reason


def test_an_auth_failure_is_raised_to_stop_the_run() -> None:
    with pytest.raises(AuthError, match="no key"):
        ask(AuthError("no key", source="crossref", status=401))


ENTRY = Item("e1", "citation", "c", "dev", {"bibtex_type": "article", "fields": {
    "title": "Attention Is All You Need", "author": "Vaswani, Ashish", "year": "2017", "doi": "10.5555/3295222.3295349"}})


def run_field_match(error: Exception) -> list:
    verifier = FieldMatchVerifier([FailingSource("crossref", error)])
    return asyncio.run(verifier.run([ENTRY], RunContext("r", "2026-01-01")))


def test_field_match_errors_the_item_on_a_source_bug_and_stops_on_auth() -> None:
    # before: KeyError and ParseError were outages (UNCERTAIN, outage_sources), repeated by every resume
    (bug,) = run_field_match(KeyError("container-title"))
    assert (bug.label, bug.error_kind) == (None, "system") and not (bug.detail or {}).get("outage_sources")
    assert re.fullmatch(r"crossref (doi|title) lookup failed: KeyError: 'container-title' \(at sources\.py:\d+ .*\)",
                        bug.error), bug.error
    (unreadable,) = run_field_match(ParseError("unreadable body", source="crossref"))
    assert unreadable.error_kind == "parse" and "ParseError: crossref: unreadable body" in unreadable.error
    (down,) = run_field_match(TransientError("HTTP 503", source="crossref", status=503))
    assert down.label == "UNCERTAIN" and down.detail["outage_sources"] == ["crossref"] and down.error is None
    with pytest.raises(AuthError):
        run_field_match(AuthError("invalid key", source="crossref", status=401))


def test_no_evidence_names_each_failure_once_and_lists_the_sources() -> None:
    lookups = [Lookup("doi_org", "doi", "error", reason="TransientError: 500"),
               Lookup("crossref", "doi", "absent"),
               Lookup("dblp", "title", "error", reason="timeout"),
               Lookup("dblp", "doi", "error", reason="timeout"),
               Lookup("doi_org", "doi", "error", reason="TransientError: 500")]
    assert outage_sources(lookups) == ["doi_org", "dblp"]
    out = no_evidence("e1", lookups, 0.5, detail={"doi": "10.1/x"}, api_calls=5, subtests={"doi_resolves": None})
    assert (out.label, out.confidence, out.predicted_type, out.api_calls) == ("UNCERTAIN", 0.5, None, 5)
    assert out.detail == {"doi": "10.1/x", "outage_sources": ["doi_org", "dblp"]}
    assert out.reason == ("no evidence: doi_org doi lookup: TransientError: 500; dblp title lookup: timeout; "
                          "dblp doi lookup: timeout")
    with pytest.raises(ValueError, match="at least one failed lookup"):
        no_evidence("e2", [Lookup("crossref", "doi", "absent")], 0.5)
