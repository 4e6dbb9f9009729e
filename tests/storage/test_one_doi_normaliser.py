"""One DOI normaliser (`storage.bib_identifiers.canonical_doi`) and one OpenAlex record mapping.

`clients.identifiers.normalize_doi` kept text that is not DOI-shaped (lower-cased) where
`canonical_doi` said None, and prescreen's own prefix stripper did not know `doi.acm.org`.
"""

import asyncio

import pytest

from clients.bib_record import BibRecord
from clients.http_source import HttpSource
from clients.openalex import record_from_openalex
from index.readers import openalex_row
from storage.bib_identifiers import canonical_doi, doi_as_written, is_well_formed_doi
from verifiers.citations.entry import CitationEntry
from verifiers.citations.prescreen import check_doi


@pytest.mark.parametrize(("raw", "doi"), [
    ("https://doi.org/10.1109/CVPR52688.2022.01981", "10.1109/cvpr52688.2022.01981"),
    ("doi: 10.18653/v1/2022.acl-long.1.", "10.18653/v1/2022.acl-long.1"),
    ("https://doi.acm.org/10.1145/3292500.3330701;", "10.1145/3292500.3330701"),
    # where the two normalisers disagreed: not DOI-shaped text is no DOI (it was kept, lower-cased)
    ("10.123/abc", None),
    ("https://doi.org/SSRN.12345", None),
    ("  ", None),
    (None, None),
])  # fmt: skip
def test_canonical_doi(raw, doi):
    assert canonical_doi(raw) == doi


def test_a_lookup_of_text_that_is_no_doi_is_never_sent():
    class Recorder(HttpSource):
        name = "recorder"
        BASE_URL = "http://127.0.0.1:9"

        def __init__(self):
            self.keys = []

        async def _lookup_doi(self, key):
            self.keys.append(key)
            return BibRecord(source="recorder", title="t", doi=key)

    source = Recorder()
    assert asyncio.run(source.lookup_doi("10.123/abc")) is None
    assert asyncio.run(source.lookup_doi("https://doi.org/10.1145/ABC.1")).doi == "10.1145/abc.1"
    assert source.keys == ["10.1145/abc.1"]


def test_prescreen_judges_the_doi_as_written_with_any_known_resolver_prefix():
    def hit(doi):
        return check_doi(CitationEntry(key="k", bibtex_type="article", fields={"doi": doi}, raw_bibtex=None))

    assert hit("https://doi.acm.org/10.1145/3292500.3330701") is None  # was "malformed_doi"
    assert hit("doi:10.1145/3292500.3330701") is None
    assert hit("10.1145/3292500.3330701 and more").rule == "malformed_doi"  # not one DOI as written
    assert hit("10.123/abc").rule == "malformed_doi"
    assert doi_as_written(" https://doi.org/10.1/X ") == "10.1/X" and not is_well_formed_doi("10.1/X")


WORK = {
    "id": "https://openalex.org/W1", "display_name": "A  Title", "publication_year": 2021, "type": "article",
    "doi": "https://doi.org/10.1000/ABC",
    "authorships": [{"author": {"display_name": "Laurens van der Maaten"}}, {"author": {}}],
    "host_venue": {"display_name": "Old Venue"},
    "locations": [{"landing_page_url": "https://example.org/x"}, {"landing_page_url": "https://arxiv.org/abs/2301.13808v2"}],
}  # fmt: skip


def test_the_offline_index_reads_an_openalex_work_as_the_online_client_does():
    record = record_from_openalex(WORK)
    row = openalex_row(WORK, "part_000.gz")
    assert (record.title, record.year, record.doi, record.arxiv_id, record.venue) == (
        "A  Title", 2021, "10.1000/abc", "2301.13808", "Old Venue")
    assert [(a.family, a.given) for a in record.authors] == [("van der Maaten", "Laurens")]
    assert row["title"] == "A Title" and row["year"] == 2021 and row["doi"] == "10.1000/abc"
    assert row["arxiv_id"] == "2301.13808" and row["venue"] == "Old Venue"  # host_venue: older snapshots
    assert row["authors"] == [{"family": "van der Maaten", "given": "Laurens"}]
    # an arXiv id named only in `ids` is read by both
    only_ids = {**WORK, "locations": [], "ids": {"arxiv": "https://arxiv.org/abs/2105.00001"}}
    assert record_from_openalex(only_ids).arxiv_id == openalex_row(only_ids)["arxiv_id"] == "2105.00001"
