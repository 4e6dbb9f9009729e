"""doi.org adapter: does a DOI resolve, and what does its registration agency say (CSL-JSON).

`GET https://doi.org/{doi}` with `Accept: application/vnd.citationstyles.csl+json` (content
negotiation, redirects followed): 200 with CSL-JSON for a registered DOI, 404 for an unknown one.
doi.org cannot search: `search_title` raises `BadRequestError` (never an empty "not found").
"""

from __future__ import annotations

from urllib.parse import quote

from clients.bib_record import BibRecord
from clients.crossref import record_from_crossref
from clients.errors import BadRequestError
from clients.http_source import HttpSource

__all__ = ["CSL_JSON", "DoiOrgSource"]

CSL_JSON = "application/vnd.citationstyles.csl+json"


class DoiOrgSource(HttpSource):
    """The DOI resolver."""

    name = "doi_org"
    BASE_URL = "https://doi.org"
    DEFAULT_RPM = 300.0
    can_search_title = False

    async def _lookup_doi(self, key: str) -> BibRecord | None:
        data, fetched = await self._json(f"/{quote(key, safe='/')}", accept=CSL_JSON)
        return None if data is None else record_from_crossref(data, source=self.name, fetched_at=fetched)

    async def resolves(self, doi: str) -> bool:
        """True when the DOI is registered (a definite 404 is False; outages raise)."""
        return await self.lookup_doi(doi) is not None

    async def search_title(self, title: str, limit: int = 5) -> list[BibRecord]:
        raise BadRequestError("doi.org cannot search by title", source=self.name)
