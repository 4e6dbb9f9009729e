"""The one normalized bibliographic record every source client returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Author:
    family: str
    given: str = ""


@dataclass(frozen=True)
class BibRecord:
    """A work as a source describes it. `raw` keeps the source's own answer for audit."""

    source: str  # crossref | openalex | dblp | arxiv | semantic_scholar | doi_org | offline_index | ...
    title: str | None = None
    authors: tuple[Author, ...] = ()
    year: int | None = None
    venue: str | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    type: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    fetched_at: str | None = field(default=None, compare=False, hash=False)
    """UTC ISO-8601 time the underlying response was fetched (from the response cache stamp)."""
    url: str | None = field(default=None, compare=False, hash=False)
    """The source's landing page for the record, when it gives one."""
