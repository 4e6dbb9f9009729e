"""Benchmarks of the LLM gateway against jobs/llm_replay_server.py on 127.0.0.1.

1. Rate: achieved requests/s as a fraction of the limit the server enforces, with 1, 4 and 8
   Ray worker actors (each keeping 4 requests in flight), with the shared cluster limiter
   configured at that limit and without it (the gateway then only reacts to 429s).
2. Snapshot replay: a run of llm_zero_shot over HALLMARK dev_public entries with the response
   cache, then the same run pinned to the cache: network calls of the second run and wall ratio.
3. Budget: the same run stopped by a dollar budget, then resumed with a larger one: requests paid
   in each part against the number of entries (no request paid twice).

    python bench/bench_llm_gateway.py            # fixed parameters, one row per configuration
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

HALLMARK = ROOT.parent / "shared" / "data" / "hallmark"
RPM = 600.0  # 10 requests/s enforced by the server
REQUESTS_PER_RUN = 150
IN_FLIGHT_PER_WORKER = 4
SNAPSHOT_ITEMS = 300
ANSWER = '{"label": "VALID", "confidence": 0.9, "predicted_hallucination_type": null, "reason": "ok"}'


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(*args: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "jobs.llm_replay_server", "serve", "--port", str(port), *args],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(f"{url}/stats", timeout=1)
            return proc, url
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("replay server did not start")


def stats(url: str, reset: bool = False) -> dict:
    if reset:
        urllib.request.urlopen(urllib.request.Request(f"{url}/stats/reset", method="POST"), timeout=5)
        return {}
    return json.loads(urllib.request.urlopen(f"{url}/stats", timeout=5).read())


class Worker:
    """One Ray worker: a gateway and a fixed share of the requests."""

    def warm(self) -> bool:
        # litellm's import takes seconds: keep it out of the timing
        import litellm  # noqa: F401

        import clients.llm_gateway  # noqa: F401

        return True

    async def run(self, url: str, worker: int, n: int, use_limiter: bool) -> dict:
        from clients.errors import ClientError
        from clients.llm_gateway import LLMGateway, LLMServices
        from clients.retry import RetryPolicy
        from cluster.rate_limiter import LimiterClient

        limiter = LimiterClient("bench-llm") if use_limiter else None
        services = LLMServices(limiter=limiter, limits={"openai/bench": (RPM, None)},
                               retry=RetryPolicy(max_attempts=20, base_wait=0.05, max_wait=2.0, retry_after_cap=5.0))  # fmt: skip
        gateway = LLMGateway("openai/bench", services, api_base=f"{url}/v1")
        slots = asyncio.Semaphore(IN_FLIGHT_PER_WORKER)

        async def one(i: int) -> None:
            async with slots:
                with contextlib.suppress(ClientError):  # counted in gateway.stats.failed
                    await gateway.complete([{"role": "user", "content": f"worker {worker} request {i}"}])

        await asyncio.gather(*(one(i) for i in range(n)))
        return {"network_calls": gateway.stats.network_calls, "failed": gateway.stats.failed}


def bench_rate() -> None:
    import ray

    ray.init(logging_level="ERROR", log_to_driver=False, include_dashboard=False)
    remote_worker = ray.remote(num_cpus=0)(Worker)
    proc, url = start_server("--rpm", str(RPM), "--default-content", ANSWER)
    try:
        for use_limiter in (True, False):
            for workers in (1, 4, 8):
                actors = [remote_worker.remote() for _ in range(workers)]
                ray.get([a.warm.remote() for a in actors])
                time.sleep(1.5)  # let the server's bucket refill between configurations
                stats(url, reset=True)
                started = time.monotonic()
                share = REQUESTS_PER_RUN // workers
                results = ray.get([a.run.remote(url, w, share, use_limiter) for w, a in enumerate(actors)])
                wall = time.monotonic() - started
                s = stats(url)
                ok = s.get("ok", 0)
                achieved = ok / wall
                print(json.dumps({"bench": "rate", "limiter": use_limiter, "workers": workers, "limit_rps": RPM / 60,
                                  "ok": ok, "wall_s": round(wall, 2), "achieved_rps": round(achieved, 2),
                                  "fraction_of_limit": round(achieved / (RPM / 60), 3),
                                  "steady_fraction": round((s.get("ok_per_second") or 0) / (RPM / 60), 3),
                                  "server_429": s.get("rate_limited", 0),
                                  "attempts": sum(r["network_calls"] for r in results),
                                  "failed_requests": sum(r["failed"] for r in results)}), flush=True)  # fmt: skip
                for a in actors:
                    ray.kill(a)
    finally:
        proc.terminate()
        ray.shutdown()


def bench_snapshot_and_budget() -> None:
    from clients.lent_services import RunServices
    from clients.llm_budget import BudgetClient
    from clients.llm_gateway import LLMServices
    from corpora.citations.hallmark import load_hallmark_jsonl
    from jobs.llm_replay_server import build_hallmark_recording
    from storage.records import Item
    from verifiers.registry import SystemSpec, build_system
    from verifiers.system import RunContext

    tmp = Path(tempfile.mkdtemp(prefix="bench-llm-"))
    recording = tmp / "gemini.jsonl"
    build_hallmark_recording(str(HALLMARK / "per_entry_predictions" / "llm_openrouter_gemini_pro_dev_public.jsonl"),
                             str(HALLMARK / "dev_public_blind.jsonl"), str(recording), "google/gemini-2.5-pro")  # fmt: skip
    corpus = load_hallmark_jsonl(HALLMARK / "dev_public_blind.jsonl", split="dev_public")
    items = [Item.from_row(r) for r in corpus.items.to_pylist()][:SNAPSHOT_ITEMS]
    proc, url = start_server("--recording", str(recording), "--latency", "0.05")
    try:
        def run(cache: Path, **services: object) -> tuple[list, float]:
            args = {"model": "openai/gemini-replay", "api_base": f"{url}/v1", "price_override": [1.25, 10.0]}
            system = build_system(SystemSpec("llm_zero_shot", args))
            ctx = RunContext("bench", "2026-05-05", cache_dir=str(cache), services=RunServices("test", "", llm=LLMServices(concurrency=16, **services)))
            started = time.monotonic()
            outputs = asyncio.run(system.run(items, ctx))
            return outputs, time.monotonic() - started

        stats(url, reset=True)
        _, first_wall = run(tmp / "snap")
        first_calls = stats(url)["requests"]
        stats(url, reset=True)
        outputs, second_wall = run(tmp / "snap", replay_only=True)
        print(json.dumps({"bench": "snapshot", "items": len(items), "first_run_calls": first_calls,
                          "second_run_calls": stats(url).get("requests", 0), "first_wall_s": round(first_wall, 2),
                          "second_wall_s": round(second_wall, 2), "wall_ratio": round(second_wall / first_wall, 3),
                          "second_run_errors": sum(o.error is not None and o.error_kind != "parse" for o in outputs)}))  # fmt: skip

        stats(url, reset=True)
        budget = BudgetClient("bench-budget-1", usd=0.15, local=True)
        first, _ = run(tmp / "budget", budget=budget)
        paid_first = stats(url)["requests"]
        spent = asyncio.run(budget.status())["spent_usd"]
        stats(url, reset=True)
        resumed, _ = run(tmp / "budget", budget=BudgetClient("bench-budget-2", usd=100.0, local=True))
        paid_second = stats(url)["requests"]
        print(json.dumps({"bench": "budget_resume", "items": len(items), "budget_usd": 0.15, "spent_usd": round(spent, 4),
                          "stopped_items": sum(o.error_kind == "budget" for o in first), "paid_first": paid_first,
                          "paid_resume": paid_second, "paid_total": paid_first + paid_second,
                          "cache_hits_on_resume": sum(o.cache_hits for o in resumed),
                          "resumed_unfinished": sum(o.error_kind == "budget" for o in resumed)}))  # fmt: skip
    finally:
        proc.terminate()


if __name__ == "__main__":
    which = sys.argv[1:] or ["rate", "snapshot"]
    if "snapshot" in which:
        bench_snapshot_and_budget()
    if "rate" in which:
        bench_rate()
