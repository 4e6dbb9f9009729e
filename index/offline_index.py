"""The offline bibliographic index as a `BibSource`: exact DOI / arXiv lookup and fuzzy title search.

Pattern: the Parquet file written by `index/build.py` is loaded into Arrow columns; three small
structures are built from it, all vectorized so a million records load in seconds:

* DOI and arXiv id: sorted arrays of 64-bit hashes + `searchsorted`, confirmed by string compare;
* title blocking: an inverted index (CSR: token id -> sorted record ids) over normalized title
  tokens without stopwords. A query takes the posting lists of its rarest known tokens, up to
  `max_postings` record ids in all, ranks records by shared tokens and rescores the best `pool`
  with rapidfuzz's normalized Indel ratio (an exact title is also found by a hash lookup, so a
  title of common words only cannot be lost among ties). Only when that finds nothing scoring
  >= 90 are up to `max_expanded` query tokens missing from the vocabulary expanded to their two
  closest vocabulary tokens (Indel ratio >= 80) and the query blocked again, so a typo in a rare
  word still blocks;
* small indexes (<= `full_scan_below` records) also fall back to a full rapidfuzz scan when
  blocking finds nothing close: exact retrieval where it is cheap.

Per-query work is bounded whatever the index size (a venue-scale index has 1M records and a
vocabulary of hundreds of thousands of words): the posting budget caps the record ids counted,
and expansion looks typo candidates up in a symmetric-delete table (every vocabulary word and its
one-letter deletions, hashed and sorted, built on first use) instead of scanning the vocabulary,
so it costs O(token length) lookups. An earlier version scanned every vocabulary word of a
compatible length for each unknown token and counted up to 400,000 postings per query: its cost
grew with the index (about 400 items/s at 1,500 records, 68 at 200,000).

Trade-off: blocking can miss a record whose every title token is damaged beyond the expansion
cutoff (expansion finds words within one edit, or two deletions, of a damaged token); `search`
then returns what it found (maybe nothing), which callers must treat as "not found in this
index", never as proof of fabrication.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from rapidfuzz import fuzz, process

from clients.bib_record import Author, BibRecord
from corpora.citations.normalization import canonical_arxiv_id, canonical_doi, normalize_text

REPO_ROOT = Path(__file__).resolve().parents[1]

__all__ = ["OfflineIndex", "ScoredRecord", "open_index"]

STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "by", "for", "from", "in", "into", "is", "of", "on", "or", "the", "to", "with", "via", "its", "their", "using", "based", "towards", "toward"]
)


ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def _deletions(word: str) -> set[str]:
    """The word and every one-letter deletion of it."""
    return {word, *(word[:i] + word[i + 1:] for i in range(len(word)))}


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
                 max_postings: int = 20_000, max_expanded: int = 4) -> None:
        self.table = table.combine_chunks()
        self.size = self.table.num_rows
        self.full_scan_below = full_scan_below
        self.pool = pool
        self.max_postings = max_postings
        self.max_expanded = max_expanded
        self._deletes: tuple[np.ndarray, np.ndarray] | None = None
        self.calls = 0
        self._titles = self.table.column("title_norm")
        self._doi_values = self.table.column("doi").to_pylist()
        self._doi_hashes, self._doi_ids = _hash_column(self._doi_values)
        self._arxiv_values = self.table.column("arxiv_id").to_pylist()
        self._arxiv_hashes, self._arxiv_ids = _hash_column(self._arxiv_values)
        self._build_postings()
        titles = self._titles.to_pylist()  # exact titles: a hash lookup, as for DOIs
        self._title_hashes, self._title_ids = _hash_column(titles)
        del titles
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
    def _delete_table(self) -> tuple[np.ndarray, np.ndarray]:
        """(sorted hashes of every vocabulary word and its one-letter deletions, word id of each)."""
        if self._deletes is None:
            words = [(w, tid) for w, tid in self._vocab.items() if len(w) >= 3]
            hash_parts, id_parts = [], []
            for at in range(0, len(words), 20_000):  # chunks: no million-tuple transient lists
                variants = [(tid, _deletions(w)) for w, tid in words[at:at + 20_000]]
                hash_parts.append(np.fromiter((hash(v) for _, vs in variants for v in vs), dtype=np.int64))
                id_parts.append(np.repeat(np.array([tid for tid, _ in variants], dtype=np.int64),
                                          [len(vs) for _, vs in variants]))  # fmt: skip
            hashes = np.concatenate(hash_parts) if hash_parts else np.zeros(0, dtype=np.int64)
            ids = np.concatenate(id_parts) if id_parts else np.zeros(0, dtype=np.int64)
            order = np.argsort(hashes, kind="stable")
            self._deletes = (hashes[order], ids[order])
        return self._deletes

    def _expand(self, token: str) -> list[int]:
        """The two vocabulary tokens closest to an unknown token (Indel ratio >= 80), found by the
        symmetric-delete rule: O(token length) hash probes, whatever the vocabulary size."""
        hashes, ids = self._delete_table()
        # The token, its deletions and its one-letter insertions: a vocabulary word within one
        # edit of it, or two deletions (an insertion into the token is a deletion of the word).
        variants = _deletions(token) | {token[:i] + c + token[i:] for i in range(len(token) + 1) for c in ALPHABET}
        probes = np.fromiter((hash(v) for v in variants), dtype=np.int64)
        lo, hi = np.searchsorted(hashes, probes, side="left"), np.searchsorted(hashes, probes, side="right")
        found = {int(t) for a, b in zip(lo, hi, strict=True) for t in ids[a:b]}
        scored = [(fuzz.ratio(token, self._vocab_list[t]), t) for t in found]
        return [tid for score, tid in sorted(scored, key=lambda st: (-st[0], st[1]))[:2] if score >= 80]

    def _block(self, ids: Iterable[int]) -> np.ndarray:
        """Records sharing the most of these token ids: rarest postings first, `max_postings` ids
        counted at most. When more than `pool` records tie for the best counts, the tokens left out
        break the tie by binary search in their (sorted) postings: O(candidates x log), not O(df)."""
        ids = sorted(set(ids), key=lambda t: self._offsets[t + 1] - self._offsets[t])
        lists, total, taken = [], 0, 0
        for tid in ids:
            start, end = self._offsets[tid], self._offsets[tid + 1]
            if lists and total + (end - start) > self.max_postings:
                break
            lists.append(self._postings[start:end])
            total += end - start
            taken += 1
        if not lists:
            return np.zeros(0, dtype=np.int64)
        found, counts = np.unique(np.concatenate(lists), return_counts=True)
        if len(found) > self.pool:
            kth = np.partition(counts, len(counts) - self.pool)[len(counts) - self.pool]
            tied = counts >= kth
            if self.pool < tied.sum() <= self.max_postings and taken < len(ids):
                found, counts = found[tied], counts[tied].astype(np.int64)
                for tid in ids[taken: taken + self.max_expanded]:
                    postings = self._postings[self._offsets[tid]:self._offsets[tid + 1]]
                    at = np.minimum(np.searchsorted(postings, found), len(postings) - 1)
                    counts += postings[at] == found
            top = np.argpartition(-counts, self.pool - 1)[: self.pool]
            found = found[top]
        return found.astype(np.int64)

    def _exact_title(self, query: str) -> list[int]:
        h = hash(query)
        lo = int(np.searchsorted(self._title_hashes, h, side="left"))
        hi = int(np.searchsorted(self._title_hashes, h, side="right"))
        rids = [int(r) for r in self._title_ids[lo:hi]]
        return [r for r, t in zip(rids, self._titles.take(pa.array(rids, type=pa.int64())).to_pylist(), strict=True)
                if t == query] if rids else []  # fmt: skip

    def _rescore(self, query: str, candidates: np.ndarray, exclude: frozenset[int] | set[int], limit: int) -> list[ScoredRecord]:
        """The `limit` best candidates by title ratio (ties: smaller record id), scored in one C call."""
        rids = np.sort(candidates)
        if exclude:
            rids = rids[~np.isin(rids, np.fromiter(exclude, dtype=np.int64, count=len(exclude)))]
        if not len(rids):
            return []
        titles = [t or "" for t in self._titles.take(pa.array(rids, type=pa.int64())).to_pylist()]
        scores = process.cdist([query], titles, scorer=fuzz.ratio, dtype=np.float64)[0]
        order = np.lexsort((rids, -scores))[:limit]
        return [ScoredRecord(int(rids[i]), float(scores[i])) for i in order]

    def search(self, title: str, limit: int = 5, exclude: frozenset[int] | set[int] = frozenset()) -> list[ScoredRecord]:
        """Best title matches, highest score first; ties favour the smaller record id."""
        query = normalize_text(title)
        if not query or self.size == 0:
            return []
        tokens = {t for t in query.split() if t not in STOPWORDS}
        known = [self._vocab[t] for t in tokens if t in self._vocab]
        unknown = sorted((t for t in tokens if t not in self._vocab and len(t) >= 4), key=lambda t: (-len(t), t))
        scored = [ScoredRecord(rid, 100.0) for rid in self._exact_title(query) if rid not in exclude][:limit]
        scored += self._rescore(query, self._block(known), exclude, limit)
        if unknown and (not scored or max(s.score for s in scored) < 90):
            expanded = [tid for token in unknown[: self.max_expanded] for tid in self._expand(token)]
            if expanded:
                scored += self._rescore(query, self._block(known + expanded), exclude, limit)
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
    from index.build import IndexSource, index_table
    from index.readers import sniff_format

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


def index_provenance(path: str | Path) -> dict[str, Any]:
    """Which index answered a run: the file (name, bytes, SHA-256), its record count and, for a
    Parquet index from `jobs/build_index.py`, the dumps it was built from with their dates."""
    import hashlib
    import json

    resolved = resolve_index_path(path)
    digest = hashlib.sha256()
    with open(resolved, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    provenance: dict[str, Any] = {"path": str(path), "file": resolved.name, "bytes": resolved.stat().st_size,
                                  "sha256": digest.hexdigest()}  # fmt: skip
    if resolved.suffix == ".parquet":
        meta = pq.read_metadata(resolved)
        provenance["records"] = meta.num_rows
        build = (meta.metadata or {}).get(b"scrutineer_build")
        if build:
            provenance.update({k: v for k, v in json.loads(build).items() if k != "records"})
    else:
        from index.readers import sniff_format

        provenance.update(records=open_index(resolved).table.num_rows, sources=[
            {"format": sniff_format(resolved), "file": resolved.name, "bytes": resolved.stat().st_size}])
    return provenance


def open_index(path: str | Path) -> OfflineIndex:
    """Load an index once per process (keyed by path, mtime and size), e.g. once per Ray worker.
    `path` is a Parquet index from `jobs/build_index.py`, or a small dump in a format that builder
    reads (.bib, DBLP .xml, HALLMARK or reference-list .jsonl), indexed in memory. A relative path
    is taken from the current directory, else from the repository root."""
    path = str(resolve_index_path(path).resolve())
    stat = os.stat(path)
    return _cached(path, stat.st_mtime, stat.st_size)
