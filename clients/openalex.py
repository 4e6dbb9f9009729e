"""OpenAlex adapter: `/works/doi:{doi}` and `/works?search=`.

`mailto` (polite pool) and `api_key` (`OPENALEX_API_KEY`) are sent as query parameters the HTTP
layer treats as secret: never keyed, never logged.
"""

from __future__ import annotations

import os
from typing import Any

from clients.bib_record import BibRecord
from clients.http_source import HttpExtras, HttpSource
from clients.identifiers import arxiv_id_from_doi, split_name
from storage.bib_identifiers import canonical_arxiv_id, canonical_doi

__all__ = ["OpenAlexSource", "record_from_openalex"]


def _venue(work: dict[str, Any]) -> str | None:
    for key in ("primary_location", "host_venue"):
        place = work.get(key) or {}
        src = place.get("source") if key == "primary_location" else place
        if src and src.get("display_name"):
            return src["display_name"]
    return None


def _arxiv(work: dict[str, Any], doi: str | None) -> str | None:
    """The arXiv id of an arXiv DOI, else of the first location (or `ids.arxiv`) that names one."""
    urls = [(place or {}).get("landing_page_url") or "" for place in work.get("locations") or []]
    urls.append((work.get("ids") or {}).get("arxiv") or "")
    return arxiv_id_from_doi(doi) or next(
        (found for url in urls if "arxiv" in url.lower() and (found := canonical_arxiv_id(url))), None)


def record_from_openalex(work: dict[str, Any], fetched_at: str | None = None) -> BibRecord:
    """An OpenAlex `Work` object to a BibRecord: the one mapping, for API answers and for the offline
    index's snapshot rows (`index.readers.openalex_row`)."""
    authors = tuple(
        split_name(a["author"]["display_name"])
        for a in work.get("authorships") or []
        if (a.get("author") or {}).get("display_name")
    )
    doi = canonical_doi(work.get("doi"))
    return BibRecord(
        source="openalex", title=work.get("title") or work.get("display_name"), authors=authors,
        year=work.get("publication_year"), venue=_venue(work), doi=doi, arxiv_id=_arxiv(work, doi),
        type=work.get("type"), raw=work, fetched_at=fetched_at, url=work.get("id"),
    )  # fmt: skip


class OpenAlexSource(HttpSource):
    """OpenAlex works."""

    name = "openalex"
    BASE_URL = "https://api.openalex.org"
    DEFAULT_RPM = 600.0

    def _http_extras(self) -> HttpExtras:
        key = os.environ.get("OPENALEX_API_KEY") or None
        return {"secret_params": {"mailto": self.options.mailto or "", "api_key": key or ""}, "api_key": key}

    async def _lookup_doi(self, key: str) -> BibRecord | None:
        data, fetched = await self._json(f"/works/doi:{key}")
        return None if data is None else record_from_openalex(data, fetched)

    async def search_title(self, title: str, limit: int = 5) -> list[BibRecord]:
        data, fetched = await self._json("/works", {"search": title, "per-page": limit})
        return [record_from_openalex(w, fetched) for w in ((data or {}).get("results") or [])[:limit]]
