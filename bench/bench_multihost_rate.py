"""Achieved rate vs the configured limit with workers on several Ray hosts (network namespaces).

Builds a Ray head and `--hosts` worker hosts, each in its own network namespace on this machine
(tests/helpers/netns_cluster.py; needs root and `ip netns`), then runs `jobs/run_corpus.py` with
`--workers` workers on the worker hosts: `llm_zero_shot` against the replay server and `doi_only`
against the test source server as Crossref, both limited to `--rate` requests per second (token
bucket, 429 beyond) and the run configured at that limit. Prints, per server, the steady-state
rate (see `tests.helpers.multihost_rate.steady`: from the end of start-up to 1 s before the last
answer), its ratio to the limit, and the
429s in warm-up and after.

    sudo python bench/bench_multihost_rate.py --hosts 2 --workers 8 --rate 4 --items 120
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers.multihost_rate import measure_rate_run  # noqa: E402
from tests.helpers.netns_cluster import netns_cluster, unavailable_reason  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=2, help="worker hosts (namespaces) besides the head")
    parser.add_argument("--workers", type=int, default=8, help="shard workers, spread over the worker hosts")
    parser.add_argument("--rate", type=float, default=4.0, help="requests per second each server allows")
    parser.add_argument("--items", type=int, default=120, help="citations per system")
    args = parser.parse_args()
    if reason := unavailable_reason():
        print(f"cannot build the hosts here: {reason}", file=sys.stderr)
        return 2
    per_host = -(-args.workers // args.hosts)
    with netns_cluster(workers=args.hosts, worker_cpus=per_host) as cluster:
        os.environ.update(cluster.s3_env())
        log = Path(tempfile.mkdtemp(prefix="bench-multihost-rate-")) / "run.log"
        run = measure_rate_run(cluster, "bench-rate", rate=args.rate, items=args.items, workers=args.workers, log=log)
    print(f"{args.workers} workers on {args.hosts} hosts {run.worker_hosts}, {args.items} items per system, "
          f"run {run.seconds:.0f} s, prompts paid twice: {run.paid_twice}")  # fmt: skip
    print("| server | limit req/s | achieved req/s | ratio | 429 warm-up | 429 after | window s |")
    print("|---|---|---|---|---|---|---|")
    for r in (run.model, run.source):
        print(f"| {r.name} | {r.limit:g} | {r.achieved:.2f} | {r.ratio:.3f} | {r.early_429} | {r.late_429} | {r.window_s:.1f} |")
    for r in (run.model, run.source):
        print(f"{r.name} answers per second: {r.per_second}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
