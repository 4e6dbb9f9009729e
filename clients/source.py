"""The protocol every bibliographic source speaks (online APIs and the offline index alike)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from clients.bib_record import BibRecord


@runtime_checkable
class BibSource(Protocol):
    """A source of bibliographic records. Lookups return None / [] only for a definite "not
    there" answer; outages, rate limits and timeouts raise (see clients/errors.py), so a caller
    can never mistake an outage for "citation not found"."""

    name: str

    async def lookup_doi(self, doi: str) -> BibRecord | None: ...

    async def search_title(self, title: str, limit: int = 5) -> list[BibRecord]: ...
