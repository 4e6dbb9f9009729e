"""DBLP publication search adapter (`/search/publ/api?q=...&format=json`).

DBLP has no lookup by DOI: `lookup_doi` searches for the DOI string and keeps only hits whose
`doi` field equals it, so None there means "DBLP's search does not list this DOI".
"""

from __future__ import annotations

from typing import Any

from clients.bib_record import BibRecord
from clients.http_source import HttpSource
from clients.identifiers import (
    arxiv_id_from_doi,
    arxiv_id_from_url,
    normalize_arxiv_id,
    split_name,
)
from storage.bib_identifiers import canonical_doi

__all__ = ["DblpSource", "record_from_dblp"]


def _authors(info: dict[str, Any]) -> tuple:
    people = (info.get("authors") or {}).get("author") or []
    if isinstance(people, dict):
        people = [people]
    names = [p.get("text") if isinstance(p, dict) else str(p) for p in people]
    return tuple(split_name(n) for n in names if n)


def _arxiv(info: dict[str, Any], doi: str | None) -> str | None:
    found = arxiv_id_from_doi(doi)
    ee = info.get("ee")
    for url in ee if isinstance(ee, list) else [ee]:
        found = found or arxiv_id_from_url(url)
    volume = str(info.get("volume") or "")
    if not found and info.get("venue") == "CoRR" and volume.startswith("abs/"):
        found = normalize_arxiv_id(volume[4:])
    return found


def record_from_dblp(hit: dict[str, Any], fetched_at: str | None = None) -> BibRecord:
    """A DBLP search hit (`{"info": {...}}`) to a BibRecord."""
    info = hit.get("info") or {}
    venue = info.get("venue")
    year = info.get("year")
    doi = canonical_doi(info.get("doi"))
    return BibRecord(
        source="dblp", title=(info.get("title") or "").rstrip(".") or None, authors=_authors(info),
        year=int(year) if str(year or "").isdigit() else None,
        venue=", ".join(venue) if isinstance(venue, list) else venue, doi=doi,
        arxiv_id=_arxiv(info, doi), type=info.get("type"), raw=hit, fetched_at=fetched_at,
        url=info.get("url"),
    )  # fmt: skip


class DblpSource(HttpSource):
    """DBLP search."""

    name = "dblp"
    BASE_URL = "https://dblp.org"
    DEFAULT_RPM = 60.0

    async def _search(self, query: str, limit: int) -> list[BibRecord]:
        data, fetched = await self._json("/search/publ/api", {"q": query, "format": "json", "h": limit})
        hits = (((data or {}).get("result") or {}).get("hits") or {}).get("hit") or []
        return [record_from_dblp(h, fetched) for h in hits[:limit]]

    async def _lookup_doi(self, key: str) -> BibRecord | None:
        for record in await self._search(key, 10):
            if record.doi == key:
                return record
        return None

    async def search_title(self, title: str, limit: int = 5) -> list[BibRecord]:
        return await self._search(title, limit)
