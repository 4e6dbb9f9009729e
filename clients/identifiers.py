"""Normalizing the identifiers sources disagree on: DOIs, arXiv ids, and person names."""

from __future__ import annotations

import re

from clients.bib_record import Author

__all__ = ["arxiv_id_from_doi", "arxiv_id_from_url", "normalize_arxiv_id", "normalize_doi", "split_name"]

_DOI_PREFIX = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.IGNORECASE)
_ARXIV_VERSION = re.compile(r"v\d+$")
_ARXIV_URL = re.compile(r"arxiv\.org/(?:abs|pdf)/([^?#\s]+?)(?:\.pdf)?(?:[?#].*)?$", re.IGNORECASE)
_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.IGNORECASE)
_DBLP_HOMONYM = re.compile(r"\s+\d{4}$")


def normalize_doi(doi: str | None) -> str | None:
    """Lower-case DOI without resolver prefix or surrounding whitespace; None if empty."""
    if not doi:
        return None
    value = _DOI_PREFIX.sub("", doi.strip()).strip().rstrip(".")
    return value.lower() or None


def normalize_arxiv_id(arxiv_id: str | None) -> str | None:
    """arXiv id without `arXiv:` prefix or version suffix (`2301.13808`, `hep-th/9901001`)."""
    if not arxiv_id:
        return None
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
    match = _ARXIV_DOI.match(normalize_doi(doi) or "")
    return normalize_arxiv_id(match.group(1)) if match else None


def split_name(full: str) -> Author:
    """`Given Family` (or `Family, Given`) to an Author; drops DBLP's homonym number (`0001`)."""
    name = _DBLP_HOMONYM.sub("", " ".join(full.split()))
    if "," in name:
        family, given = (part.strip() for part in name.split(",", 1))
        return Author(family=family, given=given)
    parts = name.rsplit(" ", 1)
    if len(parts) == 1:
        return Author(family=parts[0])
    return Author(family=parts[1], given=parts[0])
