"""The shared shape of an online source: an `HttpLayer`, default limits, capability flags."""

from __future__ import annotations

from typing import Any, ClassVar, TypedDict

from clients.bib_record import BibRecord
from clients.http import HttpLayer, HttpOptions, parse_json
from storage.bib_identifiers import canonical_doi

__all__ = ["HttpExtras", "HttpSource"]


class HttpExtras(TypedDict, total=False):
    """What a source adds to its `HttpLayer` (see `HttpLayer` for each)."""

    headers: dict[str, str]
    secret_params: dict[str, str]
    api_key: str | None


class HttpSource:
    """Base of the online adapters. Subclasses set the class variables and translate records.

    Args:
        options: the run's shared HTTP options (transport, limiter, cache, guard, retry).
        base_url: API root; defaults to the real service (`BASE_URL`).
    """

    name: ClassVar[str]
    BASE_URL: ClassVar[str]
    DEFAULT_RPM: ClassVar[float]
    """Requests per minute this source is configured for by default (polite, documented limits)."""
    can_lookup_doi: ClassVar[bool] = True
    can_search_title: ClassVar[bool] = True

    def __init__(self, options: HttpOptions | None = None, *, base_url: str | None = None) -> None:
        self.options = options or HttpOptions()
        self.http = self._make_http(base_url or self.BASE_URL)

    def _make_http(self, base_url: str) -> HttpLayer:
        return HttpLayer(self.name, base_url, self.options, default_rpm=self.DEFAULT_RPM, **self._http_extras())

    def _http_extras(self) -> HttpExtras:
        """Headers, secret query parameters and API key of this source (keys from the environment)."""
        return {}

    @property
    def network_calls(self) -> int:
        """Requests actually sent (retries included; cache hits excluded)."""
        return self.http.network_calls

    async def _json(self, path: str, params: dict[str, Any] | None = None,
                    accept: str = "application/json") -> tuple[Any | None, str]:  # fmt: skip
        """(parsed body or None for 404, fetch date)."""
        response = await self.http.get(path, params, accept=accept, parse=parse_json)
        return (None if response.status == 404 else response.data), response.fetched_at

    async def lookup_doi(self, doi: str) -> BibRecord | None:
        """The record of `doi` (any resolver prefix or case), None for a definite "not there"."""
        key = canonical_doi(doi)
        return None if key is None else await self._lookup_doi(key)

    async def _lookup_doi(self, key: str) -> BibRecord | None:  # pragma: no cover - overridden
        """The lookup itself, given the normalized DOI."""
        raise NotImplementedError

    async def search_title(self, title: str, limit: int = 5) -> list[BibRecord]:  # pragma: no cover
        raise NotImplementedError

    async def aclose(self) -> None:
        await self.http.aclose()
