"""Small BibSource stand-ins for verifier tests: a source that always fails the way an online API
does (the errors come from the real clients/errors.py tree), and a view of an index under another
source name. Replace with tests/helpers/bib_server.py clients once they replay every source."""

from __future__ import annotations

from clients.bib_record import BibRecord
from clients.errors import ClientError
from index.offline_index import OfflineIndex


class FailingSource:
    """Raises `error` on every lookup and counts the calls it received."""

    def __init__(self, name: str, error: ClientError) -> None:
        self.name = name
        self.error = error
        self.calls = 0

    async def lookup_doi(self, doi: str) -> BibRecord | None:
        self.calls += 1
        raise self.error

    async def search_title(self, title: str, limit: int = 5) -> list[BibRecord]:
        self.calls += 1
        raise self.error


class NamedIndex:
    """An offline index answering under another source name (e.g. a DOI registry snapshot)."""

    def __init__(self, name: str, index: OfflineIndex) -> None:
        self.name = name
        self.index = index

    async def lookup_doi(self, doi: str) -> BibRecord | None:
        return await self.index.lookup_doi(doi)

    async def search_title(self, title: str, limit: int = 5) -> list[BibRecord]:
        return await self.index.search_title(title, limit)
