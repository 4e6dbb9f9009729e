"""The online sources by name, for configs and `jobs/check_sources.py`."""

from __future__ import annotations

from clients.arxiv import ArxivSource
from clients.crossref import CrossrefSource
from clients.dblp import DblpSource
from clients.doi_org import DoiOrgSource
from clients.http import HttpOptions
from clients.http_source import HttpSource
from clients.openalex import OpenAlexSource
from clients.semantic_scholar import SemanticScholarSource
from storage.registry import Registry

__all__ = ["POLITE_RPM", "SOURCE_CLASSES", "make_source"]

SOURCE_CLASSES: Registry[type[HttpSource]] = Registry("source")
for _cls in (CrossrefSource, OpenAlexSource, DblpSource, ArxivSource, SemanticScholarSource, DoiOrgSource):
    SOURCE_CLASSES.add(_cls.name, _cls)


POLITE_RPM: dict[str, float] = {name: cls.DEFAULT_RPM for name, cls in SOURCE_CLASSES.items()}
"""Each source's documented polite rate, requests per minute, configured on the cluster limiter
(key = source name, or `name:key=<hash>` with an API key) unless a run sets `[llm.source_limits]`:

| source            | rpm | documented limit                                                    |
|-------------------|-----|---------------------------------------------------------------------|
| crossref          | 300 | polite pool (mailto): 5-10 req/s; the server's X-Rate-Limit headers lower it |
| openalex          | 600 | 10 req/s, 100k/day                                                  |
| semantic_scholar  |  60 | 1 req/s unauthenticated (shared pool); a key raises it              |
| arxiv             |  20 | one request every 3 s                                               |
| dblp              |  60 | no published figure; 1 req/s avoids their 429 + Retry-After          |
| doi_org           | 300 | as Crossref (its DOIs resolve through the same content negotiation) |
"""


def make_source(name: str, options: HttpOptions | None = None, base_url: str | None = None) -> HttpSource:
    """Build the named source; unknown names list the known ones."""
    return SOURCE_CLASSES.get(name)(options, base_url=base_url)
