"""Write the offline bibliographic index: rows from `index_readers` into one Parquet file.

The file holds one row per record (`INDEX_SCHEMA`), with the normalized title precomputed so a
load does not renormalize a million titles. Records are deduplicated by content, never by key (two
different papers may share a BibTeX key, as HALLMARK files and hand-made .bib files do): the same
DOI (`reason "doi"`), or, when either side has no DOI, the same normalised title, year and first
author's family name (`reason "title_year_first_author"`). The first record wins (list the most
trusted dump first); `BuildStats.merged_by_reason` counts the merges, and `merged_path` writes one
JSON line per merged record naming the record it was merged into. Blocking structures are built at load time
(`offline_index.py`): they are cheap to rebuild and keep the file format simple.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from corpora.citations.normalization import normalize_text
from storage.bib_identifiers import canonical_arxiv_id, canonical_doi
from verifiers.citations.index_readers import Row, read_source

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
    """dblp | crossref | openalex | acl_anthology | bibtex | hallmark"""
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


def iter_rows(sources: Sequence[IndexSource]) -> Iterable[Row]:
    for source in sources:
        yield from read_source(source.format, Path(source.path), **dict(source.options))


class _RowPreparer:
    """Canonical identifiers, record ids and normalised titles for index rows, merging repeats of one
    work by content as it goes (see the module notes); one pass shared by every way an index is made."""

    def __init__(self, dedupe_doi: bool = True, merged_path: str | Path | None = None) -> None:
        self.dedupe = dedupe_doi
        self.by_doi: dict[str, int] = {}
        self.by_content: dict[bytes, int] = {}  # 16-byte digests: millions of dump records stay small
        self.per_origin: dict[str, int] = {}
        self.merged: dict[str, int] = {}
        self.earlier_doi: dict[int, str | None] = {}
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

    def _digest(self, row: dict[str, Any]) -> bytes | None:
        key = self.content_key(row)
        return None if key is None else hashlib.blake2b(repr(key).encode(), digest_size=16).digest()

    def _duplicate_of(self, row: dict[str, Any]) -> tuple[str, int] | None:
        doi = row.get("doi")
        if doi and doi in self.by_doi:
            return "doi", self.by_doi[doi]
        key = self._digest(row)
        if key is not None and key in self.by_content:
            earlier = self.by_content[key]
            if not (doi and self.earlier_doi.get(earlier) and self.earlier_doi[earlier] != doi):
                return "title_year_first_author", earlier  # two different DOIs are two works
        return None

    def prepare(self, rows: Iterable[Row]) -> Iterable[dict[str, Any]]:
        try:
            for row in rows:
                row = {**row, "doi": canonical_doi(row.get("doi")), "arxiv_id": canonical_arxiv_id(row.get("arxiv_id")),
                       "title_norm": normalize_text(row.get("title"))}
                duplicate = self._duplicate_of(row) if self.dedupe else None
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
                if row["doi"]:
                    self.by_doi[row["doi"]] = self.count
                key = self._digest(row)
                if key is not None:
                    self.by_content.setdefault(key, self.count)
                self.earlier_doi[self.count] = row["doi"]
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


def describe_sources(sources: Sequence[IndexSource]) -> list[dict[str, Any]]:
    """What an index was built from: each dump's format, file name, size and modification date
    (a dump's date, as far as the file can tell), for the index's provenance."""
    described = []
    for source in sources:
        stat = Path(source.path).stat()
        modified = dt.datetime.fromtimestamp(stat.st_mtime, dt.UTC).isoformat(timespec="seconds")
        described.append({"format": source.format, "file": Path(source.path).name, "bytes": stat.st_size,
                          "modified": modified})  # fmt: skip
    return described


def write_index(rows: Iterable[Row], out: str | Path, batch_rows: int = 100_000, dedupe_doi: bool = True,
                merged_path: str | Path | None = None, sources: list[dict[str, Any]] | None = None) -> BuildStats:
    """Stream rows into `out` (Parquet, zstd), assigning record ids in order; `merged_path` gets
    one JSON line per record merged into an earlier one. `sources` (from `describe_sources`) and
    the build stats go into the file's footer metadata, so a run can say which index answered it."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    preparer = _RowPreparer(dedupe_doi, merged_path)
    batch: list[dict[str, Any]] = []
    with pq.ParquetWriter(tmp, INDEX_SCHEMA, compression="zstd") as writer:
        for row in preparer.prepare(rows):
            batch.append(row)
            if len(batch) >= batch_rows:
                writer.write_table(pa.Table.from_pylist(batch, schema=INDEX_SCHEMA))
                batch = []
        if batch or preparer.count == 0:
            writer.write_table(pa.Table.from_pylist(batch, schema=INDEX_SCHEMA))
        stats = preparer.stats()
        built = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        writer.add_key_value_metadata({BUILD_METADATA_KEY: json.dumps(
            {"built_at": built, "sources": sources or [], "records": stats.records,
             "merged_by_reason": stats.merged_by_reason, "per_origin": stats.per_origin})})  # fmt: skip
    tmp.replace(out)
    return stats


def index_table(sources: Sequence[IndexSource], dedupe_doi: bool = True) -> tuple[pa.Table, BuildStats]:
    """The index of small dumps as an in-memory table (no file), for indexes built at load time."""
    preparer = _RowPreparer(dedupe_doi)
    table = pa.Table.from_pylist(list(preparer.prepare(iter_rows(sources))), schema=INDEX_SCHEMA)
    return table, preparer.stats()


def build_index(sources: Sequence[IndexSource], out: str | Path, dedupe_doi: bool = True,
                merged_path: str | Path | None = None) -> BuildStats:
    """Read every source dump and write the index to `out`."""
    return write_index(iter_rows(sources), out, dedupe_doi=dedupe_doi, merged_path=merged_path,
                       sources=describe_sources(sources))
