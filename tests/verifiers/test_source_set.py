"""verifiers/citations/source_set.py: lookups classified from the real clients/errors.py tree, and the one
outage helper (`no_evidence`) every rule-based citation verifier uses."""

from __future__ import annotations

import asyncio

import pytest

from clients.errors import NotFoundError, RateLimitedError, SourceOutageError
from tests.verifiers.sources import FailingSource
from verifiers.citations.source_set import CountedSource, Lookup, no_evidence, outage_sources


def ask(error: Exception) -> Lookup:
    return asyncio.run(CountedSource(FailingSource("crossref", error)).doi("10.1/x"))


def test_not_found_is_absent_and_every_other_failure_is_an_error() -> None:
    assert ask(NotFoundError("gone", source="crossref", status=404)).status == "absent"
    down = ask(SourceOutageError("marked unavailable", source="crossref"))
    assert down.status == "error" and down.reason.startswith("SourceOutageError: crossref")
    assert ask(RateLimitedError("slow down", source="crossref")).status == "error"
    assert ask(KeyError("bug in an adapter")).status == "error"


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
