"""arXiv API adapter (Atom feed at `/api/query`): lookup by arXiv id, title search.

Only arXiv DOIs (`10.48550/arXiv.*`) can be looked up here; for any other DOI `lookup_doi`
returns None without a request (arXiv's search has no DOI field), and `can_lookup_doi` is False
so generic DOI checks skip arXiv rather than count it as "absent". arXiv asks for at most one
request every three seconds: `DEFAULT_RPM = 20`.
"""

from __future__ import annotations

import re
from typing import Any

from lxml import etree

from clients.bib_record import BibRecord
from clients.errors import ParseError
from clients.http_source import HttpSource
from clients.identifiers import (
    arxiv_id_from_doi,
    arxiv_id_from_url,
    normalize_arxiv_id,
    split_name,
)
from storage.bib_identifiers import canonical_doi

__all__ = ["ArxivSource", "parse_atom"]

NS = {
    "a": "http://www.w3.org/2005/Atom",
    "arxiv": "http://arxiv.org/schemas/atom",
    "os": "http://a9.com/-/spec/opensearch/1.1/",
}
_SPACE = re.compile(r"\s+")


def _text(node: Any, path: str) -> str | None:
    found = node.find(path, NS)
    if found is None or found.text is None:
        return None
    return _SPACE.sub(" ", found.text).strip() or None


def parse_atom(text: str) -> list[dict[str, Any]]:
    """An arXiv Atom feed to plain entry dicts; raises on malformed XML or an API error entry."""
    root = etree.fromstring(text.encode())
    if root.tag != f"{{{NS['a']}}}feed":
        raise ValueError(f"not an Atom feed: {root.tag}")
    entries = []
    for entry in root.findall("a:entry", NS):
        entry_id = _text(entry, "a:id") or ""
        title = _text(entry, "a:title")
        if title == "Error" and "/api/errors" in entry_id:
            raise ValueError(f"arXiv API error: {_text(entry, 'a:summary')}")
        entries.append({
            "id": entry_id, "title": title,
            "authors": [_SPACE.sub(" ", n.text).strip() for n in entry.findall("a:author/a:name", NS) if n.text],
            "published": _text(entry, "a:published"), "doi": _text(entry, "arxiv:doi"),
            "journal_ref": _text(entry, "arxiv:journal_ref"),
            "primary_category": (entry.find("arxiv:primary_category", NS).get("term")
                                 if entry.find("arxiv:primary_category", NS) is not None else None),
        })  # fmt: skip
    return entries


def record_from_entry(entry: dict[str, Any], fetched_at: str | None = None) -> BibRecord:
    published = entry.get("published") or ""
    arxiv_id = arxiv_id_from_url(entry.get("id"))
    return BibRecord(
        source="arxiv", title=entry.get("title"), authors=tuple(split_name(n) for n in entry["authors"]),
        year=int(published[:4]) if published[:4].isdigit() else None,
        venue=entry.get("journal_ref") or "arXiv", doi=canonical_doi(entry.get("doi")),
        arxiv_id=arxiv_id, type="preprint", raw=entry, fetched_at=fetched_at, url=entry.get("id"),
    )  # fmt: skip


class ArxivSource(HttpSource):
    """arXiv metadata."""

    name = "arxiv"
    BASE_URL = "https://export.arxiv.org"
    DEFAULT_RPM = 20.0
    can_lookup_doi = False
    """Only arXiv DOIs resolve here; callers should use `lookup_arxiv` (an absent journal DOI on
    arXiv is no evidence), so generic DOI lookups skip this source."""

    async def _query(self, params: dict[str, Any]) -> list[BibRecord]:
        response = await self.http.get("/api/query", params, accept="application/atom+xml", parse=parse_atom)
        if response.status == 404:
            return []
        if response.data is None:
            raise ParseError("empty Atom body", source=self.name)
        return [record_from_entry(e, response.fetched_at) for e in response.data]

    async def lookup_arxiv(self, arxiv_id: str) -> BibRecord | None:
        key = normalize_arxiv_id(arxiv_id)
        if key is None:
            return None
        for record in await self._query({"id_list": key, "max_results": 1}):
            if record.arxiv_id == key:
                return record
        return None

    async def lookup_doi(self, doi: str) -> BibRecord | None:
        arxiv_id = arxiv_id_from_doi(doi)
        return None if arxiv_id is None else await self.lookup_arxiv(arxiv_id)

    async def search_title(self, title: str, limit: int = 5) -> list[BibRecord]:
        phrase = _SPACE.sub(" ", re.sub(r"[\"():]", " ", title)).strip()
        return await self._query({"search_query": f'ti:"{phrase}"', "max_results": limit})
