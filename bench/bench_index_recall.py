"""Title search quality and speed of the offline index on a venue-scale generated index.

    python bench/bench_index_recall.py --index /tmp/venue/venue_index_1000000.parquet --queries 300
    python bench/bench_index_recall.py --index ... --baseline /path/to/old/offline_index.py   # before/after

Queries: `--queries` titles of random index records, exact and with two letters dropped
(bench/venue_data.py `corrupt`), plus half as many fabricated titles. Reports top-1 recall (the
top hit has the cited record's normalized title) and mean wall ms per query by kind. With
--baseline, the same queries also run through another version of index/offline_index.py
(e.g. `git show <rev>:index/offline_index.py > /tmp/old.py`). Build the index with
bench/bench_venue_scale.py --data-dir.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _load_module(path: str):
    spec = importlib.util.spec_from_file_location("baseline_offline_index", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    import pyarrow.parquet as pq

    from bench.venue_data import TitleModel, corrupt, real_titles
    from index import offline_index

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--index", required=True, help="index Parquet (index/build.py format)")
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--baseline", help="another offline_index.py to compare against")
    args = p.parse_args()
    table = pq.read_table(args.index)
    rng = random.Random(5)
    rids = rng.sample(range(table.num_rows), args.queries)
    titles = table.column("title").take(rids).to_pylist()
    model = TitleModel(real_titles(), seed=99)
    queries = ([("exact", r, t) for r, t in zip(rids, titles, strict=True)]
               + [("corrupted", r, corrupt(t, rng)) for r, t in zip(rids, titles, strict=True)]
               + [("fabricated", None, model.title()) for _ in range(args.queries // 2)])  # fmt: skip
    norm = table.column("title_norm")
    versions = [("current", offline_index)] + ([("baseline", _load_module(args.baseline))] if args.baseline else [])
    for name, module in versions:
        began = time.perf_counter()
        index = module.OfflineIndex(table)
        load_s = time.perf_counter() - began
        index.search("warm up the expansion table deep lerning")
        ms: dict[str, list[float]] = {}
        hits: dict[str, list[bool]] = {}
        for kind, rid, title in queries:
            began = time.perf_counter()
            found = index.search(title, 5)
            ms.setdefault(kind, []).append(1000 * (time.perf_counter() - began))
            if rid is not None:
                hits.setdefault(kind, []).append(bool(found) and norm[found[0].record_id].as_py() == norm[rid].as_py())
        print(json.dumps({"version": name, "index_records": table.num_rows, "load_s": round(load_s, 1),
                          "ms_per_query": {k: round(sum(v) / len(v), 2) for k, v in ms.items()},
                          "top1": {k: f"{sum(v)}/{len(v)}" for k, v in hits.items()}}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
