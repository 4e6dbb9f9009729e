"""Latency per check type and throughput of the checkers Serve app with 1 and 2 replicas.

Fixed configuration: eight check types drawn from the appendix-C test set (original and injected
statement alternating), `--per-kind` requests of each (default 20), sent through a deployment
handle from this driver; one isolated worker process per replica, so the replica count is the
parallelism. Warm-up requests are not timed. Per (replicas, kind): p50/p95 latency with one
request in flight; then one `all@16_in_flight` row: every kind mixed, 16 requests in flight,
latency under load and checks/s.

    python bench/bench_checkers.py [--per-kind 20] [--replicas 1 2]
    python bench/bench_checkers.py --real-statements [--kind math.statement] [--timeout 30]

`--real-statements` (issue 15) skips the service and runs the hand-labelled statements of the shared
real papers (tests/checkers/data/real_statements.jsonl) through the sandboxed runner, printing one
row per statement (expected outcome, outcome, reason) and the summary: outcome counts, the share
ending in `error`, refutations of statements labelled correct, and agreement with the labels.
`--kind math.equality` sends the same statements the way the checkers read them before.

`--flood 30` (issue 26 item 8) measures fairness over real HTTP: one replica with two workers and a
`--flood-timeout` (default 10 s) per check; 30 concurrent one-check requests that each run into
that limit, sent either by one client (`X-API-Key: flood`) or by 30 clients (a key each), and,
one second later, a simple check from another client. Prints per flood shape the simple check's
latency, how many flood requests were answered or refused 429, and when the last one returned.

Uses RAY_ADDRESS when set, else starts a local Ray with 4 CPUs; Serve listens on a free
127.0.0.1 port and is shut down at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from checkers.service import ServiceConfig, start  # noqa: E402

LEE_X = r"\left(\frac{10^{M_\star}}{10^{M_0}}\right)"
CASES: dict[str, list[dict]] = {
    "math.equality": [{"lhs": rf"1+{c}\xi_M\kappa^2\phi", "rhs": r"1+2\xi_M\kappa^2\phi"} for c in (2, 4)],
    "math.series": [
        {
            "series": rf"\frac{{1}}{{E}}\sum_{{n={lo}}}^{{\infty}}\frac{{(1+4E)^{{-n}}}}{{n^2}}",
            "equals": r"\frac{1}{E}\mathrm{Li}_2\left(\frac{1}{1+4E}\right)",
        }
        for lo in (1, 0)
    ],
    "math.limiting_form": [
        {
            "general": rf"S_0 - {pre}\log\left[{LEE_X}^{{-\gamma_1}} + {LEE_X}^{{\gamma_2}}\right]",
            "var": r"\gamma_2",
            "to": "0",
            "limiting": rf"S_0 - \log\left[1 + {LEE_X}^{{-\gamma_1}}\right]",
            "domain": {r"M_\star": [8, 12], "M_0": [9, 11], "S_0": [-1, 2]},
        }
        for pre in ("", r"\frac{1}{2}")
    ],
    "math.limit": [
        {
            "expr": rf"\frac{{1}}{{\mathrm{{B}}(a,b)}}P^{{a-1}}(1-P)^{{{e}}}",
            "var": "P",
            "to": "1",
            "dir": "-",
            "equals": "0",
            "domain": {"a": [1.2, 5], "b": [1.2, 5]},
        }
        for e in ("b-1", "1-b")
    ],
    "units.dimensions": [
        {
            "equation": rf"\log \mathrm{{SFR}} = S_0 {extra} - \log\left[{LEE_X}^{{-\gamma_1}} + {LEE_X}^{{\gamma_2}}\right]",
            "units": {
                r"\mathrm{SFR}": "Msun/yr",
                "S_0": "log10(Msun/yr)",
                r"M_\star": "log10(Msun)",
                "M_0": "log10(Msun)",
            },
        }
        for extra in ("", r"+ 10^{M_\star}")
    ],
    "numerics.ratio": [
        {"numerator": "13 hours", "denominator": f"{m} minutes", "stated": "∼200"} for m in (4, 6)
    ],
    "numerics.percentages_sum": [{"percentages": ["40%", p]} for p in ("60%", "75%")],
    "numerics.integer_equality": [{"values": [v, "approximately 290,000"]} for v in ("∼290k", "∼29k")],
}
IN_FLIGHT = 16


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def measure(handle, per_kind: int, in_flight: int) -> tuple[dict[str, list[float]], float]:
    requests = [
        (kind, {"kind": kind, "payload": cases[i % len(cases)]})
        for i in range(per_kind)
        for kind, cases in CASES.items()
    ]
    latencies: dict[str, list[float]] = {kind: [] for kind in CASES}
    gate = asyncio.Semaphore(in_flight)

    async def one(kind: str, request: dict) -> None:
        async with gate:
            start = time.perf_counter()
            result = await handle.check.remote(request)
            latencies[kind].append(time.perf_counter() - start)
            if result["outcome"] not in ("confirmed", "refuted"):
                raise RuntimeError(f"{kind}: {result['outcome']} {result['reason']}")

    start = time.perf_counter()
    await asyncio.gather(*(one(kind, request) for kind, request in requests))
    return latencies, time.perf_counter() - start


def pct(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]
    )


def real_statements(kind: str, timeout_s: float) -> None:
    """The labelled real-paper statements through the sandboxed runner: the outcome table and summary."""
    from checkers import IsolatedRunner, Limits
    from tests.checkers.real_statements import run_statements, summary, table
    from tests.helpers.paths import SHARED_DATA

    runner = IsolatedRunner(workers=1, limits=Limits(timeout_s=timeout_s))
    start = time.perf_counter()
    try:
        rows = run_statements(SHARED_DATA / "papers", kind, run=runner.run)
    finally:
        runner.close()
    print(table(rows))
    print(json.dumps({"kind": kind, **summary(rows), "wall_s": round(time.perf_counter() - start, 1)}, indent=2))


SLOW = {"kind": "math.equality", "lhs": r"10^{10^{10}}", "rhs": "1"}  # runs into the per-check limit
SIMPLE = {"kind": "math.equality", "lhs": "(x+1)^2", "rhs": "x^2+2x+1"}


async def flood_once(url: str, size: int, clients: int) -> dict:
    """`size` slow requests from `clients` keys, then one simple check from another key."""
    import httpx

    async with httpx.AsyncClient(timeout=900, limits=httpx.Limits(max_connections=size + 8)) as http:
        start = time.monotonic()

        async def one(body: dict, key: str) -> tuple[float, int]:
            reply = await http.post(url, json=body, headers={"X-API-Key": key})
            return time.monotonic() - start, reply.status_code

        flood = [asyncio.ensure_future(one(SLOW, f"flood{i % clients}")) for i in range(size)]
        await asyncio.sleep(1.0)
        sent = time.monotonic() - start
        answered, status = await one(SIMPLE, "simple")
        replies = await asyncio.gather(*flood)
    return {"flood": f"{clients} client(s) x {size // clients}", "simple_latency_s": round(answered - sent, 2),
            "simple_status": status, "flood_answered": sum(s == 200 for _, s in replies),
            "flood_429": sum(s == 429 for _, s in replies),
            "flood_last_reply_s": round(max(at for at, _ in replies), 1)}  # fmt: skip


def flood_bench(size: int, timeout_s: float) -> None:
    import ray
    from ray import serve

    ray.init(address=os.environ.get("RAY_ADDRESS"), num_cpus=None if os.environ.get("RAY_ADDRESS") else 4,
             logging_level="ERROR", log_to_driver=False)  # fmt: skip
    # from_mapping: settings this checkout does not know are ignored, so the same script measures before/after
    config = ServiceConfig.from_mapping({"port": free_port(), "app_name": "checkers_flood_bench",
                                         "route_prefix": "/flood", "num_replicas": 1, "workers_per_replica": 2,
                                         "num_cpus": 0.5, "timeout_s": timeout_s, "max_client_share": 0.5,
                                         "max_queue_wait_s": 3 * timeout_s})  # fmt: skip
    try:
        start(config)
        url = f"http://127.0.0.1:{config.port}/flood"
        asyncio.run(flood_once(url, 2, 2))  # warm-up: both workers import sympy
        print(json.dumps({"size": size, "timeout_s": timeout_s, "max_queue_wait_s": 3 * timeout_s,
                          "fair_scheduler": "max_client_share" not in config.extra}))  # fmt: skip
        for clients in (1, size):
            print(json.dumps(asyncio.run(flood_once(url, size, clients))), flush=True)
    finally:
        serve.shutdown()
        ray.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-kind", type=int, default=20)
    ap.add_argument("--replicas", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--real-statements", action="store_true", help="run the labelled real-paper statements")
    ap.add_argument("--kind", default="math.statement", help="check kind for --real-statements")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per check for --real-statements")
    ap.add_argument("--flood", type=int, default=0, help="concurrent slow requests for the fairness bench")
    ap.add_argument("--flood-timeout", type=float, default=10.0, help="per-check limit for --flood, seconds")
    args = ap.parse_args()
    if args.real_statements:
        real_statements(args.kind, args.timeout)
        return
    if args.flood:
        flood_bench(args.flood, args.flood_timeout)
        return

    import ray
    from ray import serve

    ray.init(address=os.environ.get("RAY_ADDRESS"), num_cpus=None if os.environ.get("RAY_ADDRESS") else 4,
             logging_level="ERROR", log_to_driver=False)  # fmt: skip
    print("replicas,kind,n,p50_ms,p95_ms,checks_per_s")
    try:
        for replicas in args.replicas:
            config = ServiceConfig(
                port=free_port(),
                app_name="checkers_bench",
                num_replicas=replicas,
                workers_per_replica=1,
                num_cpus=0.5,
                max_batch_size=8,
                timeout_s=30.0,
            )
            handle = start(config)
            asyncio.run(measure(handle, 2, IN_FLIGHT))  # warm-up: workers import sympy and pint
            latencies, _ = asyncio.run(measure(handle, args.per_kind, 1))  # one at a time: service latency
            for kind, values in latencies.items():
                print(
                    f"{replicas},{kind},{len(values)},{pct(values, 50) * 1e3:.1f},{pct(values, 95) * 1e3:.1f},"
                )
            loaded, wall = asyncio.run(measure(handle, args.per_kind, IN_FLIGHT))  # 16 in flight: throughput
            every = [v for values in loaded.values() for v in values]
            p50, p95 = pct(every, 50) * 1e3, pct(every, 95) * 1e3
            print(
                f"{replicas},all@{IN_FLIGHT}_in_flight,{len(every)},{p50:.1f},{p95:.1f},{len(every) / wall:.1f}"
            )
            serve.shutdown()
    finally:
        serve.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    main()
