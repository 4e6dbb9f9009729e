"""Evidence from the reviewed paper, in the three settings of HalluPeer (§5.2, appendix E.1.1,
table 8): `bm25` ("BM25-based retrieval over the source paper to obtain a compact evidence
context", the default, with the maintained `bm25s` package), `lcs` ("the top-1 paper chunk
containing the Longest Common Subsequence with the target review sentence": word-level LCS by
rapidfuzz's `LCSseq` over lower-cased word tokens, ties to the earlier chunk) and `full_paper`
("No-Retrieval": the whole paper text, up to `max_chars`, cut at a word with a marker saying so).
For a whole-review query (review mode, the figure-21 localisation prompt) `lcs` gives each
sentence's top-1 chunk, each chunk once, in paper order.

The paper text is cut into windows of `chunk_words` whitespace words overlapping by `overlap`
words (the paper does not publish its chunking); chunks and queries are tokenised by `bm25s` with
its English stop words and no stemming; the `top_k` chunks with a positive score are the evidence,
best first. A paper with no text, or a query with no indexed word, has no evidence (an empty list),
which the prompts show as such rather than padding with unrelated chunks.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["EVIDENCE_MODES", "EvidenceChunk", "PaperEvidence", "EvidenceCache", "EvidenceMode"]

EvidenceMode = Literal["bm25", "lcs", "full_paper"]
EVIDENCE_MODES: tuple[str, ...] = EvidenceMode.__args__  # type: ignore[attr-defined]
FULL_PAPER_MAX_CHARS = 200_000  # about 50k tokens: the paper's "full paper content" within a long-context model
_WORD = re.compile(r"\w+")


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
        self.paper_text = paper_text
        self.chunks = chunk_words(paper_text, chunk_size, overlap)
        self._chunk_words: list[list[str]] | None = None
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


    def lcs_top(self, query: str) -> list[EvidenceChunk]:
        """The chunk sharing the longest common word subsequence with `query` (none when no word is shared)."""
        from rapidfuzz.distance import LCSseq

        if self._chunk_words is None:
            self._chunk_words = [_WORD.findall(c.lower()) for c in self.chunks]
        words = _WORD.findall(query.lower())
        if not words or not self.chunks:
            return []
        scores = [LCSseq.similarity(words, chunk) for chunk in self._chunk_words]
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        return [EvidenceChunk(best, self.chunks[best], float(scores[best]))] if scores[best] > 0 else []

    def full_paper(self, max_chars: int = FULL_PAPER_MAX_CHARS) -> list[EvidenceChunk]:
        text = self.paper_text.strip()
        if not text:
            return []
        if len(text) > max_chars:
            cut = text.rfind(" ", 0, max_chars)
            text = text[: cut if cut > 0 else max_chars] + f" [... paper cut at {max_chars} characters]"
        return [EvidenceChunk(0, text, 1.0)]

    def select(self, mode: str, query: str, k: int) -> list[EvidenceChunk]:
        """Evidence for one review sentence under `mode` (bm25: the top `k` chunks)."""
        if mode == "bm25":
            return self.top(query, k)
        if mode == "lcs":
            return self.lcs_top(query)
        if mode == "full_paper":
            return self.full_paper()
        raise ValueError(f"evidence must be one of {EVIDENCE_MODES}, got {mode!r}")

    def select_for_review(self, mode: str, review_text: str, sentences: Sequence[str], k: int) -> list[EvidenceChunk]:
        """Evidence for a whole review: bm25 with the review as the query, lcs per sentence, or the paper."""
        if mode != "lcs":
            return self.select(mode, review_text, k)
        chosen = {c.index: c for s in sentences for c in self.lcs_top(s)}
        return [chosen[i] for i in sorted(chosen)]


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


def render_evidence(chunks: list[EvidenceChunk], *, numbered: bool = True) -> str:
    if not chunks:
        return "(no passage of the paper matches this text)"
    return "\n\n".join(f"[{c.index}] {c.text}" if numbered else c.text for c in chunks)
