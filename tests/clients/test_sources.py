"""Each source adapter against the local server answering with recorded real responses."""

from __future__ import annotations

import asyncio

import pytest

from clients.bib_record import Author
from clients.crossref import full_title, record_from_crossref
from clients.errors import BadRequestError
from clients.http import HttpOptions
from clients.retry import RetryPolicy
from clients.source import BibSource
from clients.source_catalog import SOURCE_CLASSES, make_source

XGBOOST_DOI = "10.1145/2939672.2939785"
XGBOOST_TITLE = "XGBoost: A Scalable Tree Boosting System"
AUTHORS = (Author("Chen", "Tianqi"), Author("Guestrin", "Carlos"))


def source(name, server):
    return make_source(
        name, HttpOptions(retry=RetryPolicy(max_attempts=2, base_wait=0.01)), server.base_url(name)
    )


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize("name", sorted(SOURCE_CLASSES))
def test_every_source_is_a_bibsource(name, bib_server):
    assert isinstance(source(name, bib_server), BibSource)


def test_crossref_doi_replayed_cassette(bib_server):
    rec = run(source("crossref", bib_server).lookup_doi("https://doi.org/10.1371/JOURNAL.PONE.0033693"))
    assert rec.title.startswith("Methylphenidate Exposure Induces Dopamine Neuron Loss")
    assert rec.authors[0] == Author("Sadasivan", "Shankar") and len(rec.authors) == 6
    assert (rec.year, rec.venue, rec.doi, rec.type) == (
        2012,
        "PLoS ONE",
        "10.1371/journal.pone.0033693",
        "journal-article",
    )
    assert rec.fetched_at and rec.raw["publisher"] == "Public Library of Science (PLoS)"


def test_crossref_and_doi_org_merge_the_subtitle_into_the_title(bib_server):
    doi = "10.1046/j.1399543x.2000.010407.x"  # recorded: title [...ketoacidosis?], subtitle [Cerebral edema in DKA]
    full = "Do doctors cause or prevent cerebral edema in children with diabetic ketoacidosis? Cerebral edema in DKA"
    assert run(source("crossref", bib_server).lookup_doi(doi)).title == full
    assert run(source("doi_org", bib_server).lookup_doi(doi)).title == full  # CSL-JSON, same field names
    widget = run(source("crossref", bib_server).lookup_doi("10.1145/3027385.3027428")).title
    assert widget.startswith("Widget, widget as you lead, I am performing well indeed! using results from an")


def test_crossref_subtitle_join_rules():
    xgboost = {"DOI": XGBOOST_DOI, "title": ["XGBoost"], "subtitle": ["A Scalable Tree Boosting System"]}
    assert record_from_crossref(xgboost).title == XGBOOST_TITLE  # Crossref's real shape for this DOI
    assert full_title({"title": ["Attention"], "subtitle": []}) == "Attention"
    assert full_title({"title": "Colon: ", "subtitle": "after"}) == "Colon: after"
    # a subtitle that only repeats the title (real Crossref record 10.1111/jfpp.12874) is not appended
    assert full_title({"title": ["Microbial Contamination in Peeled Chestnuts and Efficacy"],
                       "subtitle": ["MICROBIAL CONTAMINATION IN PEELED CHESTNUTS"]}) == (
        "Microbial Contamination in Peeled Chestnuts and Efficacy")
    assert full_title({"subtitle": ["orphan"]}) is None


def test_crossref_unknown_doi_is_none_not_error(bib_server):
    assert run(source("crossref", bib_server).lookup_doi("10.1371/notarealdoi")) is None
    assert bib_server.stats["crossref"].statuses[404] == 1


def test_crossref_bibliographic_search(bib_server):
    recs = run(source("crossref", bib_server).search_bibliographic(
        "Methylphenidate Exposure Induces Dopamine Neuron Loss and Activation of Microglia", 3))  # fmt: skip
    assert recs and recs[0].doi == "10.1371/journal.pone.0033693"
    assert "query.bibliographic=" in bib_server.stats["crossref"].last_query


