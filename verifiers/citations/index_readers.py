"""Readers that turn bibliographic dumps into offline-index rows, one generator per format.

Formats: DBLP XML (streamed with lxml iterparse; `dblp.dtd` beside the file resolves its
entities), Crossref works JSON (a work, a list of works, or an API envelope `{"message": ...}`;
read by the Crossref client's own `record_from_crossref`, so titles carry their subtitles),
OpenAlex works JSONL, ACL Anthology XML, BibTeX (bibtexparser 2), HALLMARK JSONL and the project's
reference lists (`corpora/samples/real_references.jsonl`: one real work per line). Every reader
yields plain dicts with the same keys (`ROW_KEYS`); `index_build.py` writes them to Parquet. A
record without a title and without a DOI is skipped: it can never be found.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clients.crossref import record_from_crossref
from storage.bib_identifiers import canonical_arxiv_id, canonical_doi, name_parts, split_bibtex_authors

ROW_KEYS = ("origin", "key", "title", "authors", "year", "venue", "doi", "arxiv_id", "type", "file")
FORMATS = ("dblp", "crossref", "openalex", "acl_anthology", "bibtex", "hallmark", "references")
DBLP_RECORD_TAGS = ("article", "inproceedings", "proceedings", "book", "incollection", "phdthesis",
                    "mastersthesis", "www", "data")

Row = dict[str, Any]


def _row(origin: str, key: str | None, title: str | None, authors: list[tuple[str, str]], year: Any,
         venue: str | None, doi: str | None, arxiv_id: str | None, type_: str | None, file: str) -> Row | None:
    title = " ".join(title.split()) if title else None
    doi = canonical_doi(doi)
    if not title and not doi:
        return None
    try:
        year_int = int(str(year)[:4]) if year not in (None, "") else None
    except ValueError:
        year_int = None
    return {
        "origin": origin, "key": key, "title": title,
        "authors": [{"family": f, "given": g} for f, g in authors if f or g],
        "year": year_int, "venue": " ".join(venue.split()) if venue else None, "doi": doi,
        "arxiv_id": arxiv_id, "type": type_, "file": file,
    }


def _split_given_family(name: str) -> tuple[str, str]:
    """(family, given) by the project's one name parser; DBLP's "Jannik Peters 0001" -> ("Peters", "Jannik")."""
    return name_parts(name)


def read_dblp_xml(path: Path) -> Iterator[Row]:
    """DBLP XML dump records (article, inproceedings, ...); `www` person pages are skipped."""
    from lxml import etree

    dtd = path.with_name("dblp.dtd").exists()
    context = etree.iterparse(str(path), events=("end",), tag=DBLP_RECORD_TAGS, load_dtd=dtd,
                              resolve_entities=dtd, huge_tree=True, recover=not dtd)
    for _, element in context:
        if element.tag != "www":
            text = {c.tag: "".join(c.itertext()) for c in element if isinstance(c.tag, str) and c.tag != "author"}
            authors = [_split_given_family(etree.tostring(a, method="text", encoding="unicode"))
                       for a in element.findall("author")]
            ees = ["".join(e.itertext()) for e in element.findall("ee")]
            doi = next((canonical_doi(e) for e in ees if canonical_doi(e)), None)
            arxiv = next((canonical_arxiv_id(e) for e in ees if "arxiv.org" in e), None)
            row = _row("dblp", element.get("key"), (text.get("title") or "").rstrip("."), authors,
                       text.get("year"), text.get("booktitle") or text.get("journal"), doi, arxiv,
                       element.tag, str(path))
            if row:
                yield row
        element.clear()
        while element.getprevious() is not None:
            del element.getparent()[0]


def crossref_row(work: dict[str, Any], file: str = "") -> Row | None:
    """A Crossref work as the online client reads it (`record_from_crossref`: subtitle merged)."""
    record = record_from_crossref(work)
    return _row("crossref", work.get("DOI"), record.title, [(a.family, a.given) for a in record.authors],
                record.year, record.venue, record.doi, canonical_arxiv_id(record.arxiv_id), record.type, file)


def read_crossref_json(path: Path) -> Iterator[Row]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict) and "message" in data:
        data = data["message"]
    if isinstance(data, dict) and "items" in data:
        data = data["items"]
    for work in data if isinstance(data, list) else [data]:
        if isinstance(work, dict):
            row = crossref_row(work, str(path))
            if row:
                yield row


def openalex_row(work: dict[str, Any], file: str = "") -> Row | None:
    authors = [_split_given_family((a.get("author") or {}).get("display_name") or "")
               for a in work.get("authorships") or []]
    source = ((work.get("primary_location") or {}).get("source") or {})
    locations = work.get("locations") or []
    urls = [loc.get("landing_page_url") or "" for loc in locations] + [(work.get("ids") or {}).get("arxiv") or ""]
    arxiv = next((canonical_arxiv_id(u) for u in urls if "arxiv" in u.lower()), None)
    return _row("openalex", work.get("id"), work.get("title") or work.get("display_name"), authors,
                work.get("publication_year"), source.get("display_name"), work.get("doi"), arxiv,
                work.get("type"), file)


def read_openalex_jsonl(path: Path) -> Iterator[Row]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                row = openalex_row(json.loads(line), str(path))
                if row:
                    yield row


def read_acl_anthology_xml(path: Path) -> Iterator[Row]:
    """Papers of an ACL Anthology collection file; venue is the volume's booktitle."""
    from lxml import etree

    root = etree.parse(str(path)).getroot()
    collection = root.get("id", path.stem)
    for volume in root.iter("volume"):
        meta = volume.find("meta")
        booktitle = "".join(meta.find("booktitle").itertext()) if meta is not None and meta.find("booktitle") is not None else None
        volume_year = meta.findtext("year") if meta is not None else None
        for paper in volume.iter("paper"):
            title_el = paper.find("title")
            title = "".join(title_el.itertext()) if title_el is not None else None
            authors = [(a.findtext("last") or "", a.findtext("first") or "") for a in paper.findall("author")]
            year = paper.findtext("year") or volume_year
            key = f"{collection}-{volume.get('id')}.{paper.get('id')}"
            row = _row("acl_anthology", paper.findtext("bibkey") or key, title, authors, year, booktitle,
                       paper.findtext("doi"), None, "inproceedings", str(path))
            if row:
                yield row


