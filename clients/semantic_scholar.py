"""Semantic Scholar Graph API adapter: `/graph/v1/paper/DOI:{doi}`, `/paper/arXiv:{id}`, search.

The key (`SEMANTIC_SCHOLAR_API_KEY`, else `S2_API_KEY`) goes in the `x-api-key` header; it
gives the limiter key its own bucket (`semantic_scholar:key=<fingerprint>`), never its value.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from clients.bib_record import BibRecord
from clients.http_source import HttpExtras, HttpSource
from clients.identifiers import normalize_arxiv_id, split_name
from storage.bib_identifiers import canonical_doi

__all__ = ["FIELDS", "SemanticScholarSource", "record_from_s2"]

FIELDS = "title,authors,year,venue,journal,publicationVenue,externalIds,publicationTypes,url"


def record_from_s2(paper: dict[str, Any], fetched_at: str | None = None) -> BibRecord:
    """A Graph API paper object to a BibRecord."""
    ids = paper.get("externalIds") or {}
    venue = (paper.get("venue") or (paper.get("journal") or {}).get("name")
             or (paper.get("publicationVenue") or {}).get("name"))  # fmt: skip
    types = paper.get("publicationTypes") or []
    return BibRecord(
        source="semantic_scholar", title=paper.get("title"),
        authors=tuple(split_name(a["name"]) for a in paper.get("authors") or [] if a.get("name")),
        year=paper.get("year"), venue=venue or None, doi=canonical_doi(ids.get("DOI")),
        arxiv_id=normalize_arxiv_id(ids.get("ArXiv")), type=types[0] if types else None, raw=paper,
        fetched_at=fetched_at, url=paper.get("url"),
    )  # fmt: skip


class SemanticScholarSource(HttpSource):
    """Semantic Scholar papers."""

    name = "semantic_scholar"
    BASE_URL = "https://api.semanticscholar.org"
    DEFAULT_RPM = 60.0

    def _http_extras(self) -> HttpExtras:
        key = os.environ.get("SEMANTIC_SCHOLAR_API_KEY") or os.environ.get("S2_API_KEY") or None
        return {"headers": {"x-api-key": key} if key else {}, "api_key": key}

    async def _paper(self, paper_id: str) -> BibRecord | None:
        data, fetched = await self._json(f"/graph/v1/paper/{quote(paper_id, safe='/:')}", {"fields": FIELDS})
        return None if data is None else record_from_s2(data, fetched)

    async def _lookup_doi(self, key: str) -> BibRecord | None:
        return await self._paper(f"DOI:{key}")

    async def lookup_arxiv(self, arxiv_id: str) -> BibRecord | None:
        key = normalize_arxiv_id(arxiv_id)
        return None if key is None else await self._paper(f"arXiv:{key}")

    async def search_title(self, title: str, limit: int = 5) -> list[BibRecord]:
        data, fetched = await self._json("/graph/v1/paper/search",
                                         {"query": title, "limit": limit, "fields": FIELDS})  # fmt: skip
        return [record_from_s2(p, fetched) for p in ((data or {}).get("data") or [])[:limit]]
