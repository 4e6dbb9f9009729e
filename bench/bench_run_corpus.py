"""Throughput of the shard runner: items/s at 1 and 2 workers on a 10,000-entry citation corpus.

The corpus is built in a temp dir by cycling HALLMARK dev_public entries under fresh keys (the
shared data is read, never copied into the project). Each configuration runs into fresh storage.

    python bench/bench_run_corpus.py [--items 10000] [--system prescreen] [--shard-size 250]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ray  # noqa: E402

from cluster.run_config import RunConfig  # noqa: E402
from cluster.run_plan import plan_run  # noqa: E402
from cluster.runner import PoolConfig, run_shard_tasks  # noqa: E402
from corpora.citations.hallmark import load_hallmark_jsonl  # noqa: E402
from verifiers import RunContext, SystemSpec, build_system  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "hallmark" / "dev_public.jsonl"


def build_corpus(path: Path, n: int) -> None:
    source = [json.loads(line) for line in SHARED.read_text().splitlines() if line.strip()]
    with path.open("w") as out:
        for i in range(n):
            entry = dict(source[i % len(source)], bibtex_key=f"bench{i:07d}")
            out.write(json.dumps(entry) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=10_000)
    p.add_argument("--system", default="prescreen")
    p.add_argument("--shard-size", type=int, default=250)
    p.add_argument("--workers", default="1,2")
    p.add_argument("--args", default="{}", help="system factory arguments as JSON")
    p.add_argument("--index-from-dev", action="store_true",
                   help="build an offline index of dev_public's VALID entries and pass it as index_path (field_match)")
    args = p.parse_args()
    ray.init(include_dashboard=False, logging_level="ERROR")
    with tempfile.TemporaryDirectory() as tmp:
        corpus_path = Path(tmp) / "bench.jsonl"
        build_corpus(corpus_path, args.items)
        corpus = load_hallmark_jsonl(corpus_path)
        system_args = json.loads(args.args)
        if args.index_from_dev:
            from verifiers.citations.index_build import IndexSource, build_index

            index_path = Path(tmp) / "index.parquet"
            build_index([IndexSource("hallmark", str(SHARED))], index_path)
            system_args["index_path"] = str(index_path)
        print(f"{'workers':>7} {'items':>7} {'shards':>6} {'seconds':>8} {'items/s':>9}")
        for workers in (int(w) for w in args.workers.split(",")):
            config = RunConfig(storage=str(Path(tmp) / f"runs-{workers}"), shard_size=args.shard_size,
                               systems=[{"name": args.system, "args": system_args}], workers=workers)  # fmt: skip
            specs = [SystemSpec(args.system, system_args)]
            plan = plan_run(config, corpus, specs, make_context=functools.partial(RunContext, snapshot=config.snapshot))
            started = time.perf_counter()
            outcome = run_shard_tasks(plan.tasks, corpus.items, build=functools.partial(build_system),
                                      store_uri=config.storage, pool=PoolConfig(workers=workers, progress_every_s=30))  # fmt: skip
            elapsed = time.perf_counter() - started
            assert outcome.complete
            print(f"{workers:>7} {corpus.num_items:>7} {len(plan.tasks):>6} {elapsed:>8.2f} {corpus.num_items / elapsed:>9.0f}")
    ray.shutdown()


if __name__ == "__main__":
    main()
