"""Throughput of the shard runner: items/s at 1 and 2 workers on a 10,000-entry citation corpus.

The corpus is built in a temp dir by cycling HALLMARK dev_public entries under fresh keys (the
shared data is read, never copied into the project). Each configuration runs into fresh storage.

    python bench/bench_run_corpus.py [--items 10000] [--system prescreen] [--shard-size 250]

`--fixed-cost` measures instead what a default run costs beyond its verifiers' work: it runs
`python jobs/run_corpus.py` (the bundled 100-item corpus, three systems, local Ray, sqlite MLflow)
`--repeat` times, each in a fresh directory, through `bench/phase_timer.py`, and prints the median
wall time of every driver phase (Ray start, services, shards, scoring/MLflow/reports, ...).
`--repo` points at another checkout (e.g. an older commit) to compare before and after.

    python bench/bench_run_corpus.py --fixed-cost [--repeat 3] [--repo PATH] [-- run_corpus args]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
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


def fixed_cost(repo: Path, repeat: int, extra: list[str]) -> None:
    """Median phase times of `repeat` default runs (see the module docstring)."""
    import statistics
    import subprocess

    timer = Path(__file__).resolve().parent / "phase_timer.py"
    runs: list[dict[str, float]] = []
    for i in range(repeat):
        with tempfile.TemporaryDirectory(prefix="scrutineer-fixed-cost-") as tmp:
            # the timer runs from the measured checkout, so it times that checkout's code
            shutil.copy(timer, Path(tmp) / "phase_timer.py")
            env = {**os.environ, "PYTHONPATH": str(repo)}
            env.pop("RAY_ADDRESS", None)  # a new local Ray, as a first `python jobs/run_corpus.py` does
            started = time.perf_counter()
            done = subprocess.run([sys.executable, str(Path(tmp) / "phase_timer.py"), "--repo", str(repo), *extra],
                                  cwd=tmp, env=env, capture_output=True, text=True)  # fmt: skip
            wall = time.perf_counter() - started
            line = next((ln for ln in done.stdout.splitlines() if ln.startswith("PHASES ")), None)
            if done.returncode not in (0, 3) or line is None:
                raise SystemExit(f"run {i + 1} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
            phases = json.loads(line.removeprefix("PHASES "))
            phases["wall (subprocess)"] = wall
            runs.append(phases)
            print(f"run {i + 1}: {wall:.1f} s", flush=True)
    names = list(dict.fromkeys(k for r in runs for k in r))
    print(f"{'phase':<36} {'median s':>9}   runs")
    for name in names:
        values = [r.get(name, 0.0) for r in runs]
        print(f"{name:<36} {statistics.median(values):>9.2f}   {' '.join(f'{v:.2f}' for v in values)}")


def main() -> None:
    if "--fixed-cost" in sys.argv:
        p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("--fixed-cost", action="store_true")
        p.add_argument("--repeat", type=int, default=3)
        p.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]), help="checkout to measure")
        args, extra = p.parse_known_args()
        fixed_cost(Path(args.repo).resolve(), args.repeat, [a for a in extra if a != "--"])
        return
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
            from index.build import IndexSource, build_index

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
