"""The offline index's per-query work does not grow with the index: typo expansion probes a
symmetric-delete table instead of scanning the vocabulary, and blocking counts a bounded number
of postings. Work is counted (rapidfuzz scorer calls, postings counted), not timed."""

from __future__ import annotations

import random
import string
from pathlib import Path

import numpy as np
import pytest

import index.offline_index as offline_index
from index.build import write_index
from index.offline_index import OfflineIndex


def _rows(n: int, seed: int = 3) -> list[dict]:
    """Titles of 6 words: 2 from a small common vocabulary, 4 nearly unique (a large vocabulary)."""
    rng = random.Random(seed)
    common = ["learning", "neural", "networks", "models", "deep", "analysis", "graph", "language"]
    def word() -> str:
        return "".join(rng.choices(string.ascii_lowercase, k=rng.randint(6, 10)))
    return [{"origin": "t", "key": f"k{i}", "title": " ".join([*rng.sample(common, 2), *(word() for _ in range(4))]),
             "authors": [], "year": 2020, "venue": None, "doi": None, "arxiv_id": None, "type": "article", "file": None}
            for i in range(n)]  # fmt: skip


class CountingFuzz:
    """Stands in for rapidfuzz.fuzz in the module: counts scorer calls, also those process.extract makes."""

    def __init__(self) -> None:
        self.calls = 0

    def ratio(self, a, b, **kwargs) -> float:
        self.calls += 1
        return offline_index.fuzz_ratio(a, b, **kwargs)


@pytest.fixture
def counted(monkeypatch) -> CountingFuzz:
    from rapidfuzz import fuzz

    counter = CountingFuzz()
    monkeypatch.setattr(offline_index, "fuzz_ratio", fuzz.ratio, raising=False)
    monkeypatch.setattr(offline_index, "fuzz", counter)
    return counter


@pytest.mark.parametrize("size", [2_000, 40_000])
def test_a_title_whose_words_are_all_damaged_is_found_with_bounded_scoring(tmp_path: Path, counted, size: int):
    rows = _rows(size)
    write_index(rows, tmp_path / "i.parquet")
    index = OfflineIndex.load(tmp_path / "i.parquet", full_scan_below=0)
    assert len(index._vocab) > 2 * size  # a large vocabulary: the case a vocabulary scan pays for
    rng = random.Random(5)
    found = 0
    counted.calls = 0
    targets = rng.sample(range(size), 50)
    for rid in targets:
        words = rows[rid]["title"].split()
        # Every rare word loses one letter (or two): only expansion can block it.
        damaged = [w[:2] + w[3:] if i % 2 else w[:2] + w[4:] for i, w in enumerate(words[2:])]
        hits = index.search(" ".join(damaged), limit=1)
        found += bool(hits) and hits[0].record_id == rid
    assert found >= 48
    # Scorer calls per query: a few per expanded token plus the pool rescoring (<= 2 x 200); a
    # vocabulary scan makes thousands, and more the larger the index.
    assert counted.calls / len(targets) < 2 * index.pool + 4 * 40


def test_blocking_counts_at_most_the_posting_budget(tmp_path: Path, monkeypatch):
    rows = _rows(30_000)
    write_index(rows, tmp_path / "i.parquet")
    index = OfflineIndex.load(tmp_path / "i.parquet", full_scan_below=0, max_postings=5_000)
    counted: list[int] = []
    real_unique = np.unique

    def spy(values, **kwargs):
        counted.append(len(values))
        return real_unique(values, **kwargs)

    monkeypatch.setattr(offline_index.np, "unique", spy)
    title = rows[123]["title"]
    assert index.search(title, limit=1)[0].record_id == 123
    common = title.split()[:2]  # two common words: ~7,500 postings each, 15,000 together
    counted.clear()
    index.search(" ".join(common), limit=1)
    df = sorted(int(index._offsets[t + 1] - index._offsets[t]) for t in (index._vocab[w] for w in common))
    assert df[0] > 5_000 and sum(df) > 2 * 5_000
    assert counted == [df[0]]  # the rarest list is always taken; the second would break the budget
