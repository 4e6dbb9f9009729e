"""Normalizing the identifiers sources disagree on: DOIs, arXiv ids, and person names.

Thin adapters over `storage.bib_identifiers` (the project's one implementation) in the forms the
clients use: `Author` records, and arXiv ids kept even when they are not canonical. DOIs are
`storage.bib_identifiers.canonical_doi` itself (one normaliser).
"""

from __future__ import annotations

import re

from clients.bib_record import Author
from storage.bib_identifiers import canonical_arxiv_id, canonical_doi, name_parts

__all__ = ["arxiv_id_from_doi", "arxiv_id_from_url", "normalize_arxiv_id", "split_name"]

_ARXIV_VERSION = re.compile(r"v\d+$")
_ARXIV_URL = re.compile(r"arxiv\.org/(?:abs|pdf)/([^?#\s]+?)(?:\.pdf)?(?:[?#].*)?$", re.IGNORECASE)
_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.IGNORECASE)


def normalize_arxiv_id(arxiv_id: str | None) -> str | None:
    """arXiv id without `arXiv:` prefix or version suffix (`2301.13808`, `hep-th/9901001`)."""
    if not arxiv_id:
        return None
    if canonical := canonical_arxiv_id(arxiv_id):
        return canonical
    value = arxiv_id.strip()
    if value.lower().startswith("arxiv:"):
        value = value[6:]
    return _ARXIV_VERSION.sub("", value) or None


def arxiv_id_from_url(url: str | None) -> str | None:
    """The arXiv id in an `arxiv.org/abs/...` or `/pdf/...` URL, else None."""
    match = _ARXIV_URL.search(url or "")
    return normalize_arxiv_id(match.group(1)) if match else None


def arxiv_id_from_doi(doi: str | None) -> str | None:
    """The arXiv id of an arXiv DOI (`10.48550/arXiv.2301.13808`), else None."""
    match = _ARXIV_DOI.match(canonical_doi(doi) or "")
    return normalize_arxiv_id(match.group(1)) if match else None


def split_name(full: str) -> Author:
    """`Given Family` (or `Family, Given`) to an Author; drops DBLP's homonym number (`0001`)."""
    family, given = name_parts(full)
    return Author(family=family, given=given)
