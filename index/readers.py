"""Readers that turn bibliographic dumps into offline-index rows, one generator per format.

Formats: DBLP XML (`.xml` or `.xml.gz`; its named character entities decode from a fixed table,
never from `dblp.dtd` or any DTD the dump names), Crossref works (a JSON work, list or API
envelope `{"message": ...}`, or the public data file's JSON-lines parts `*.jsonl.gz`, one REST-API
work per line; read by the Crossref client's own `record_from_crossref`, so titles carry their
subtitles), the OpenAlex works snapshot (`data/works/updated_date=*/part_*.gz`, one Work per
line), arXiv's metadata snapshot (Kaggle's `arxiv-metadata-oai-snapshot.json`, one paper per
line), ACL Anthology XML (paper by paper), BibTeX (bibtexparser 2), HALLMARK JSONL and the
project's reference lists (`corpora/samples/real_references.jsonl`: one real work per line).

Every dump is treated as written by an adversary (`dump_streams.py`): a JSON-lines dump is read
one bounded line at a time, a JSON document one array element at a time, an XML dump one record
element at a time, each under a record cap (`MAX_RECORD_BYTES`, `DumpLog.max_record_bytes`), so
memory grows neither with the dump (the DBLP dump has ~7 M records, Crossref's ~150 M) nor with
one hostile record. A record that is over the cap, malformed or of the wrong shape is skipped and
reported to the reader's `DumpLog` by file and line, and the read goes on. A dump given as a
folder is read part by part in name order (`dump_files`). Every reader yields plain dicts with
the same keys (`ROW_KEYS`) plus optional extras the builder uses for provenance and evidence but
does not store per row: `venue_short` (a venue's abbreviation) and `updated` (the record's
last-modified date, whose maximum is the dump's date). `index_build.py` writes them to Parquet. A
record without a title and without a DOI is skipped (not reported): it can never be found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from clients.crossref import record_from_crossref
from clients.openalex import record_from_openalex
from index.dump_streams import MAX_RECORD_BYTES as MAX_RECORD_BYTES  # the readers' API
from index.dump_streams import (
    RECORD_ERRORS,
    DumpLog,
    json_documents,
    json_lines,
    printable,
    xml_records,
)
from index.dump_streams import SkippedRecord as SkippedRecord
from storage.bib_identifiers import canonical_arxiv_id, canonical_doi, name_parts, split_bibtex_authors

ROW_KEYS = ("origin", "key", "title", "authors", "year", "venue", "doi", "arxiv_id", "type", "file")
FORMATS = ("dblp", "crossref", "openalex", "arxiv", "acl_anthology", "bibtex", "hallmark", "references")
DBLP_RECORD_TAGS = ("article", "inproceedings", "proceedings", "book", "incollection", "phdthesis",
                    "mastersthesis", "www", "data")
DBLP_INDEXED_TAGS = tuple(t for t in DBLP_RECORD_TAGS if t != "www")  # `www` person pages are never parsed

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


def _rows(records: Iterator[tuple[int, Any]], make: Callable[[Any], Row | None], path: Path, log: DumpLog,
          what: str = "record") -> Iterator[Row]:
    """`make(record)` for each (line, record); one that raises on its shape (a string where a list
    belongs, ...) is skipped and named, never the end of the read."""
    for line, record in records:
        try:
            row = make(record)
        except RECORD_ERRORS as exc:
            log.skip(path, f"{what} not usable ({type(exc).__name__}: {printable(str(exc))})", line)
            continue
        if row:
            yield row


def read_dblp_xml(path: Path, log: DumpLog | None = None) -> Iterator[Row]:
    """DBLP XML dump records (article, inproceedings, ...); `www` person pages are skipped. Named
    entities decode from DBLP's ISO Latin-1 set; `dblp.dtd` and whatever DTD or entity the dump
    names are never read (see `dump_streams`)."""
    log = log or DumpLog()
    records = ((r.line, r) for r in xml_records(path, DBLP_INDEXED_TAGS, log))
    yield from _rows(records, lambda r: _dblp_row(r.element, path), path, log)


def _dblp_row(element: Any, path: Path) -> Row | None:
    from lxml import etree

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
        row["updated"] = element.get("mdate")
    return row


def crossref_row(work: dict[str, Any], file: str = "") -> Row | None:
    """A Crossref work as the online client reads it (`record_from_crossref`: subtitle merged)."""
    record = record_from_crossref(work)
    row = _row("crossref", work.get("DOI"), record.title, [(a.family, a.given) for a in record.authors],
               record.year, record.venue, record.doi, canonical_arxiv_id(record.arxiv_id), record.type, file)
    if row:
        short = work.get("short-container-title")
        row["venue_short"] = (short[0] if isinstance(short, list) and short else short) or None
        row["updated"] = ((work.get("indexed") or {}).get("date-time")
                          or (work.get("deposited") or {}).get("date-time"))
    return row


def read_crossref_json(path: Path, log: DumpLog | None = None) -> Iterator[Row]:
    """Crossref works: the public data file's JSON-lines parts (`*.jsonl.gz`), or a JSON document
    (`*.json`, `*.json.gz`: one work, a list, `{"items": [...]}` or an API envelope), streamed."""
    log = log or DumpLog()
    name = path.name.lower()
    lines = name.endswith((".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz"))
    works = json_lines(path, log) if lines else json_documents(path, log)
    yield from _rows(works, lambda work: crossref_row(work, str(path)), path, log, "work")


def openalex_row(work: dict[str, Any], file: str = "") -> Row | None:
    """An OpenAlex Work as the online client reads it (`record_from_openalex`, one mapping)."""
    record = record_from_openalex(work)
    source = ((work.get("primary_location") or {}).get("source") or {})
    row = _row("openalex", work.get("id"), record.title, [(a.family, a.given) for a in record.authors],
               record.year, record.venue, record.doi, canonical_arxiv_id(record.arxiv_id), record.type, file)
    if row:
        row["venue_short"] = source.get("abbreviated_title")
        row["updated"] = work.get("updated_date")
    return row


def read_openalex_jsonl(path: Path, log: DumpLog | None = None) -> Iterator[Row]:
    """OpenAlex Works, one per line: a snapshot part (`part_000.gz`) or a plain `.jsonl`."""
    log = log or DumpLog()
    yield from _rows(json_lines(path, log), lambda work: openalex_row(work, str(path)), path, log, "work")


def arxiv_row(paper: dict[str, Any], file: str = "") -> Row | None:
    """A paper of arXiv's metadata snapshot: `authors_parsed` ([family, given, suffix]) when given,
    else the `authors` string; year of the first version (`versions[0].created`), else from the id;
    the venue is the journal reference when the paper was published, else "arXiv"."""
    parsed = paper.get("authors_parsed")
    if parsed:
        authors = [(str(p[0] or "").strip(), str(p[1] if len(p) > 1 else "").strip()) for p in parsed if p]
    else:
        raw = str(paper.get("authors") or "").replace(" and ", ", ")
        authors = [_split_given_family(n) for n in raw.split(",") if n.strip()]
    arxiv_id = canonical_arxiv_id(str(paper.get("id") or ""))
    versions = paper.get("versions") or []
    year = _rfc2822_year(versions[0].get("created")) if versions and isinstance(versions[0], dict) else None
    if year is None and arxiv_id and arxiv_id[:4].isdigit():
        year = (1900 if arxiv_id[:2] > "90" else 2000) + int(arxiv_id[:2])
    journal = " ".join(str(paper.get("journal-ref") or "").split()) or None
    row = _row("arxiv", arxiv_id, paper.get("title"), authors, year, journal or "arXiv", paper.get("doi"), arxiv_id,
               "article" if journal else "preprint", file)
    if row:
        row["updated"] = paper.get("update_date")
    return row


def _rfc2822_year(text: Any) -> int | None:
    """The year of "Mon, 2 Apr 2007 19:18:42 GMT" (arXiv's version dates)."""
    parts = str(text or "").split()
    return int(parts[3]) if len(parts) > 3 and parts[3].isdigit() else None


def read_arxiv_snapshot(path: Path, log: DumpLog | None = None) -> Iterator[Row]:
    """arXiv's metadata snapshot (`arxiv-metadata-oai-snapshot.json`, JSON lines, ~2.7 M papers)."""
    log = log or DumpLog()
    yield from _rows(json_lines(path, log), lambda paper: arxiv_row(paper, str(path)), path, log, "paper")


def read_acl_anthology_xml(path: Path, log: DumpLog | None = None) -> Iterator[Row]:
    """Papers of an ACL Anthology collection file (`data/xml/*.xml`), paper by paper; venue is the
    volume's booktitle, its abbreviation the collection's venue ids (`<venue>acl</venue>`). Same
    entity policy as DBLP: nothing the file defines or names is resolved."""
    log = log or DumpLog()
    collection = path.name.split(".xml")[0]

    def papers() -> Iterator[tuple[int, tuple[Any, dict[str, Any]]]]:
        volume: dict[str, Any] = {}
        for record in xml_records(path, ("meta", "paper"), log, openers=("volume",)):
            element = record.element
            if record.tag == "volume":
                volume = {"id": element.get("id")}
            elif record.tag == "meta":
                booktitle = element.find("booktitle")
                volume = {**volume, "booktitle": "".join(booktitle.itertext()) if booktitle is not None else None,
                          "year": element.findtext("year"),
                          "venues": [v.text for v in element.findall("venue") if v.text]}
            else:
                yield record.line, (element, volume)

    yield from _rows(papers(), lambda paper: _acl_row(*paper, collection, path), path, log, "paper")


def _acl_row(paper: Any, volume: dict[str, Any], collection: str, path: Path) -> Row | None:
    title_el = paper.find("title")
    title = "".join(title_el.itertext()) if title_el is not None else None
    authors = [(a.findtext("last") or "", a.findtext("first") or "") for a in paper.findall("author")]
    year = paper.findtext("year") or volume.get("year")
    key = f"{collection}-{volume.get('id')}.{paper.get('id')}"
    row = _row("acl_anthology", paper.findtext("bibkey") or key, title, authors, year, volume.get("booktitle"),
               paper.findtext("doi"), None, "inproceedings", str(path))
    if row:
        venues = volume.get("venues") or []
        row["venue_short"] = venues[0].upper() if venues else None
    return row


def bibtex_fields_row(origin: str, key: str, entry_type: str, fields: dict[str, str], file: str) -> Row | None:
    fields = {k.lower(): str(v) for k, v in fields.items() if v is not None}
    names, _ = split_bibtex_authors(fields.get("author"))
    arxiv = canonical_arxiv_id(fields.get("eprint")) if (fields.get("archiveprefix") or "").lower() == "arxiv" else None
    arxiv = arxiv or canonical_arxiv_id(fields.get("doi")) or (
        canonical_arxiv_id(fields.get("url")) if "arxiv.org" in fields.get("url", "") else None)
    venue = next((fields[k] for k in ("booktitle", "journal", "venue") if fields.get(k)), None)
    return _row(origin, key, fields.get("title"), [_split_given_family(n) for n in names], fields.get("year"),
                venue, fields.get("doi"), arxiv, entry_type.lower(), file)


def read_bibtex(path: Path, log: DumpLog | None = None) -> Iterator[Row]:
    """A .bib file, parsed whole by bibtexparser (hand-made lists, not dumps)."""
    import bibtexparser

    library = bibtexparser.parse_string(path.read_text(encoding="utf-8"))
    for entry in library.entries:
        fields = {f.key: f.value for f in entry.fields}
        row = bibtex_fields_row("bibtex", entry.key, entry.entry_type, fields, str(path))
        if row:
            yield row


def read_hallmark_jsonl(path: Path, labels: tuple[str, ...] | None = ("VALID",),
                        log: DumpLog | None = None) -> Iterator[Row]:
    """HALLMARK entries as index records. By default only entries labelled VALID (real papers);
    `labels=None` takes every entry, hallucinated ones included (only for tests of the reader).
    Building an index from a split's own VALID entries makes a closed world for that split."""
    log = log or DumpLog()

    def make(record: dict[str, Any]) -> Row | None:
        if str(record.get("bibtex_key", "")).startswith("__canary__"):
            return None
        if labels is not None and record.get("label") not in labels:
            return None
        return bibtex_fields_row("hallmark", record.get("bibtex_key"), record.get("bibtex_type") or "misc",
                                 record.get("fields") or {}, str(path))

    yield from _rows(json_lines(path, log), make, path, log, "entry")


def read_references_jsonl(path: Path, log: DumpLog | None = None) -> Iterator[Row]:
    """A reference list (`corpora.citations.real_reference` format) as index records: every line is
    a real work (read by the corpus loader, which names a bad line itself)."""
    from corpora.citations.real_reference import load_references

    for ref in load_references(path):
        authors = [_split_given_family(name) for name in ref.authors]
        yield _row("references", ref.ref_id, ref.title, authors, ref.year, ref.venue, ref.doi, ref.arxiv_id,
                   ref.bibtex_type, str(path))


def dump_files(path: str | Path) -> list[Path]:
    """The files of a dump: the file itself, or a folder's data files in name order (Crossref's
    `*.jsonl.gz` parts, OpenAlex's `updated_date=*/part_*.gz`; manifests and hidden files skipped)."""
    path = Path(path)
    if not path.is_dir():
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))
                   and not p.name.lower().startswith("manifest") and p.suffix.lower() != ".md")
    if not files:
        raise ValueError(f"{path}: the dump folder holds no data files")
    return files


