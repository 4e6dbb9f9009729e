"""Write the offline bibliographic index: rows from `index_readers` into one Parquet file.

The file holds one row per record (`INDEX_SCHEMA`), with the normalized title precomputed so a
load does not renormalize a million titles. Records are deduplicated by content, never by key (two
different papers may share a BibTeX key, as HALLMARK files and hand-made .bib files do): the same
DOI (`reason "doi"`), or, when either side has no DOI, the same normalised title, year and first
author's family name (`reason "title_year_first_author"`). The first record wins (list the most
trusted dump first); `BuildStats.merged_by_reason` counts the merges, and `merged_path` writes one
JSON line per merged record naming the record it was merged into. Blocking structures are built at load time
(`offline_index.py`): they are cheap to rebuild and keep the file format simple.

Memory is bounded by the dedupe state, not by the dump: rows are read one at a time and written in
batches of `batch_rows`; what grows is two dict entries of Python ints per record kept, a DOI
digest and a content digest (~230 bytes; `bench/bench_index_formats.py` measures it).

The same pass collects the index's evidence registries (`index.evidence.IndexEvidence`: DOI
prefixes, venue names, arXiv id ranges) and the provenance of every dump: its files' SHA-256,
size, the records read from it and its date (the latest record modification date the dump
carries, Crossref `indexed`, OpenAlex `updated_date`, arXiv `update_date`, DBLP `mdate`; else
the file's modification time). Both go into the Parquet footer.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from corpora.citations.normalization import normalize_text
from index.evidence import EVIDENCE_METADATA_KEY, KINDS, IncompleteRegistries, IndexEvidence, registry_gaps
from index.readers import (
    MAX_RECORD_BYTES,
    DumpLog,
    Row,
    SkippedRecord,
    dump_files,
    read_source,
)
from storage.bib_identifiers import canonical_arxiv_id, canonical_doi

INDEX_SCHEMA = pa.schema(
    [
        pa.field("record_id", pa.int64(), nullable=False),
        pa.field("origin", pa.string()),  # dblp | crossref | openalex | acl_anthology | bibtex | hallmark | synthetic
        pa.field("key", pa.string()),  # the record's id in its origin (DBLP key, DOI, OpenAlex id, bibkey)
        pa.field("title", pa.string()),
        pa.field("title_norm", pa.string()),
        pa.field("authors", pa.list_(pa.struct([pa.field("family", pa.string()), pa.field("given", pa.string())]))),
        pa.field("year", pa.int32()),
        pa.field("venue", pa.string()),
        pa.field("doi", pa.string()),  # canonical: lowercase, no resolver prefix
        pa.field("arxiv_id", pa.string()),  # without version
        pa.field("type", pa.string()),
        pa.field("file", pa.string()),  # dump the record came from
    ],
    metadata={"record": "bib_index", "schema_version": "1"},
)


@dataclass(frozen=True)
class IndexSource:
    """One dump to index."""

    format: str
    """dblp | crossref | openalex | arxiv | acl_anthology | bibtex | hallmark | references"""
    path: str
    options: tuple[tuple[str, Any], ...] = ()
    """Reader keyword options, e.g. (("labels", ("VALID",)),) for HALLMARK."""


@dataclass(frozen=True)
class BuildStats:
    records: int
    duplicates_dropped: int
    per_origin: dict[str, int]
    merged_by_reason: dict[str, int] = field(default_factory=dict)
    """How many records were merged into an earlier one, by why ("doi", "title_year_first_author")."""
    skipped: int = 0
    """Records the readers skipped (over the record cap, malformed, of the wrong shape), each named
    to the build's `on_skip` by file and line."""
    forced: dict[str, str] = field(default_factory=dict)
    """Registries declared complete past the completeness check, with what their inputs lack."""


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _low32(digest: int) -> int:
    return (digest & 0xFFFFFFFF) or 1  # never 0, which means "no DOI"


@dataclass
class SourceTally:
    """What was read from one dump: records (before merging), records skipped, its latest record date."""

    records: int = 0
    latest: str | None = None
    skipped: int = 0


