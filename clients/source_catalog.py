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

__all__ = ["SOURCE_CLASSES", "make_source"]

SOURCE_CLASSES: dict[str, type[HttpSource]] = {
    cls.name: cls
    for cls in (CrossrefSource, OpenAlexSource, DblpSource, ArxivSource, SemanticScholarSource, DoiOrgSource)
}


def make_source(name: str, options: HttpOptions | None = None, base_url: str | None = None) -> HttpSource:
    """Build the named source; unknown names list the known ones."""
    try:
        cls = SOURCE_CLASSES[name]
    except KeyError:
        raise KeyError(f"unknown source {name!r}; known: {', '.join(sorted(SOURCE_CLASSES))}") from None
    return cls(options, base_url=base_url)
