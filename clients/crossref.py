"""Crossref REST API adapter: works by DOI (`/works/{doi}`) and bibliographic query (`/works`).

Polite pool: the contact address goes in the User-Agent (`mailto:`), never in the query, so it
neither enters cache keys nor logs. Crossref announces its limit in `X-Rate-Limit-Limit` /
`X-Rate-Limit-Interval`; the HTTP layer passes that to the limiter.

Crossref (and doi.org's CSL-JSON, which shares the field names) keeps a subtitle apart from the
title (`"title": ["XGBoost"], "subtitle": ["A Scalable Tree Boosting System"]`); the record's
title is the whole of it, "XGBoost: A Scalable Tree Boosting System", as every other source has it.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from clients.bib_record import Author, BibRecord
from clients.http import USER_AGENT
from clients.http_source import HttpExtras, HttpSource
from clients.identifiers import arxiv_id_from_doi
from storage.bib_identifiers import canonical_doi

__all__ = ["CrossrefSource", "crossref_year", "full_title", "record_from_crossref"]


def crossref_year(item: dict[str, Any]) -> int | None:
    for key in ("published-print", "published-online", "published", "issued", "created"):
        parts = (item.get(key) or {}).get("date-parts") or []
        if parts and parts[0] and parts[0][0]:
            try:
                return int(parts[0][0])
            except (TypeError, ValueError):
                continue
    return None


def _first(value: Any) -> str | None:
    if isinstance(value, list):
        return str(value[0]).strip() if value and value[0] else None
    return str(value).strip() if value else None


_NON_WORD = re.compile(r"[\W_]+")


def _folded(text: str) -> str:
    return " ".join(_NON_WORD.sub(" ", text.casefold()).split())


def full_title(item: dict[str, Any]) -> str | None:
    """Title and subtitle as one title: "title: subtitle", or "title subtitle" after a title ending
    in ?, !, . or :. A subtitle the title already contains is not repeated."""
    title, subtitle = _first(item.get("title")), _first(item.get("subtitle"))
    if not title or not subtitle or _folded(subtitle) in _folded(title):
        return title or None
    return f"{title} {subtitle}" if title[-1] in "?!.:" else f"{title}: {subtitle}"


def record_from_crossref(item: dict[str, Any], source: str = "crossref",
                         fetched_at: str | None = None) -> BibRecord:  # fmt: skip
    """A Crossref `work` message (also CSL-JSON, which shares its field names) to a BibRecord."""
    authors = []
    for person in item.get("author") or []:
        if person.get("family"):
            authors.append(Author(family=person["family"].strip(), given=(person.get("given") or "").strip()))
        elif person.get("name") or person.get("literal"):
            authors.append(Author(family=(person.get("name") or person.get("literal")).strip()))
    venue = _first(item.get("container-title")) or _first((item.get("event") or {}).get("name"))
    doi = canonical_doi(item.get("DOI"))
    return BibRecord(
        source=source, title=full_title(item), authors=tuple(authors), year=crossref_year(item),
        venue=venue, doi=doi, arxiv_id=arxiv_id_from_doi(doi), type=item.get("type"), raw=item,
        fetched_at=fetched_at, url=item.get("URL"),
    )  # fmt: skip


class CrossrefSource(HttpSource):
    """Crossref: lookups by DOI and bibliographic search."""

    name = "crossref"
    BASE_URL = "https://api.crossref.org"
    DEFAULT_RPM = 300.0

    def _http_extras(self) -> HttpExtras:
        mailto = self.options.mailto
        return {"headers": {"User-Agent": f"{USER_AGENT} (mailto:{mailto})" if mailto else USER_AGENT}}

    async def _lookup_doi(self, key: str) -> BibRecord | None:
        data, fetched = await self._json(f"/works/{quote(key, safe='/')}")
        if data is None:
            return None
        return record_from_crossref(data.get("message") or {}, fetched_at=fetched)

    async def search_bibliographic(self, query: str, limit: int = 5) -> list[BibRecord]:
        """Search with a whole reference string (title, authors, venue, year mixed)."""
        data, fetched = await self._json("/works", {"query.bibliographic": query, "rows": limit})
        items = ((data or {}).get("message") or {}).get("items") or []
        return [record_from_crossref(item, fetched_at=fetched) for item in items[:limit]]

    async def search_title(self, title: str, limit: int = 5) -> list[BibRecord]:
        return await self.search_bibliographic(title, limit)