def iter_rows(sources: Sequence[IndexSource], tallies: list[SourceTally] | None = None,
              max_record_bytes: int = MAX_RECORD_BYTES,
              on_skip: Callable[[SkippedRecord], None] | None = None) -> Iterator[Row]:
    """Every dump's rows in order; `tallies` (one per source) get each dump's counts and date. A
    record over `max_record_bytes` or unusable is skipped, counted and passed to `on_skip`
    (default: a logged warning)."""
    for i, source in enumerate(sources):
        tally = tallies[i] if tallies is not None else SourceTally()
        log = DumpLog(max_record_bytes, on_skip)
        try:
            for row in read_source(source.format, Path(source.path), log=log, **dict(source.options)):
                tally.records += 1
                updated = row.get("updated")
                if updated and (tally.latest is None or str(updated) > tally.latest):
                    tally.latest = str(updated)
                yield row
        finally:
            tally.skipped = log.skipped


class _RowPreparer:
    """Canonical identifiers, record ids and normalised titles for index rows, merging repeats of one
    work by content as it goes (see the module notes); one pass shared by every way an index is made."""

    def __init__(self, dedupe_doi: bool = True, merged_path: str | Path | None = None) -> None:
        self.dedupe = dedupe_doi
        # digests as ints, not strings: DOI digest -> record id; content digest -> record id << 32 |
        # the low 32 bits of that record's DOI digest (0: none), so one dict entry answers "same
        # work?" and "but another DOI?" (two dicts of ints, ~230 bytes per record kept)
        self.by_doi: dict[int, int] = {}
        self.by_content: dict[int, int] = {}
        self.per_origin: dict[str, int] = {}
        self.merged: dict[str, int] = {}
        self.count = self.dropped = 0
        self.merged_file = open(merged_path, "w", encoding="utf-8") if merged_path else None  # noqa: SIM115

    @staticmethod
    def content_key(row: dict[str, Any]) -> tuple[str, int | None, str] | None:
        """(normalised title, year, first author's normalised family name); None without a title or
        an author: author-less front matter ("Books Received" in every issue of a journal) is many works."""
        title = row.get("title_norm") or ""
        authors = row.get("authors") or []
        first = normalize_text(authors[0].get("family")) if authors else ""
        if not title or not first:
            return None
        return title, row.get("year"), first

    def _digest(self, row: dict[str, Any]) -> int | None:
        key = self.content_key(row)
        return None if key is None else _hash64(repr(key))

    def _duplicate_of(self, row: dict[str, Any], doi_digest: int | None, key: int | None) -> tuple[str, int] | None:
        if doi_digest is not None and doi_digest in self.by_doi:
            return "doi", self.by_doi[doi_digest]
        if key is not None and key in self.by_content:
            packed = self.by_content[key]
            earlier, earlier_doi = packed >> 32, packed & 0xFFFFFFFF
            if not (doi_digest is not None and earlier_doi and earlier_doi != _low32(doi_digest)):
                return "title_year_first_author", earlier  # two different DOIs are two works
        return None

    def prepare(self, rows: Iterable[Row]) -> Iterable[dict[str, Any]]:
        try:
            for row in rows:
                row = {**row, "doi": canonical_doi(row.get("doi")), "arxiv_id": canonical_arxiv_id(row.get("arxiv_id")),
                       "title_norm": normalize_text(row.get("title"))}
                doi_digest = _hash64(row["doi"]) if row["doi"] else None
                key = self._digest(row) if self.dedupe else None
                duplicate = self._duplicate_of(row, doi_digest, key) if self.dedupe else None
                if duplicate is not None:
                    reason, earlier = duplicate
                    self.dropped += 1
                    self.merged[reason] = self.merged.get(reason, 0) + 1
                    if self.merged_file is not None:
                        self.merged_file.write(json.dumps({"reason": reason, "merged_into": earlier,
                                                           "origin": row.get("origin"), "key": row.get("key"),
                                                           "title": row.get("title"), "doi": row.get("doi"),
                                                           "year": row.get("year"), "file": row.get("file")}) + "\n")
                    continue
                row["record_id"] = self.count
                if doi_digest is not None and self.dedupe:
                    self.by_doi[doi_digest] = self.count
                if key is not None and key not in self.by_content:
                    self.by_content[key] = self.count << 32 | (_low32(doi_digest) if doi_digest is not None else 0)
                origin = row.get("origin") or ""
                self.per_origin[origin] = self.per_origin.get(origin, 0) + 1
                self.count += 1
                yield row
        finally:
            if self.merged_file is not None:
                self.merged_file.close()

    def stats(self) -> BuildStats:
        return BuildStats(self.count, self.dropped, self.per_origin, dict(self.merged))


