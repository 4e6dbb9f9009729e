"""The offline index as a BibSource: exact DOI / arXiv lookup, blocked fuzzy title search."""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from pathlib import Path

import pytest

from clients.source import BibSource
from index.build import write_index
from index.offline_index import OfflineIndex, open_index

WORDS = [f"{a}{b}" for a in ("neur", "graph", "spars", "laten", "kern", "vari", "rob", "adapt", "cont", "diff",
                             "bayes", "token", "quant", "optim", "causa", "proba", "meta", "fede", "contr", "pixel")
         for b in ("al", "ing", "ive", "ation", "ness", "ity", "er", "ics", "ous", "ent")]


def synthetic_rows(n: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    return [{"origin": "synthetic", "key": f"s{i}", "title": " ".join(rng.choices(WORDS, k=rng.randint(5, 10))).capitalize(),
             "authors": [{"family": f"Fam{rng.randint(0, 5000)}", "given": "A"}], "year": 2000 + i % 25,
             "venue": "Synthetic Conf", "doi": f"10.9999/syn.{i}", "arxiv_id": None, "type": "article", "file": None}
            for i in range(n)]


def delete_chars(title: str, budget: int, rng: random.Random) -> str:
    chars = list(title)
    letters = [i for i, c in enumerate(chars) if c.isalpha()]
    for i in sorted(rng.sample(letters, budget), reverse=True):
        del chars[i]
    return "".join(chars)


def test_real_index_exact_lookups_and_protocol(real_index_path: Path) -> None:
    index = open_index(real_index_path)
    assert isinstance(index, BibSource)
    assert open_index(real_index_path) is index  # loaded once per process
    record = asyncio.run(index.lookup_doi("https://doi.org/10.18653/V1/2022.ACL-LONG.1"))
    assert record is not None and record.title.startswith("AdapLeR") and record.source == "offline_index"
    assert asyncio.run(index.lookup_doi("10.18653/v1/2022.acl-long.99999")) is None
    arxiv = asyncio.run(index.lookup_arxiv("arXiv:1706.03762v7"))
    assert arxiv is not None and arxiv.title == "Attention Is All You Need"
    hits = asyncio.run(index.search_title("Adapler speeding up inference by adaptive length reduction", limit=3))
    assert hits[0].doi == "10.18653/v1/2022.acl-long.1" and hits[0].raw["title_score"] == 100.0
    assert asyncio.run(index.search_title("", limit=3)) == []


def test_title_search_recovers_damaged_titles_with_blocking(tmp_path: Path) -> None:
    rows = synthetic_rows(20_000)
    write_index(rows, tmp_path / "syn.parquet")
    index = OfflineIndex.load(tmp_path / "syn.parquet", full_scan_below=0)  # blocking only, no full scan
    rng = random.Random(11)
    queries = rng.sample(range(len(rows)), 200)
    found = {1: 0, 4: 0}
    latencies = []
    for budget in found:
        for i in queries:
            start = time.perf_counter()
            hits = index.search(delete_chars(rows[i]["title"], budget, rng), limit=1)
            latencies.append(time.perf_counter() - start)
            found[budget] += bool(hits) and hits[0].record_id == i
    assert found[1] >= 198 and found[4] >= 190
    assert statistics.median(latencies) < 0.05  # milliseconds, with headroom for a shared CI core


def test_search_orders_ties_by_record_id_and_honours_exclusion(tmp_path: Path) -> None:
    rows = synthetic_rows(3)
    rows[2]["title"] = rows[0]["title"]
    rows[2]["doi"] = "10.9999/dup"
    write_index(rows, tmp_path / "t.parquet")
    index = OfflineIndex.load(tmp_path / "t.parquet")
    hits = index.search(rows[0]["title"], limit=3)
    assert [h.record_id for h in hits[:2]] == [0, 2] and hits[0].score == hits[1].score == 100.0
    assert index.search(rows[0]["title"], limit=1, exclude={0})[0].record_id == 2
    assert index.find_doi("10.9999/DUP") == 2 and index.find_doi("10.9999/nope") is None


@pytest.mark.parametrize("limit", [1, 5])
def test_search_title_returns_bib_records(real_index_path: Path, limit: int) -> None:
    index = open_index(real_index_path)
    records = asyncio.run(index.search_title("Attention is all you need", limit=limit))
    assert 1 <= len(records) <= limit
    assert records[0].authors[0].family == "Vaswani" and records[0].year == 2017
