"""field_match never confirms a cited DOI or venue that nothing checked (issue 23, items 1 and 2).

Before: a fabricated DOI on a real paper whose record carries no DOI was VALID 0.90 (closed world
too), and an arXiv-only record (no venue, a 10.48550 DOI) confirmed any cited venue."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from clients.errors import NotFoundError, TransientError
from index.build import write_index
from index.offline_index import open_index
from storage.records import Item
from tests.verifiers.sources import FailingSource
from verifiers.citations.field_match import FieldMatchVerifier
from verifiers.system import RunContext

CTX = RunContext(run_id="test", snapshot="2026-05-05")
BLENDED = ("Economic Hyperparameter Optimization with Blended Search Strategy", ["Wang", "Wu", "Huang", "Saied"])
MONARCH = ("MonarchRT: Efficient Attention for Real-Time Video Generation", ["Agarwal", "Chen", "Luo"])
ONPOLICY = ("On-Policy Context Distillation for Language Models", ["Ye", "Dong", "Wu"])


def record(key: str, paper: tuple[str, list[str]], year: int, venue: str | None, doi: str | None,
           kind: str = "inproceedings") -> dict:  # fmt: skip
    return {"origin": "test", "key": key, "title": paper[0], "authors": [{"family": a, "given": ""} for a in paper[1]],
            "year": year, "venue": venue, "doi": doi, "arxiv_id": None, "type": kind, "file": None}


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("unchecked") / "index.parquet"
    write_index([record("blended", BLENDED, 2021, "ICLR", None),  # a real ICLR paper: no DOI on record
                 record("monarch", MONARCH, 2026, None, "10.48550/arxiv.2602.12271", "misc"),  # arXiv only
                 record("onpolicy-arxiv", ONPOLICY, 2025, None, "10.48550/arxiv.2602.12275", "misc"),
                 record("onpolicy", ONPOLICY, 2026, "NeurIPS", None)], path)  # ... and its published version
    return path


def cite(paper: tuple[str, list[str]], year: int, **fields: str) -> Item:
    authors = " and ".join(f"{a}, A." for a in paper[1])
    return Item("entry", "citation", "t", "dev",
                {"bibtex_type": "inproceedings", "fields": {"title": paper[0], "author": authors, "year": str(year),
                                                            **fields}})  # fmt: skip


def verdict(index_path: Path, entry: Item, closed_world: bool, *extra) -> object:  # noqa: ANN001
    system = FieldMatchVerifier([open_index(str(index_path)), *extra], closed_world=closed_world)
    (out,) = asyncio.run(system.run([entry], CTX))
    return out


@pytest.mark.parametrize("closed_world", [False, True])
def test_a_cited_doi_nothing_holds_is_never_valid(index_path: Path, closed_world: bool) -> None:
    fabricated = cite(BLENDED, 2021, booktitle="ICLR", doi="10.47281/bed.57189")
    out = verdict(index_path, fabricated, closed_world)
    assert (out.label, out.detail["decision_path"]) == ("UNCERTAIN", "unchecked"), out.reason
    assert "DOI 10.47281/bed.57189 unverified: not in offline_index" in out.reason
    assert out.subtests["doi_resolves"] is None and not out.detail.get("outage_sources")
    # the same citation without the DOI is confirmed by title, authors and venue
    assert verdict(index_path, cite(BLENDED, 2021, booktitle="ICLR"), closed_world).label == "VALID"


def test_an_authoritative_source_refutes_the_doi_and_its_outage_is_no_answer(index_path: Path) -> None:
    fabricated = cite(BLENDED, 2021, booktitle="ICLR", doi="10.47281/bed.57189")
    refuted = verdict(index_path, fabricated, False, FailingSource("doi_org", NotFoundError("no such DOI", status=404)))
    assert (refuted.label, refuted.predicted_type, refuted.detail["decision_path"]) == (
        "HALLUCINATED", "fabricated_doi", "doi_nonexistent")
    down = verdict(index_path, fabricated, False, FailingSource("doi_org", TransientError("HTTP 503", status=503)))
    assert down.label == "UNCERTAIN" and down.detail["outage_sources"] == ["doi_org"], down.reason


@pytest.mark.parametrize("venue", ["NeurIPS", "Symposium on Imaginary Learning Systems"])
def test_an_arxiv_only_record_does_not_confirm_a_cited_venue(index_path: Path, venue: str) -> None:
    entry = cite(MONARCH, 2026, booktitle=venue, doi="10.48550/arXiv.2602.12271")
    closed = verdict(index_path, entry, True)
    assert (closed.label, closed.predicted_type, closed.detail["decision_path"]) == (
        "HALLUCINATED", "preprint_as_published", "venue_unpublished"), closed.reason
    assert f"venue '{venue}' not confirmed" in closed.reason and "no published version" in closed.reason
    opened = verdict(index_path, entry, False)
    assert (opened.label, opened.detail["decision_path"]) == ("UNCERTAIN", "unchecked"), opened.reason
    assert opened.detail["unchecked"] == [f"venue '{venue}' unchecked: the matched record (offline_index) is an "
                                          "arXiv preprint with no venue, and no published version was found"]
    # cited as the preprint it is: confirmed
    assert verdict(index_path, cite(MONARCH, 2026, journal="arXiv preprint", doi="10.48550/arXiv.2602.12271"),
                   True).label == "VALID"  # fmt: skip


@pytest.mark.parametrize("closed_world", [False, True])
def test_the_published_version_decides_the_venue(index_path: Path, closed_world: bool) -> None:
    right = verdict(index_path, cite(ONPOLICY, 2026, booktitle="NeurIPS", doi="10.48550/arXiv.2602.12275"), closed_world)
    assert right.label == "VALID" and right.subtests["venue_correct"] is True, right.reason
    wrong = verdict(index_path, cite(ONPOLICY, 2026, booktitle="ICML", doi="10.48550/arXiv.2602.12275"), closed_world)
    assert (wrong.label, wrong.predicted_type) == ("HALLUCINATED", "wrong_venue"), wrong.reason
    assert "venue 'ICML' vs 'NeurIPS'" in wrong.reason