BUILD_METADATA_KEY = "scrutineer_build"


def _sha256(files: Sequence[Path]) -> str:
    """SHA-256 of one file, or of a folder's parts (each part's name and digest, in order)."""
    if len(files) == 1:
        return _file_sha256(files[0])
    combined = hashlib.sha256()
    for file in files:
        combined.update(f"{file.name}\0{_file_sha256(file)}\n".encode())
    return combined.hexdigest()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def describe_sources(sources: Sequence[IndexSource], tallies: Sequence[SourceTally] | None = None,
                     hash_files: bool = True) -> list[dict[str, Any]]:
    """What an index was built from: each dump's format, name, parts, bytes, SHA-256 (of the file,
    or of a folder's parts), the records read from it and its date: the latest record date the
    dump carries (`dump_date`, from `tallies`) and the files' latest modification time."""
    described = []
    for i, source in enumerate(sources):
        files = dump_files(source.path)
        modified = max(f.stat().st_mtime for f in files)
        entry: dict[str, Any] = {
            "format": source.format, "file": Path(source.path).name, "parts": len(files),
            "bytes": sum(f.stat().st_size for f in files),
            "modified": dt.datetime.fromtimestamp(modified, dt.UTC).isoformat(timespec="seconds"),
        }  # fmt: skip
        if hash_files:
            entry["sha256"] = _sha256(files)
        if tallies is not None:
            entry["records_read"] = tallies[i].records
            entry["records_skipped"] = tallies[i].skipped
            entry["dump_date"] = tallies[i].latest
        described.append(entry)
    return described


def write_index(rows: Iterable[Row], out: str | Path, batch_rows: int = 100_000, dedupe_doi: bool = True,
                merged_path: str | Path | None = None,
                sources: list[dict[str, Any]] | Callable[[], list[dict[str, Any]]] | None = None,
                covers: Sequence[str] = (), force_covers: bool = False) -> BuildStats:
    """Stream rows into `out` (Parquet, zstd), assigning record ids in order; `merged_path` gets
    one JSON line per record merged into an earlier one. `sources` (from `describe_sources`, or a
    function giving it once the rows are read), the build stats and the evidence registries
    (declared complete for `covers`, see `index_evidence`) go into the file's footer metadata, so a
    run can say which index answered it. A kind in `covers` that the sources cannot hold whole
    (`registry_gaps`, from the records read) raises `IncompleteRegistries` and writes nothing,
    unless `force_covers`, which records what is missing in the evidence (`forced`)."""
    unknown = set(covers) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown evidence kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    preparer = _RowPreparer(dedupe_doi, merged_path)
    evidence = IndexEvidence(covers=tuple(covers))
    batch: list[dict[str, Any]] = []
    with pq.ParquetWriter(tmp, INDEX_SCHEMA, compression="zstd") as writer:
        for row in preparer.prepare(_observed(rows, evidence)):
            batch.append(row)
            if len(batch) >= batch_rows:
                writer.write_table(pa.Table.from_pylist(batch, schema=INDEX_SCHEMA))
                batch = []
        if batch or preparer.count == 0:
            writer.write_table(pa.Table.from_pylist(batch, schema=INDEX_SCHEMA))
    stats = preparer.stats()
    built = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    described = sources() if callable(sources) else sources
    gaps = registry_gaps(covers, described or [])
    if gaps and not force_covers:
        tmp.unlink()
        raise IncompleteRegistries(gaps)
    evidence.forced = gaps
    build = json.dumps({"built_at": built, "sources": described or [], "records": stats.records,
                        "merged_by_reason": stats.merged_by_reason, "per_origin": stats.per_origin,
                        "evidence": evidence.summary()})  # fmt: skip
    _finish(tmp, out, {BUILD_METADATA_KEY: build, EVIDENCE_METADATA_KEY: evidence.to_json()})
    return replace(stats, forced=gaps)


