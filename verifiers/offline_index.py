"""The offline bibliographic index as a `BibSource`: exact DOI / arXiv lookup and fuzzy title search.

Pattern: the Parquet file written by `index_build.py` is loaded into Arrow columns; three small
structures are built from it, all vectorized so a million records load in seconds:

* DOI and arXiv id: sorted arrays of 64-bit hashes + `searchsorted`, confirmed by string compare;
* title blocking: an inverted index (CSR: token id -> sorted record ids) over normalized title
  tokens without stopwords. A query takes the posting lists of its rarest tokens (up to
  `max_expanded` query tokens missing from the vocabulary are expanded to their two closest
  vocabulary tokens with rapidfuzz, searching only word lengths that can reach ratio 80, so a
  typo still blocks), ranks records by shared tokens and rescores the best `pool` with
  rapidfuzz's normalized Indel ratio;
* small indexes (<= `full_scan_below` records) also fall back to a full rapidfuzz scan when
  blocking finds nothing close: exact retrieval where it is cheap.

Trade-off: blocking can miss a record whose every title token is damaged beyond the expansion
cutoff; `search` then returns what it found (maybe nothing), which callers must treat as "not
found in this index", never as proof of fabrication.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from rapidfuzz import fuzz, process

from clients.bib_record import Author, BibRecord
from corpora.citation_normalization import canonical_arxiv_id, canonical_doi, normalize_text

REPO_ROOT = Path(__file__).resolve().parents[1]

__all__ = ["OfflineIndex", "ScoredRecord", "open_index"]

STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "by", "for", "from", "in", "into", "is", "of", "on", "or", "the", "to", "with", "via", "its", "their", "using", "based", "towards", "toward"]
)


class ScoredRecord(tuple):
    """(record_id, score in [0, 100])."""

    __slots__ = ()

    def __new__(cls, record_id: int, score: float) -> ScoredRecord:
        return super().__new__(cls, (record_id, score))

    @property
    def record_id(self) -> int:
        return self[0]

    @property
    def score(self) -> float:
        return self[1]


def _hash_column(values: list[str | None]) -> tuple[np.ndarray, np.ndarray]:
    """(sorted hashes, record ids in that order) for the non-null values."""
    ids = np.fromiter((i for i, v in enumerate(values) if v), dtype=np.int64)
    hashes = np.fromiter((hash(values[i]) for i in ids), dtype=np.int64, count=len(ids))
    order = np.argsort(hashes, kind="stable")
    return hashes[order], ids[order]


class OfflineIndex:
    """A frozen bibliographic index; implements `clients.source.BibSource` (name "offline_index")."""

    name = "offline_index"

    def __init__(self, table: pa.Table, full_scan_below: int = 50_000, pool: int = 200,
                 max_postings: int = 400_000, max_expanded: int = 4) -> None:
        self.table = table.combine_chunks()
        self.size = self.table.num_rows
        self.full_scan_below = full_scan_below
        self.pool = pool
        self.max_postings = max_postings
        self.max_expanded = max_expanded
        self._lengths: dict[int, tuple[list[str], list[int]]] | None = None
        self.calls = 0
        self._titles = self.table.column("title_norm")
        self._doi_values = self.table.column("doi").to_pylist()
        self._doi_hashes, self._doi_ids = _hash_column(self._doi_values)
        self._arxiv_values = self.table.column("arxiv_id").to_pylist()
        self._arxiv_hashes, self._arxiv_ids = _hash_column(self._arxiv_values)
        self._build_postings()
        self._all_titles: list[str] | None = None

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path, **options: int) -> OfflineIndex:
        return cls(pq.read_table(path), **options)

    def _build_postings(self) -> None:
        tokens = pc.utf8_split_whitespace(pc.fill_null(self._titles, ""))
        parents = pc.list_parent_indices(tokens).to_numpy()
        encoded = pc.dictionary_encode(pc.list_flatten(tokens)).combine_chunks() if len(parents) else None
        if encoded is None:
            self._vocab: dict[str, int] = {}
            self._vocab_list: list[str] = []
            self._offsets = np.zeros(1, dtype=np.int64)
            self._postings = np.zeros(0, dtype=np.int32)
            return
        vocab_list = encoded.dictionary.to_pylist()
        token_ids = encoded.indices.to_numpy().astype(np.int64)
        keep = np.ones(len(vocab_list), dtype=bool)
        for i, word in enumerate(vocab_list):
            if word in STOPWORDS:
                keep[i] = False
        mask = keep[token_ids]
        pairs = np.unique(token_ids[mask] * np.int64(self.size + 1) + parents[mask].astype(np.int64))
        token_of_pair = pairs // (self.size + 1)
        self._postings = (pairs % (self.size + 1)).astype(np.int32)
        counts = np.bincount(token_of_pair, minlength=len(vocab_list))
        self._offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self._vocab_list = vocab_list
        self._vocab = {w: i for i, w in enumerate(vocab_list) if keep[i]}

    # -- exact lookups ------------------------------------------------------------------------
    @staticmethod
    def _find(value: str | None, hashes: np.ndarray, ids: np.ndarray, values: list[str | None]) -> int | None:
        if not value:
            return None
        h = hash(value)
        lo = int(np.searchsorted(hashes, h, side="left"))
        while lo < len(hashes) and hashes[lo] == h:
            rid = int(ids[lo])
            if values[rid] == value:
                return rid
            lo += 1
        return None

    def find_doi(self, doi: str) -> int | None:
        return self._find(canonical_doi(doi), self._doi_hashes, self._doi_ids, self._doi_values)

    def find_arxiv(self, arxiv_id: str) -> int | None:
        return self._find(canonical_arxiv_id(arxiv_id), self._arxiv_hashes, self._arxiv_ids, self._arxiv_values)

    # -- fuzzy title search ---------------------------------------------------------------------
    def _by_length(self, length: int) -> tuple[list[str], list[int]]:
        if self._lengths is None:
            groups: dict[int, tuple[list[str], list[int]]] = {}
            for word, tid in self._vocab.items():
                words, ids = groups.setdefault(len(word), ([], []))
                words.append(word)
                ids.append(tid)
            self._lengths = groups
        return self._lengths.get(length, ([], []))

    def _expand(self, token: str) -> list[int]:
        """Vocabulary tokens within Indel ratio 80 of an unknown token (only lengths that can reach it)."""
        n = len(token)
        best: list[tuple[float, int]] = []
        for length in range(max(1, (2 * n + 2) // 3), (3 * n) // 2 + 1):
            words, ids = self._by_length(length)
            for _, score, k in process.extract(token, words, scorer=fuzz.ratio, score_cutoff=80, limit=2):
                best.append((score, ids[k]))
        return [tid for _, tid in sorted(best, reverse=True)[:2]]

    def _token_ids(self, tokens: Iterable[str]) -> list[int]:
        ids: list[int] = []
        unknown = []
        for token in tokens:
            tid = self._vocab.get(token)
            if tid is not None:
                ids.append(tid)
            elif len(token) >= 4:
                unknown.append(token)
        for token in sorted(unknown, key=len, reverse=True)[: self.max_expanded]:
            ids.extend(self._expand(token))
        return ids

    def _block(self, query_norm: str) -> np.ndarray:
        tokens = {t for t in query_norm.split() if t not in STOPWORDS}
        ids = sorted(set(self._token_ids(tokens)), key=lambda t: self._offsets[t + 1] - self._offsets[t])
        lists, total = [], 0
        for tid in ids:
            start, end = self._offsets[tid], self._offsets[tid + 1]
            if lists and total + (end - start) > self.max_postings:
                break
            lists.append(self._postings[start:end])
            total += end - start
        if not lists:
            return np.zeros(0, dtype=np.int64)
        found, counts = np.unique(np.concatenate(lists), return_counts=True)
        if len(found) > self.pool:
            top = np.argpartition(-counts, self.pool - 1)[: self.pool]
            found = found[top]
        return found.astype(np.int64)

    def search(self, title: str, limit: int = 5, exclude: frozenset[int] | set[int] = frozenset()) -> list[ScoredRecord]:
        """Best title matches, highest score first; ties favour the smaller record id."""
        query = normalize_text(title)
        if not query or self.size == 0:
            return []
        candidates = [int(r) for r in self._block(query) if int(r) not in exclude]
        titles = self._titles.take(pa.array(candidates, type=pa.int64())).to_pylist() if candidates else []
        scored = [ScoredRecord(rid, fuzz.ratio(query, t or "")) for rid, t in zip(candidates, titles, strict=True)]
        if self.size <= self.full_scan_below and (not scored or max(s.score for s in scored) < 90):
            if self._all_titles is None:
                self._all_titles = [t or "" for t in self._titles.to_pylist()]
            hits = process.extract(query, self._all_titles, scorer=fuzz.ratio, limit=limit + len(exclude))
            scored.extend(ScoredRecord(rid, score) for _, score, rid in hits if rid not in exclude)
        best: dict[int, float] = {}
        for rid, score in scored:
            best[rid] = max(score, best.get(rid, 0.0))
        return [ScoredRecord(r, s) for r, s in sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]

    # -- records --------------------------------------------------------------------------------
    def records(self, record_ids: list[int], scores: list[float] | None = None) -> list[BibRecord]:
        rows = self.table.take(pa.array(record_ids, type=pa.int64())).to_pylist() if record_ids else []
        out = []
        for i, row in enumerate(rows):
            raw = {"record_id": row["record_id"], "origin": row["origin"], "key": row["key"], "file": row["file"]}
            if scores is not None:
                raw["title_score"] = scores[i]
            out.append(BibRecord(
                source=self.name, title=row["title"],
                authors=tuple(Author(a["family"] or "", a["given"] or "") for a in row["authors"] or []),
                year=row["year"], venue=row["venue"], doi=row["doi"], arxiv_id=row["arxiv_id"], type=row["type"],
                raw=raw,
            ))
        return out

    def record(self, record_id: int) -> BibRecord:
        return self.records([record_id])[0]

    # -- BibSource ------------------------------------------------------------------------------
    async def lookup_doi(self, doi: str) -> BibRecord | None:
        self.calls += 1
        rid = self.find_doi(doi)
        return None if rid is None else self.record(rid)

    async def lookup_arxiv(self, arxiv_id: str) -> BibRecord | None:
        self.calls += 1
        rid = self.find_arxiv(arxiv_id)
        return None if rid is None else self.record(rid)

    async def search_title(self, title: str, limit: int = 5) -> list[BibRecord]:
        self.calls += 1
        hits = self.search(title, limit)
        return self.records([h.record_id for h in hits], [h.score for h in hits])


#: A dump smaller than this is indexed in memory when it is opened; a larger one must be built
#: into Parquet first (`jobs/build_index.py`), so a worker never re-reads a big dump per process.
MAX_DUMP_BYTES_IN_MEMORY = 20 * 1024 * 1024


@functools.lru_cache(maxsize=4)
def _cached(path: str, mtime: float, size: int) -> OfflineIndex:
    if path.endswith(".parquet"):
        return OfflineIndex.load(path)
    from verifiers.index_build import IndexSource, index_table
    from verifiers.index_readers import sniff_format

    if size > MAX_DUMP_BYTES_IN_MEMORY:
        raise ValueError(f"{path}: a {size / 1e6:.0f} MB dump is too large to index at load time; "
                         f"build it once with jobs/build_index.py --out index.parquet and use that file")
    table, _ = index_table([IndexSource(sniff_format(path), path)])
    return OfflineIndex(table)


def resolve_index_path(path: str | Path) -> Path:
    """Where an `index_path` points: from the current directory, else from the repository root
    (bundled samples named relative to the repository, which is the Ray working_dir)."""
    path = Path(path)
    if not path.is_absolute() and not path.exists() and (REPO_ROOT / path).exists():
        return REPO_ROOT / path
    return path


def open_index(path: str | Path) -> OfflineIndex:
    """Load an index once per process (keyed by path, mtime and size), e.g. once per Ray worker.
    `path` is a Parquet index from `jobs/build_index.py`, or a small dump in a format that builder
    reads (.bib, DBLP .xml, HALLMARK or reference-list .jsonl), indexed in memory. A relative path
    is taken from the current directory, else from the repository root."""
    path = str(resolve_index_path(path).resolve())
    stat = os.stat(path)
    return _cached(path, stat.st_mtime, stat.st_size)
