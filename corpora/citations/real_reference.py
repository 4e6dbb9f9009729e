"""Real bibliographic references, the raw material the citation generators perturb.

`corpora/samples/real_references.jsonl` holds well-known papers typed in by hand as facts (exact
title, full author list, year, venue, DOI and arXiv id only where certain). One JSON object a line:
`ref_id`, `bibtex_type` (article | inproceedings | misc for arXiv-only preprints), `title`,
`authors` (list of "Given Family" strings), `year`, `journal` or `booktitle`, optional `volume`,
`number`, `pages`, `doi`, `arxiv_id`, `arxiv_year` (year of the first arXiv version), `domain`
(ml | statistics | cs | physics | biology: the stratum CiteIntegrity pairs within).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from storage.bib_identifiers import family_name, name_parts, split_bibtex_authors
from storage.jsonl import read_jsonl

#: The bundled reference list.
REAL_REFERENCES_PATH = Path(__file__).resolve().parents[1] / "samples" / "real_references.jsonl"

BIBTEX_TYPES = ("article", "inproceedings", "misc")


@dataclass(frozen=True)
class Reference:
    """One real, published (or arXiv-only) work."""

    ref_id: str
    """Stable identifier, like a BibTeX key (`vaswani2017attention`)."""
    bibtex_type: str
    """article, inproceedings, or misc (an arXiv-only preprint)."""
    title: str
    authors: tuple[str, ...]
    """Full author list, each "Given Family"."""
    year: int
    venue: str | None
    """Journal (article) or booktitle (inproceedings); None for a preprint."""
    domain: str
    volume: str | None = None
    number: str | None = None
    pages: str | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    arxiv_year: int | None = None

    @property
    def venue_field(self) -> str | None:
        """The BibTeX field that carries the venue: journal, booktitle, or None."""
        return {"article": "journal", "inproceedings": "booktitle"}.get(self.bibtex_type)

    @property
    def preprint_only(self) -> bool:
        """True for a work that exists only as an arXiv preprint."""
        return self.bibtex_type == "misc"

    @property
    def family_names(self) -> tuple[str, ...]:
        """Family name of each author ("van der Maaten" stays whole)."""
        return tuple(family_name(a) for a in self.authors)


def given_names(author: str) -> str:
    """The given names of one author (DBLP's homonym number dropped)."""
    return name_parts(author)[1]


def reference_from_dict(row: dict) -> Reference:
    """Build a Reference from one JSON object, checking the required keys."""
    missing = [k for k in ("ref_id", "bibtex_type", "title", "authors", "year", "domain") if k not in row]
    if missing:
        raise ValueError(f"reference {row.get('ref_id', '?')}: missing {missing}")
    if row["bibtex_type"] not in BIBTEX_TYPES:
        raise ValueError(f"reference {row['ref_id']}: bibtex_type {row['bibtex_type']!r} not in {BIBTEX_TYPES}")
    venue = row.get("journal") or row.get("booktitle")
    if row["bibtex_type"] != "misc" and not venue:
        raise ValueError(f"reference {row['ref_id']}: a published work needs a journal or booktitle")
    return Reference(
        ref_id=row["ref_id"],
        bibtex_type=row["bibtex_type"],
        title=row["title"],
        authors=tuple(row["authors"]),
        year=int(row["year"]),
        venue=venue,
        domain=row["domain"],
        volume=row.get("volume"),
        number=row.get("number"),
        pages=row.get("pages"),
        doi=row.get("doi"),
        arxiv_id=row.get("arxiv_id"),
        arxiv_year=row.get("arxiv_year"),
    )


def load_references(path: str | Path = REAL_REFERENCES_PATH) -> tuple[Reference, ...]:
    """Read a reference list (JSONL); duplicate ids, titles or DOIs are an error."""
    refs: list[Reference] = []
    for number, row in read_jsonl(path):
        try:
            refs.append(reference_from_dict(row))
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: {exc}") from exc
    for attr in ("ref_id", "title", "doi"):
        values = [getattr(r, attr).lower() for r in refs if getattr(r, attr)]
        dupes = sorted({v for v in values if values.count(v) > 1})
        if dupes:
            raise ValueError(f"{path}: duplicate {attr}: {dupes}")
    return tuple(refs)


def references_from_hallmark(path: str | Path, domain: str = "ml") -> tuple[Reference, ...]:
    """The VALID entries of a HALLMARK JSONL file as references (ref_id = bibtex_key).

    Entries without title, authors or a numeric year are skipped, as are repeated titles and DOIs
    (first kept). An entry without venue becomes a preprint-like `misc`. HALLMARK records carry no
    arXiv ids, so the types that need a preprint (preprint_as_published, arxiv_version_mismatch)
    cannot be made from them.
    """
    refs: list[Reference] = []
    titles: set[str] = set()
    dois: set[str] = set()
    for _, row in read_jsonl(path):
        fields = row.get("fields") or {}
        if row.get("label") != "VALID" or not fields.get("title") or not fields.get("author"):
            continue
        year = str(fields.get("year", "")).strip()
        if not year.isdigit():
            continue
        doi = (fields.get("doi") or "").strip() or None
        title_key = fields["title"].strip().lower()
        if title_key in titles or (doi and doi.lower() in dois):
            continue
        titles.add(title_key)
        if doi:
            dois.add(doi.lower())
        venue = fields.get("booktitle") or fields.get("journal")
        kind = ("inproceedings" if fields.get("booktitle") else "article") if venue else "misc"
        authors = tuple(split_bibtex_authors(fields["author"])[0])
        refs.append(
            Reference(
                ref_id=row["bibtex_key"], bibtex_type=kind, title=fields["title"], authors=authors, year=int(year),
                venue=venue, domain=domain, volume=fields.get("volume"), number=fields.get("number"),
                pages=fields.get("pages"), doi=doi,
            )
        )
    return tuple(refs)


__all__ = [
    "REAL_REFERENCES_PATH",
    "Reference",
    "family_name",
    "given_names",
    "load_references",
    "reference_from_dict",
    "references_from_hallmark",
]