def _first_json_line(path: Path) -> dict[str, Any]:
    """The first JSON object among the file's first lines ({} if none), bad lines passed over silently."""
    quiet = DumpLog(on_skip=lambda _: None)
    try:
        return next((obj for _, obj in json_lines(path, quiet)), {})
    except OSError:
        return {}


def sniff_format(path: str | Path) -> str:
    """The dump format of `path` (a file or a dump folder), from its name and, for JSON lines, its
    first record: a Crossref work has "DOI" and "title" as a list, an OpenAlex Work an openalex.org
    id, an arXiv snapshot line "id", "authors" and "versions"."""
    path = Path(path)
    if path.is_dir():
        return sniff_format(dump_files(path)[0])
    name = path.name.lower()
    stem = name.removesuffix(".gz")
    if stem.endswith(".bib"):
        return "bibtex"
    if stem.endswith(".xml"):
        return "acl_anthology" if "anthology" in str(path).lower() else "dblp"
    first = _first_json_line(path) if not stem.endswith(".json") or "arxiv" in name else {}
    if not first and stem.endswith(".json"):
        return "crossref"
    if "ref_id" in first:
        return "references"
    if "fields" in first and "bibtex_key" in first:
        return "hallmark"
    if "openalex" in str(first.get("id", "")) or "authorships" in first:
        return "openalex"
    if "DOI" in first and isinstance(first.get("title", []), list):
        return "crossref"
    if "id" in first and "versions" in first and "authors" in first:
        return "arxiv"
    if "display_name" in first:
        return "openalex"
    raise ValueError(f"{path}: cannot tell the dump format from its name or first record; "
                     f"build a Parquet index with jobs/build_index.py (formats: {', '.join(FORMATS)})")


READERS = {"dblp": read_dblp_xml, "crossref": read_crossref_json, "openalex": read_openalex_jsonl,
           "arxiv": read_arxiv_snapshot, "acl_anthology": read_acl_anthology_xml, "bibtex": read_bibtex,
           "hallmark": read_hallmark_jsonl, "references": read_references_jsonl}


def read_source(fmt: str, path: Path, log: DumpLog | None = None, **options: Any) -> Iterator[Row]:
    """Rows of one dump (a file, or a folder of parts) in format `fmt` (one of FORMATS); `log`
    holds the record cap and gets every skipped record (default: the cap, and a logged warning)."""
    if fmt not in READERS:
        raise ValueError(f"unknown index source format {fmt!r}; known: {', '.join(FORMATS)}")
    reader = READERS[fmt]
    log = log or DumpLog()
    return (row for file in dump_files(path) for row in reader(file, log=log, **options))
