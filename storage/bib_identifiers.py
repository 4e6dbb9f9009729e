"""The one implementation of bibliographic identifiers and person names for the whole project.

Canonical DOI and arXiv id, BibTeX author-list splitting (with the explicit truncation marker
"and others" / "et al."), and the parts of one person's name (family name with its particles,
given names), with DBLP's homonym number ("Jannik Peters 0001") removed wherever a name is parsed.

Why in `storage/`: these are the canonical forms of record fields, and `storage/` is the one room
that clients (online sources), corpora (loaders, generators) and verifiers (index readers, rules)
may all import without a cycle (DESIGN.md: storage imports nothing internal; this module imports
only the standard library and bibtexparser). The older names stay importable from
`clients.identifiers`, `corpora.citations.normalization`, `corpora.citations.fields` and
`corpora.citations.real_reference` as thin re-exports.

Name parts come from bibtexparser 2 (`parse_single_name_into_parts`: BibTeX's "First von Last",
"von Last, First" and "von Last, Jr, First" forms, braces kept as one unit); the family name is
"von Last" ("van der Maaten"). A name bibtexparser rejects (unbalanced braces) falls back to the
last word.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from bibtexparser.middlewares.names import InvalidNameError, parse_single_name_into_parts

__all__ = [
    "DBLP_HOMONYM",
    "canonical_arxiv_id",
    "canonical_doi",
    "doi_as_written",
    "family_name",
    "family_names",
    "is_well_formed_doi",
    "name_parts",
    "split_bibtex_authors",
    "strip_homonym",
]

#: DBLP disambiguates people with the same name by a 4-digit number after the name ("Wei Wang 0003").
DBLP_HOMONYM = re.compile(r"\s+\d{4}(?=\s*(?:,|$))")
_DOI_PREFIX = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*|https?://doi\.acm\.org/)", re.IGNORECASE)
_DOI_SHAPE = re.compile(r"10\.\d{4,9}/\S+")
_ARXIV_NEW = re.compile(r"(\d{4}\.\d{4,5})(v\d+)?", re.IGNORECASE)
_ARXIV_OLD = re.compile(r"([a-z\-]+(?:\.[A-Z]{2})?/\d{7})(v\d+)?", re.IGNORECASE)
_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.IGNORECASE)
_AND = re.compile(r"\s+and\s+", re.IGNORECASE)
_TRUNCATION = {"others", "et al", "et al.", "etal", "and others"}


def strip_homonym(name: str) -> str:
    """The name without DBLP's homonym number, whitespace collapsed ("Jannik Peters 0001" -> "Jannik
    Peters", "Peters 0001, Jannik" -> "Peters, Jannik")."""
    return DBLP_HOMONYM.sub("", " ".join(str(name).split()))


def _one_braced_group(name: str) -> bool:
    """Whether the whole name is one brace group ("{Lagkadinou, MD}", "{Smith {and} Jones}", not "{A} {B}")."""
    depth = 0
    for k, ch in enumerate(name):
        depth += (ch == "{") - (ch == "}")
        if depth == 0:
            return k == len(name) - 1 and k > 0
    return False


def name_parts(name: str) -> tuple[str, str]:
    """(family, given) of one person's name in any BibTeX form; the family name keeps its particles
    ("van der Maaten") and loses DBLP's homonym number; braces are removed from the parts."""
    name = strip_homonym(name)
    if not name:
        return "", ""
    if name.startswith("{") and _one_braced_group(name):
        return name[1:-1].strip(), ""  # a braced corporate or compound name is one unit, commas inside included
    try:
        parts = parse_single_name_into_parts(name, strict=False)
        family = " ".join(parts.von + parts.last)
        given = " ".join(parts.first + parts.jr)
    except (InvalidNameError, ValueError, IndexError):
        tokens = name.replace(",", " ").split()
        family, given = (tokens[-1], " ".join(tokens[:-1])) if tokens else ("", "")
    return family.replace("{", "").replace("}", "").strip(), given.replace("{", "").replace("}", "").strip()


def family_name(name: str) -> str:
    """Family name of one person ("Given Family", "Family, Given", "{Braced Name}", DBLP "Name 0001")."""
    return name_parts(name)[0]


def family_names(names: Iterable[str]) -> list[str]:
    """Family names of several people, empty ones dropped."""
    return [f for f in (family_name(n) for n in names) if f]


def split_bibtex_authors(raw: str | None) -> tuple[list[str], bool]:
    """Split a BibTeX author field into names; returns (names, truncated), where truncated means the
    list ended with "others" / "et al." (the explicit truncation marker, not an author). " and "
    inside braces does not split ("{Barnes and Noble}")."""
    if not raw or not raw.strip():
        return [], False
    text = " ".join(str(raw).split())
    names = _split_top_level(text)
    truncated = False
    while names and names[-1].strip(" {}.").lower() in _TRUNCATION:
        names.pop()
        truncated = True
    if names and (names[-1].lower().endswith(" et al.") or names[-1].lower().endswith(" et al")):
        names[-1] = names[-1].rsplit(" et al", 1)[0]
        truncated = True
    return names, truncated


def _split_top_level(text: str) -> list[str]:
    """Split on " and " outside braces."""
    names, depth, start = [], 0, 0
    i = 0
    while i < len(text):
        ch = text[i]
        depth += (ch == "{") - (ch == "}")
        if depth == 0 and ch == " ":
            match = _AND.match(text, i)
            if match:
                names.append(text[start:i])
                i = start = match.end()
                continue
        i += 1
    names.append(text[start:])
    return [n.strip() for n in names if n.strip()]


def canonical_doi(raw: str | None) -> str | None:
    """Lowercase DOI without resolver prefix, or None when the text holds no `10.NNNN/...` DOI.

    The project's one DOI normaliser (sources' answers, corpus fields, index keys, lookups). Text
    that is not DOI-shaped is None rather than kept as written: it can match no record, and a
    lookup of it is never sent (`clients.identifiers.normalize_doi` used to keep it, lower-cased).
    """
    if not raw:
        return None
    match = _DOI_SHAPE.search(doi_as_written(raw))
    return match.group(0).rstrip(".,;").lower() if match else None


def doi_as_written(raw: str) -> str:
    """The DOI text with a resolver prefix (`https://doi.org/`, `doi:`) and outer spaces removed, case
    and everything else kept: what a rule about how a DOI was written should judge."""
    return _DOI_PREFIX.sub("", str(raw).strip()).strip()


def is_well_formed_doi(raw: str) -> bool:
    """Whether `raw`, once its resolver prefix is removed, is exactly one `10.NNNN/suffix` DOI."""
    return _DOI_SHAPE.fullmatch(doi_as_written(raw)) is not None


def canonical_arxiv_id(raw: str | None) -> str | None:
    """arXiv identifier without version ("2310.01362", "hep-th/9901001") from an id, URL, eprint or
    10.48550 DOI; None when there is none."""
    if not raw:
        return None
    text = str(raw).strip()
    doi = _ARXIV_DOI.match(canonical_doi(text) or "")
    if doi:
        text = doi.group(1)
    text = re.sub(r"^(?:https?://)?(?:www\.)?arxiv\.org/(?:abs|pdf)/|^arxiv:\s*", "", text, flags=re.IGNORECASE)
    text = text.removesuffix(".pdf")
    match = _ARXIV_NEW.search(text) or _ARXIV_OLD.search(text)
    return match.group(1).lower() if match else None
