"""Offline index at scale: build time, memory and lookups/s on synthetic records.

    python bench/bench_index.py                 # 100,000 and 1,000,000 records
    python bench/bench_index.py --sizes 20000   # a quick run

Each size runs in its own subprocess so peak RSS (ru_maxrss) belongs to that size alone. Records
are synthetic: titles of 6-12 words drawn Zipf-like from a 60,000-word invented vocabulary, 1-6
authors from 200,000 family names, a DOI for every record, an arXiv id for 30%. Queries: DOI
(half present, half absent), arXiv id, exact titles, and titles with 2 and 8 deleted letters
(top-1 accuracy reported). Prints one JSON row per size.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import resource
import statistics
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from index.build import write_index  # noqa: E402
from index.offline_index import OfflineIndex  # noqa: E402

SEED = 20261129
VOCAB = 60_000
FAMILIES = 200_000
QUERIES = 2_000


def _words(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 11))) for _ in range(n)]


def synthetic_rows(n: int, seed: int = SEED) -> Iterator[dict]:
    rng = random.Random(seed)
    vocab = _words(rng, VOCAB)
    cumulative = list(itertools.accumulate(1.0 / (rank + 1) ** 0.9 for rank in range(VOCAB)))
    families = [w.capitalize() for w in _words(rng, FAMILIES)]
    for i in range(n):
        words = rng.choices(vocab, cum_weights=cumulative, k=rng.randint(6, 12))
        yield {"origin": "synthetic", "key": f"syn{i}", "title": " ".join(words).capitalize(),
               "authors": [{"family": f, "given": "A."} for f in rng.sample(families, rng.randint(1, 6))],
               "year": 1990 + i % 36, "venue": f"Synthetic Venue {i % 500}", "doi": f"10.5555/syn.{i}",
               "arxiv_id": f"{2000 + i % 99:04d}.{i:05d}"[:10] if i % 10 < 3 else None, "type": "article", "file": None}


def _delete(title: str, k: int, rng: random.Random) -> str:
    chars = list(title)
    letters = [i for i, c in enumerate(chars) if c.isalpha()]
    for i in sorted(rng.sample(letters, min(k, len(letters) - 1)), reverse=True):
        del chars[i]
    return "".join(chars)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(size: int) -> dict:
    rng = random.Random(SEED + 1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "index.parquet"
        start = time.perf_counter()
        write_index(synthetic_rows(size), path)
        write_s = time.perf_counter() - start
        rss_after_write = _rss_mb()
        start = time.perf_counter()
        index = OfflineIndex.load(path)
        load_s = time.perf_counter() - start
        rss_after_load = _rss_mb()
        file_mb = path.stat().st_size / 2**20
        sample = sorted(rng.sample(range(size), QUERIES))
        rows = index.table.take(sample).select(["title", "doi", "arxiv_id"]).to_pylist()

        def rate(fn, queries) -> tuple[float, list]:  # noqa: ANN001
            t = time.perf_counter()
            answers = [fn(q) for q in queries]
            return len(queries) / (time.perf_counter() - t), answers

        dois = [r["doi"] if k % 2 == 0 else f"10.5555/absent.{k}" for k, r in enumerate(rows)]
        doi_rate, doi_hits = rate(index.find_doi, dois)
        arxiv = [r["arxiv_id"] for r in rows if r["arxiv_id"]]
        arxiv_rate, _ = rate(index.find_arxiv, arxiv)
        result = {"records": size, "parquet_mb": round(file_mb, 1), "write_s": round(write_s, 2),
                  "load_build_s": round(load_s, 2), "peak_rss_mb_after_write": round(rss_after_write),
                  "peak_rss_mb_after_load": round(rss_after_load), "vocab_tokens": len(index._vocab),
                  "postings": int(len(index._postings)),
                  "doi_lookups_per_s": round(doi_rate), "doi_correct": sum(
                      (h == sample[k]) if k % 2 == 0 else (h is None) for k, h in enumerate(doi_hits)) / len(dois),
                  "arxiv_lookups_per_s": round(arxiv_rate)}
        for label, damage in (("exact", 0), ("del2", 2), ("del8", 8)):
            queries = [_delete(r["title"], damage, rng) if damage else r["title"] for r in rows[:500]]
            latencies, correct = [], 0
            for q, rid in zip(queries, sample[:500], strict=True):
                t = time.perf_counter()
                hits = index.search(q, limit=5)
                latencies.append(time.perf_counter() - t)
                correct += bool(hits) and hits[0].record_id == rid
            result[f"title_{label}_per_s"] = round(len(queries) / sum(latencies))
            result[f"title_{label}_p50_ms"] = round(1000 * statistics.median(latencies), 2)
            result[f"title_{label}_p95_ms"] = round(1000 * sorted(latencies)[int(0.95 * len(latencies))], 2)
            result[f"title_{label}_top1"] = correct / len(queries)
        return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one)), flush=True)
        return 0
    for size in args.sizes:
        done = subprocess.run([sys.executable, __file__, "--one", str(size)], capture_output=True, text=True)
        print(done.stdout.strip() or json.dumps({"records": size, "error": done.stderr[-2000:]}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
