"""Venue scale: field_match over 250,000 references against a 1,000,000-record offline index.

    python bench/bench_venue_scale.py                                   # the venue-scale run: 250k refs, 1M index, 2 workers
    python bench/bench_venue_scale.py --index-sizes 10000,100000,1000000 --references 5000 --workers 1
                                                                        # per-item cost against index size
    python bench/bench_venue_scale.py --data-dir /tmp/venue --index-sizes 100000 --references 20000 --workers 1,2

Index records and references come from `bench/venue_data.py` (titles with the word statistics of
the real titles under ../shared/data, read at run time). References: 60% cite a record exactly,
25% with two letters dropped from the title, 15% are fabricated. Each worker is a process that
loads the index once (as a Ray worker does) and runs `field_match` (sources=["offline_index"])
over its share in shards of 250 items. Prints one JSON row per (index size, workers): wall time,
items/s, items/s per worker, CPU ms per item (the figure a shared, loaded machine distorts least),
index load time, peak RSS of each worker and in all, the load average before and after the run,
and field_match's labels per reference kind.
Generated indexes are kept under --data-dir (default: a temp dir) to be reused.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHARD = 250


def build_index(path: Path, size: int) -> float:
    from bench.venue_data import TitleModel, index_rows, real_titles
    from index.build import write_index

    if path.exists():
        return 0.0
    start = time.perf_counter()
    write_index(index_rows(TitleModel(real_titles()), size), path.with_suffix(".tmp"))
    path.with_suffix(".tmp").rename(path)
    return time.perf_counter() - start


def build_references(index_path: Path, corpus_path: Path, count: int) -> list[str]:
    """A HALLMARK JSONL corpus citing the index; returns each reference's kind, in order."""
    import random

    import pyarrow.parquet as pq

    from bench.venue_data import TitleModel, corrupt, real_titles

    table = pq.read_table(index_path, columns=["title", "authors", "year", "venue"])
    rng, model = random.Random(7), TitleModel(real_titles(), seed=8)
    picks = [rng.randrange(table.num_rows) for _ in range(count)]
    rows = table.take(picks).to_pylist()
    kinds = []
    with corpus_path.open("w") as out:
        for i, row in enumerate(rows):
            roll = rng.random()
            kind = "exact" if roll < 0.60 else "corrupted" if roll < 0.85 else "fabricated"
            if kind == "fabricated":
                row = {"title": model.title(), "authors": [model.author() for _ in range(rng.randint(1, 4))],
                       "year": 1995 + rng.randrange(31), "venue": row["venue"]}  # fmt: skip
            title = corrupt(row["title"], rng) if kind == "corrupted" else row["title"]
            fields = {"title": title, "author": " and ".join(f"{a['given']} {a['family']}" for a in row["authors"]),
                      "year": str(row["year"]), "booktitle": row["venue"]}  # fmt: skip
            out.write(json.dumps({"bibtex_key": f"ref{i:07d}", "bibtex_type": "inproceedings", "fields": fields,
                                  "label": "HALLUCINATED" if kind == "fabricated" else "VALID",
                                  "hallucination_type": "fabricated" if kind == "fabricated" else None}) + "\n")  # fmt: skip
            kinds.append(kind)
    return kinds


def worker(index_path: str, corpus_path: str, start: int, stop: int) -> dict:
    """One worker process: load the index, run field_match over items[start:stop]."""
    from corpora import load_corpus
    from index.offline_index import open_index
    from storage.records import Item
    from verifiers.citations.field_match import build_field_match
    from verifiers.system import RunContext

    began = time.perf_counter()
    open_index(index_path)
    load_s = time.perf_counter() - began
    verifier = build_field_match(sources=["offline_index"], index_path=index_path)
    items = load_corpus(corpus_path, "hallmark", "venue").items.slice(start, stop - start).to_pylist()
    ctx = RunContext("bench", "2026-12-01")
    labels = []
    began, cpu_began = time.perf_counter(), time.process_time()
    for at in range(0, len(items), SHARD):
        batch = [Item.from_row(r) for r in items[at:at + SHARD]]
        outputs = {o.item_id: o.label for o in asyncio.run(verifier.run(batch, ctx))}
        labels += [outputs.get(i.item_id) for i in batch]
    return {"items": len(items), "run_s": time.perf_counter() - began, "cpu_s": time.process_time() - cpu_began,
            "load_s": load_s, "labels": labels,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}  # fmt: skip


def measure(index_path: Path, corpus_path: Path, kinds: list[str], workers: int) -> dict:
    n = len(kinds)
    bounds = [(n * w // workers, n * (w + 1) // workers) for w in range(workers)]
    load_before = os.getloadavg()[0]
    began = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        results = list(pool.map(worker, *zip(*[(str(index_path), str(corpus_path), a, b) for a, b in bounds], strict=True)))
    wall = time.perf_counter() - began
    labels = [label for r in results for label in r["labels"]]
    by_kind: dict[str, Counter] = {}
    for kind, label in zip(kinds, labels, strict=True):
        by_kind.setdefault(kind, Counter())[label] += 1
    run_s = max(r["run_s"] for r in results)
    return {
        "workers": workers, "references": n, "wall_s": round(wall, 1),
        "items_per_s": round(n / wall, 1), "items_per_s_after_load": round(n / run_s, 1),
        "items_per_s_per_worker": round(sum(r["items"] / r["run_s"] for r in results) / workers, 1),
        # CPU seconds are what a loaded, shared machine does not distort: items per CPU-second of a worker.
        "items_per_cpu_s": round(n / sum(r["cpu_s"] for r in results), 1),
        "cpu_ms_per_item": round(1000 * sum(r["cpu_s"] for r in results) / n, 2),
        "index_load_s": round(max(r["load_s"] for r in results), 1),
        "peak_rss_mb_per_worker": [round(r["peak_rss_mb"]) for r in results],
        "peak_rss_mb_total": round(sum(r["peak_rss_mb"] for r in results)),
        "loadavg_1m": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        "labels_by_kind": {k: dict(v) for k, v in sorted(by_kind.items())},
    }  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--index-sizes", default="1000000", help="comma-separated index record counts")
    p.add_argument("--references", type=int, default=250_000)
    p.add_argument("--workers", default="2", help="comma-separated worker process counts")
    p.add_argument("--data-dir", help="keep generated indexes here (default: a temp dir)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="venue-bench-") as tmp:
        data = Path(args.data_dir or tmp)
        data.mkdir(parents=True, exist_ok=True)
        for size in [int(s) for s in args.index_sizes.split(",")]:
            index_path = data / f"venue_index_{size}.parquet"
            build_s = build_index(index_path, size)
            corpus_path = Path(tmp) / f"refs_{size}_{args.references}.jsonl"
            kinds = build_references(index_path, corpus_path, args.references)
            for workers in [int(w) for w in args.workers.split(",")]:
                row = {"index_records": size, "index_build_s": round(build_s, 1),
                       "index_mb": round(index_path.stat().st_size / 2**20, 1), "cores": os.cpu_count(),
                       **measure(index_path, corpus_path, kinds, workers)}  # fmt: skip
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