def test_crossref_xgboost_and_doi_org_agree(bib_server):
    cr = run(source("crossref", bib_server).lookup_doi(XGBOOST_DOI))
    do = run(source("doi_org", bib_server).lookup_doi(XGBOOST_DOI))
    assert (cr.title, cr.authors, cr.year, cr.venue) == (do.title, do.authors, do.year, do.venue)
    assert do.source == "doi_org" and do.authors == AUTHORS and do.year == 2016
    assert bib_server.stats["doi_org"].last_headers["accept"] == "application/vnd.citationstyles.csl+json"


def test_doi_org_recorded_csl_and_404(bib_server):
    doi_org = source("doi_org", bib_server)
    rec = run(doi_org.lookup_doi("10.1126/science.169.3946.635"))
    title = ("The Structure of Ordinary Water: New data and interpretations are yielding new insights into this "
             "fascinating substance.")  # the recorded CSL-JSON's title and subtitle
    assert (rec.title, rec.year, rec.venue) == (title, 1970, "Science")
    assert rec.authors == (Author("Frank", "Henry S."),)
    assert run(doi_org.resolves("10.1126/foo")) is False
    with pytest.raises(BadRequestError):  # no search: never an empty "not found"
        run(doi_org.search_title("anything"))


def test_openalex_shape(bib_server):
    oa = source("openalex", bib_server)
    rec = run(oa.lookup_doi(XGBOOST_DOI))
    assert (rec.source, rec.title, rec.authors, rec.year, rec.doi) == (
        "openalex",
        "XGBoost",
        AUTHORS,
        2016,
        XGBOOST_DOI,
    )
    assert run(oa.lookup_doi("10.9999/does-not-exist")) is None


def test_dblp_search_and_doi(bib_server):
    dblp = source("dblp", bib_server)
    recs = run(dblp.search_title(XGBOOST_TITLE, 5))
    assert {r.title for r in recs} == {XGBOOST_TITLE}
    by_venue = {r.venue: r for r in recs}
    assert by_venue["KDD"].doi == XGBOOST_DOI and by_venue["KDD"].authors == AUTHORS
    assert by_venue["CoRR"].arxiv_id == "1603.02754"
    assert run(dblp.lookup_doi(XGBOOST_DOI)).venue == "KDD"
    assert run(dblp.search_title("zzqx nonexistent wibble frobnicate", 5)) == []


def test_arxiv_atom(bib_server):
    arxiv = source("arxiv", bib_server)
    rec = run(arxiv.lookup_arxiv("arXiv:1603.02754v3"))
    assert (rec.title, rec.authors, rec.arxiv_id, rec.doi) == (
        XGBOOST_TITLE,
        AUTHORS,
        "1603.02754",
        XGBOOST_DOI,
    )
    assert run(arxiv.lookup_doi("10.48550/arXiv.1603.02754")).arxiv_id == "1603.02754"
    assert run(arxiv.lookup_doi(XGBOOST_DOI)) is None
    assert bib_server.stats["arxiv"].requests == 2  # the non-arXiv DOI made no request
    assert [r.arxiv_id for r in run(arxiv.search_title(XGBOOST_TITLE))] == ["1603.02754"]


def test_semantic_scholar(bib_server):
    s2 = source("semantic_scholar", bib_server)
    rec = run(s2.lookup_doi(XGBOOST_DOI))
    assert (rec.title, rec.authors, rec.year, rec.arxiv_id) == (XGBOOST_TITLE, AUTHORS, 2016, "1603.02754")
    assert run(s2.lookup_arxiv("1603.02754")).doi == XGBOOST_DOI
    assert run(s2.lookup_doi("10.9999/nope")) is None
    assert run(s2.search_title(XGBOOST_TITLE))[0].doi == XGBOOST_DOI