def bibtex_fields_row(origin: str, key: str, entry_type: str, fields: dict[str, str], file: str) -> Row | None:
    fields = {k.lower(): str(v) for k, v in fields.items() if v is not None}
    names, _ = split_bibtex_authors(fields.get("author"))
    arxiv = canonical_arxiv_id(fields.get("eprint")) if (fields.get("archiveprefix") or "").lower() == "arxiv" else None
    arxiv = arxiv or canonical_arxiv_id(fields.get("doi")) or (
        canonical_arxiv_id(fields.get("url")) if "arxiv.org" in fields.get("url", "") else None)
    venue = next((fields[k] for k in ("booktitle", "journal", "venue") if fields.get(k)), None)
    return _row(origin, key, fields.get("title"), [_split_given_family(n) for n in names], fields.get("year"),
                venue, fields.get("doi"), arxiv, entry_type.lower(), file)


def read_bibtex(path: Path) -> Iterator[Row]:
    import bibtexparser

    library = bibtexparser.parse_string(path.read_text(encoding="utf-8"))
    for entry in library.entries:
        fields = {f.key: f.value for f in entry.fields}
        row = bibtex_fields_row("bibtex", entry.key, entry.entry_type, fields, str(path))
        if row:
            yield row


def read_hallmark_jsonl(path: Path, labels: tuple[str, ...] | None = ("VALID",)) -> Iterator[Row]:
    """HALLMARK entries as index records. By default only entries labelled VALID (real papers);
    `labels=None` takes every entry, hallucinated ones included (only for tests of the reader).
    Building an index from a split's own VALID entries makes a closed world for that split."""
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            record = json.loads(line)
            if str(record.get("bibtex_key", "")).startswith("__canary__"):
                continue
            if labels is not None and record.get("label") not in labels:
                continue
            row = bibtex_fields_row("hallmark", record.get("bibtex_key"), record.get("bibtex_type") or "misc",
                                    record.get("fields") or {}, str(path))
            if row:
                yield row


def read_references_jsonl(path: Path) -> Iterator[Row]:
    """A reference list (`corpora.real_reference` format) as index records: every line is a real work."""
    from corpora.citations.real_reference import load_references

    for ref in load_references(path):
        authors = [_split_given_family(name) for name in ref.authors]
        yield _row("references", ref.ref_id, ref.title, authors, ref.year, ref.venue, ref.doi, ref.arxiv_id,
                   ref.bibtex_type, str(path))


def sniff_format(path: str | Path) -> str:
    """The dump format of `path`, from its extension and, for JSON lines, its first record."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".bib":
        return "bibtex"
    if suffix == ".xml":
        return "acl_anthology" if "anthology" in path.name.lower() else "dblp"
    if suffix == ".json":
        return "crossref"
    if suffix == ".jsonl":
        with path.open(encoding="utf-8") as lines:
            first = next((json.loads(line) for line in lines if line.strip()), {})
        if "ref_id" in first:
            return "references"
        if "fields" in first and "bibtex_key" in first:
            return "hallmark"
        if "openalex" in str(first.get("id", "")) or "display_name" in first:
            return "openalex"
    raise ValueError(f"{path}: cannot tell the dump format from its name or first record; "
                     f"build a Parquet index with jobs/build_index.py (formats: {', '.join(FORMATS)})")


def read_source(fmt: str, path: Path, **options: Any) -> Iterator[Row]:
    """Rows of one file in format `fmt` (one of FORMATS)."""
    readers = {"dblp": read_dblp_xml, "crossref": read_crossref_json, "openalex": read_openalex_jsonl,
               "acl_anthology": read_acl_anthology_xml, "bibtex": read_bibtex, "hallmark": read_hallmark_jsonl,
               "references": read_references_jsonl}
    if fmt not in readers:
        raise ValueError(f"unknown index source format {fmt!r}; known: {', '.join(FORMATS)}")
    return readers[fmt](Path(path), **options)
