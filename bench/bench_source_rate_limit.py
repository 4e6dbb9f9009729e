"""Achieved request rate vs the configured limit: 4 Ray workers, one local server enforcing a limit.

The local bibliographic server (tests/helpers/bib_server.py) answers Crossref DOI lookups and
enforces a sliding-window limit (LIMIT requests per second, 429 + Retry-After beyond it). Four
Ray workers, each with 4 concurrent request loops, look up DOIs through `CrossrefSource`:

* `shared@1.00`: all share the cluster limiter actor, configured at the server's limit;
* `shared@0.95`, `shared@0.90`: the same at 95% and 90% of it;
* `none`: no limiter, only the retry policy (Retry-After honoured) — for comparison.

One row per configuration: requests answered, 429s received (`late_429`: after the first second),
achieved rate from the first to the last answer and in steady state (after the first second),
each also as a ratio of the server's limit; `wall_rps` includes Ray worker start-up;
`missed_slots` counts reservations re-taken by callers that woke too late (a loaded machine).

    python bench/bench_source_rate_limit.py            # local ray.init (or RAY_ADDRESS)
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ray  # noqa: E402

from clients.crossref import CrossrefSource  # noqa: E402
from clients.http import HttpOptions  # noqa: E402
from clients.retry import RetryPolicy  # noqa: E402
from cluster.rate_limiter import LimiterClient  # noqa: E402
from tests.helpers.bib_server import start_bib_server  # noqa: E402

LIMIT = 20  # requests per second the server allows (sliding 1 s window)
WORKERS = 4
CONCURRENCY = 4  # request loops per worker
REQUESTS = 200  # per configuration, split evenly over the workers
DOI = "10.1145/2939672.2939785"


@ray.remote(num_cpus=0)
def worker(base_url: str, limiter: LimiterClient | None, n: int) -> dict:
    async def go() -> dict:
        retry = RetryPolicy(max_attempts=20, base_wait=0.1, max_wait=2.0, retry_after_cap=2.0)
        src = CrossrefSource(HttpOptions(limiter=limiter, retry=retry, timeout=10.0), base_url=base_url)
        done = failed = 0

        async def loop(count: int) -> None:
            nonlocal done, failed
            for _ in range(count):
                try:
                    await src.lookup_doi(DOI)
                    done += 1
                except Exception:
                    failed += 1

        share = [n // CONCURRENCY + (i < n % CONCURRENCY) for i in range(CONCURRENCY)]
        await asyncio.gather(*(loop(k) for k in share))
        await src.aclose()
        missed = limiter.missed_slots if limiter is not None else 0
        return {"done": done, "failed": failed, "sent": src.network_calls, "missed": missed}

    return asyncio.run(go())


def run_config(server, label: str, factor: float | None) -> dict:
    server.set_rate_limit("crossref", LIMIT, window=1.0)
    server.reset_stats()
    limiter = None
    if factor is not None:
        limiter = LimiterClient(name=f"bench-{uuid.uuid4().hex[:8]}")
        asyncio.run(limiter.configure("crossref", rpm=LIMIT * 60 * factor, burst_seconds=1.0 / LIMIT))
    start = time.monotonic()
    per = [REQUESTS // WORKERS] * WORKERS
    results = ray.get([worker.remote(server.base_url("crossref"), limiter, k) for k in per])
    wall = time.monotonic() - start
    st = server.stats["crossref"]
    ok = sorted(st.ok_stamps)
    span_rate = (len(ok) - 1) / (ok[-1] - ok[0])  # first to last answer: excludes worker start-up
    steady = [t for t in ok if t >= ok[0] + 1.0]
    steady_rate = (len(steady) - 1) / (steady[-1] - steady[0]) if len(steady) > 1 else float("nan")
    final_factor = None
    if limiter is not None:
        final_factor = round(asyncio.run(limiter.snapshot("crossref"))["factor"], 3)
        ray.kill(ray.get_actor(limiter.name, namespace=limiter.namespace))
    return {
        "config": label, "workers": WORKERS, "concurrency": CONCURRENCY, "server_limit_rps": LIMIT,
        "limiter_rps": None if factor is None else LIMIT * factor,
        "answered": sum(r["done"] for r in results), "failed": sum(r["failed"] for r in results),
        "sent": sum(r["sent"] for r in results), "http_429": st.statuses[429], "wall_s": round(wall, 2),
        "achieved_rps": round(span_rate, 2), "ratio": round(span_rate / LIMIT, 3),
        "wall_rps": round(len(ok) / wall, 2),
        "steady_rps": round(steady_rate, 2), "steady_ratio": round(steady_rate / LIMIT, 3),
        "late_429": sum(1 for t in st.stamps if t >= ok[0] + 1.0) - len(steady),
        "limiter_final_factor": final_factor, "missed_slots": sum(r["missed"] for r in results),
    }  # fmt: skip


def main() -> None:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # loopback-only local cluster
    if os.environ.get("RAY_ADDRESS"):
        ray.init(address=os.environ["RAY_ADDRESS"], logging_level="ERROR", log_to_driver=False)
    else:  # own temp dir: the shared /tmp/ray may hold other clusters' sessions
        ray.init(num_cpus=4, logging_level="ERROR", log_to_driver=False, include_dashboard=False,
                 _temp_dir=tempfile.mkdtemp(prefix="scrutineer-bench-"))  # fmt: skip
    server = start_bib_server()
    try:
        for label, factor in (
            ("shared@1.00", 1.0),
            ("shared@0.95", 0.95),
            ("shared@0.90", 0.9),
            ("none", None),
        ):
            print(json.dumps(run_config(server, label, factor)), flush=True)
    finally:
        server.stop()
        ray.shutdown()


if __name__ == "__main__":
    main()
