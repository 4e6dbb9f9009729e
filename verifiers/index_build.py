"""Write the offline bibliographic index: rows from `index_readers` into one Parquet file.

The file holds one row per record (`INDEX_SCHEMA`), with the normalized title precomputed so a
load does not renormalize a million titles. Exact duplicates by DOI are dropped (first source
wins: list the most trusted dump first), and so are repeats of one origin's key. Blocking structures are built at load time
(`offline_index.py`): they are cheap to rebuild and keep the file format simple.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from corpora.citation_normalization import canonical_arxiv_id, canonical_doi, normalize_text
from verifiers.index_readers import Row, read_source

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


def iter_rows(sources: Sequence[IndexSource]) -> Iterable[Row]:
    for source in sources:
        yield from read_source(source.format, Path(source.path), **dict(source.options))


class _RowPreparer:
    """Canonical identifiers, record ids and normalised titles for index rows, dropping repeats
    (same DOI, or the same origin key) as it goes; one pass shared by every way an index is made."""

    def __init__(self, dedupe_doi: bool = True) -> None:
        self.dedupe_doi = dedupe_doi
        self.seen: set[str] = set()
        self.per_origin: dict[str, int] = {}
        self.count = self.dropped = 0

    def prepare(self, rows: Iterable[Row]) -> Iterable[dict[str, Any]]:
        for row in rows:
            row = {**row, "doi": canonical_doi(row.get("doi")), "arxiv_id": canonical_arxiv_id(row.get("arxiv_id"))}
            doi = row["doi"]
            ident = f"{row.get('origin')}\0{row.get('key')}" if row.get("key") else None
            if self.dedupe_doi and ((doi and doi in self.seen) or (ident and ident in self.seen)):
                self.dropped += 1
                continue
            self.seen.update(x for x in (doi, ident) if x)
            row.update(record_id=self.count, title_norm=normalize_text(row.get("title")))
            origin = row.get("origin") or ""
            self.per_origin[origin] = self.per_origin.get(origin, 0) + 1
            self.count += 1
            yield row

    def stats(self) -> BuildStats:
        return BuildStats(self.count, self.dropped, self.per_origin)


def write_index(rows: Iterable[Row], out: str | Path, batch_rows: int = 100_000, dedupe_doi: bool = True) -> BuildStats:
    """Stream rows into `out` (Parquet, zstd), assigning record ids in order."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    preparer = _RowPreparer(dedupe_doi)
    batch: list[dict[str, Any]] = []
    with pq.ParquetWriter(tmp, INDEX_SCHEMA, compression="zstd") as writer:
        for row in preparer.prepare(rows):
            batch.append(row)
            if len(batch) >= batch_rows:
                writer.write_table(pa.Table.from_pylist(batch, schema=INDEX_SCHEMA))
                batch = []
        if batch or preparer.count == 0:
            writer.write_table(pa.Table.from_pylist(batch, schema=INDEX_SCHEMA))
    tmp.replace(out)
    return preparer.stats()


def index_table(sources: Sequence[IndexSource], dedupe_doi: bool = True) -> tuple[pa.Table, BuildStats]:
    """The index of small dumps as an in-memory table (no file), for indexes built at load time."""
    preparer = _RowPreparer(dedupe_doi)
    table = pa.Table.from_pylist(list(preparer.prepare(iter_rows(sources))), schema=INDEX_SCHEMA)
    return table, preparer.stats()


def build_index(sources: Sequence[IndexSource], out: str | Path, dedupe_doi: bool = True) -> BuildStats:
    """Read every source dump and write the index to `out`."""
    return write_index(iter_rows(sources), out, dedupe_doi=dedupe_doi)