def _finish(tmp: Path, out: Path, metadata: dict[str, str]) -> None:
    """Copy `tmp` to `out` row group by row group with `metadata` in the Arrow schema, so a plain
    `pq.read_table` (what `OfflineIndex.load` does) carries the evidence; the registries are
    known only once every row was read, after the first writer fixed its schema."""
    schema = INDEX_SCHEMA.with_metadata({**(INDEX_SCHEMA.metadata or {}), **metadata})
    source = pq.ParquetFile(tmp)
    with pq.ParquetWriter(out.with_suffix(out.suffix + ".tmp2"), schema, compression="zstd") as writer:
        for group in range(source.num_row_groups):
            writer.write_table(source.read_row_group(group).replace_schema_metadata(schema.metadata))
        writer.add_key_value_metadata(metadata)  # also in the footer, where `pq.read_metadata` finds it
    source.close()
    out.with_suffix(out.suffix + ".tmp2").replace(out)
    tmp.unlink()


def _observed(rows: Iterable[Row], evidence: IndexEvidence) -> Iterator[Row]:
    """Rows passed through, every one (merged repeats too) added to the evidence registries."""
    for row in rows:
        evidence.observe(row)
        yield row


def index_table(sources: Sequence[IndexSource], dedupe_doi: bool = True,
                covers: Sequence[str] = ()) -> tuple[pa.Table, BuildStats]:
    """The index of small dumps as an in-memory table (no file), for indexes built at load time;
    its schema metadata carries the evidence registries as a Parquet index's footer does."""
    preparer = _RowPreparer(dedupe_doi)
    evidence = IndexEvidence(covers=tuple(covers))
    rows = list(preparer.prepare(_observed(iter_rows(sources), evidence)))
    schema = INDEX_SCHEMA.with_metadata({**(INDEX_SCHEMA.metadata or {}), EVIDENCE_METADATA_KEY.encode(): evidence.to_json().encode()})
    return pa.Table.from_pylist(rows, schema=schema), preparer.stats()


def build_index(sources: Sequence[IndexSource], out: str | Path, dedupe_doi: bool = True,
                merged_path: str | Path | None = None, covers: Sequence[str] = (),
                hash_files: bool = True, max_record_bytes: int = MAX_RECORD_BYTES,
                on_skip: Callable[[SkippedRecord], None] | None = None, force_covers: bool = False) -> BuildStats:
    """Read every source dump and write the index to `out`, with each dump's provenance (records
    read and skipped) and the evidence registries (declared complete for `covers`). A record over
    `max_record_bytes` or unusable is skipped and named to `on_skip`; the build goes on. A
    registry the sources' formats cannot hold whole raises `IncompleteRegistries` before anything
    is read, one whose dumps turn out too small once read raises it then (see `write_index`)."""
    gaps = registry_gaps(covers, [{"format": s.format} for s in sources])
    if gaps and not force_covers:
        raise IncompleteRegistries(gaps)
    tallies = [SourceTally() for _ in sources]
    stats = write_index(iter_rows(sources, tallies, max_record_bytes, on_skip), out, dedupe_doi=dedupe_doi,
                        merged_path=merged_path, sources=lambda: describe_sources(sources, tallies, hash_files),
                        covers=covers, force_covers=force_covers)
    return replace(stats, skipped=sum(t.skipped for t in tallies))
