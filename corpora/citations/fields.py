"""BibTeX fields of a reference, their rendering as BibTeX text, and a field-level identity.

`reference_fields` gives the canonical field dict of a real reference (the form a DBLP-style
export would have); generators edit copies of it. `render_bibtex` writes an entry the way the
`raw_bibtex` of a HALLMARK line carries it. `citation_identity` is what two entries must share to
be "the same citation" after normalization: the audits compare entries with it.
"""

from __future__ import annotations

from corpora.citations.normalization import normalize_text
from corpora.citations.real_reference import Reference
from storage.bib_identifiers import family_name, split_bibtex_authors

#: Field order in rendered entries (others follow alphabetically).
FIELD_ORDER: tuple[str, ...] = (
    "title", "author", "year", "journal", "booktitle", "volume", "number", "pages", "doi",
    "eprint", "archiveprefix",
)
VENUE_FIELDS: tuple[str, ...] = ("journal", "booktitle")


def join_authors(authors: tuple[str, ...] | list[str]) -> str:
    """BibTeX author list: names joined by ' and '."""
    return " and ".join(authors)


def split_authors(author_field: str | None) -> list[str]:
    """The names of a BibTeX author field (split on ' and ' outside braces; a trailing "others"
    stays in the list: generators edit the field as written)."""
    names, truncated = split_bibtex_authors(author_field)
    return [*names, "others"] if truncated else names


#: Family name of one BibTeX name ("Family, Given", "Given Family", DBLP "Name 0001").
author_family = family_name


def ordered(fields: dict[str, str]) -> dict[str, str]:
    """The same fields in FIELD_ORDER, unknown ones after, alphabetically."""
    known = [k for k in FIELD_ORDER if k in fields]
    rest = sorted(k for k in fields if k not in FIELD_ORDER)
    return {k: fields[k] for k in known + rest}


def reference_fields(ref: Reference) -> dict[str, str]:
    """Canonical BibTeX fields of a real reference (an arXiv-only work carries eprint fields)."""
    fields: dict[str, str] = {"title": ref.title, "author": join_authors(ref.authors), "year": str(ref.year)}
    if ref.venue_field and ref.venue:
        fields[ref.venue_field] = ref.venue
    for name in ("volume", "number", "pages", "doi"):
        value = getattr(ref, name)
        if value:
            fields[name] = value
    if ref.preprint_only and ref.arxiv_id:
        fields["eprint"] = ref.arxiv_id
        fields["archiveprefix"] = "arXiv"
    return ordered(fields)


def venue_of(fields: dict[str, str]) -> str | None:
    """The journal or booktitle of an entry."""
    for name in VENUE_FIELDS:
        if fields.get(name):
            return fields[name]
    return None


def citation_key(fields: dict[str, str]) -> str:
    """A BibTeX citation key from the entry itself: family name of the first author, year, first title word."""
    authors = split_authors(fields.get("author"))
    family = normalize_text(author_family(authors[0])).replace(" ", "") if authors else "anon"
    words = [w for w in normalize_text(fields.get("title")).split() if len(w) > 3] or ["untitled"]
    return f"{family}{fields.get('year', '')}{words[0]}"


def render_bibtex(bibtex_type: str, fields: dict[str, str], key: str | None = None) -> str:
    """BibTeX text of one entry, one field a line, values in braces."""
    key = key or citation_key(fields)
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in ordered(fields).items())
    return f"@{bibtex_type}{{{key},\n{body}\n}}"


def citation_identity(fields: dict[str, str]) -> tuple[str, tuple[str, ...], str, str, str]:
    """(title, family names, year, venue, DOI), all normalized: equal for two renderings of one citation."""
    families = tuple(normalize_text(author_family(a)) for a in split_authors(fields.get("author")))
    doi = (fields.get("doi") or "").strip().lower()
    return (normalize_text(fields.get("title")), families, fields.get("year", "").strip(), normalize_text(venue_of(fields)), doi)


__all__ = [
    "FIELD_ORDER",
    "VENUE_FIELDS",
    "author_family",
    "citation_identity",
    "citation_key",
    "join_authors",
    "ordered",
    "reference_fields",
    "render_bibtex",
    "split_authors",
    "venue_of",
]
