"""BM25 evidence from the reviewed paper (HalluPeer §5.2: "BM25-based retrieval over the source
paper to obtain a compact evidence context"), with the maintained `bm25s` package.

The paper text is cut into windows of `chunk_words` whitespace words overlapping by `overlap`
words (the paper does not publish its chunking); chunks and queries are tokenised by `bm25s` with
its English stop words and no stemming; the `top_k` chunks with a positive score are the evidence,
best first. A paper with no text, or a query with no indexed word, has no evidence (an empty list),
which the prompts show as such rather than padding with unrelated chunks.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["EvidenceChunk", "PaperEvidence", "EvidenceCache"]


@dataclass(frozen=True)
class EvidenceChunk:
    index: int
    text: str
    score: float


def chunk_words(text: str, size: int, overlap: int) -> list[str]:
    words = text.split()
    if not words:
        return []
    step = max(1, size - overlap)
    return [" ".join(words[i : i + size]) for i in range(0, max(1, len(words) - overlap), step)]


class PaperEvidence:
    """A BM25 index over one paper's chunks."""

    def __init__(self, paper_text: str, chunk_size: int = 120, overlap: int = 20) -> None:
        import bm25s  # optional dependency of the review detectors only

        self._bm25s = bm25s
        self.chunks = chunk_words(paper_text, chunk_size, overlap)
        self._index = None
        if self.chunks:
            tokens = bm25s.tokenize(self.chunks, stopwords="en", show_progress=False)
            if tokens.vocab:
                self._index = bm25s.BM25()
                self._index.index(tokens, show_progress=False)

    def top(self, query: str, k: int) -> list[EvidenceChunk]:
        if self._index is None or k <= 0:
            return []
        words = self._bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)
        if not words or not words[0]:
            return []
        ids, scores = self._index.retrieve(words, k=min(k, len(self.chunks)), show_progress=False)
        return [EvidenceChunk(int(i), self.chunks[int(i)], float(s))
                for i, s in zip(ids[0], scores[0], strict=True) if s > 0]  # fmt: skip


class EvidenceCache:
    """One index per paper, the most recent few kept (a worker sees a paper's reviews together)."""

    def __init__(self, chunk_size: int, overlap: int, keep: int = 8) -> None:
        self.chunk_size, self.overlap, self.keep = chunk_size, overlap, keep
        self._papers: OrderedDict[str, PaperEvidence] = OrderedDict()

    def get(self, paper_id: str, paper_text: str) -> PaperEvidence:
        if paper_id in self._papers:
            self._papers.move_to_end(paper_id)
            return self._papers[paper_id]
        evidence = PaperEvidence(paper_text, self.chunk_size, self.overlap)
        self._papers[paper_id] = evidence
        while len(self._papers) > self.keep:
            self._papers.popitem(last=False)
        return evidence


def render_evidence(chunks: list[EvidenceChunk]) -> str:
    if not chunks:
        return "(no passage of the paper matches this text)"
    return "\n\n".join(f"[{c.index}] {c.text}" for c in chunks)
