"""Answers in flight at a SIGKILL: how many paid answers a killed worker or driver makes the run pay again.

A child process pays for `--items` answers from the LLM replay server (`jobs/llm_replay_server.py`,
every answer `--latency` seconds late, `--concurrency` requests in flight), in one of two roles:

* `worker`: one shard of the bundled citation sample through `llm_zero_shot`, run by the real
  `cluster/shard_worker.py: ShardWorker` (what a Ray worker actor holds);
* `judges`: a driver phase, `--items` judge votes inside `cluster/services_builder.py: driver_answers`
  (as the paper audit adjudicates).

Once `--kill-after` answers were sent, the child gets SIGKILL half an answer's latency later (an
arbitrary moment: calls are on the wire, the last answers may not be exported yet). With
`--quiesce` (what the test does, so that "finished before the kill" is exact whatever the machine's
load) the server instead stops answering at that point (every new request gets a 429 whose
Retry-After holds it back for the gateway's longest pause),
and the kill comes once every answer sent has been stored by the child and, when the export works,
is in the run's storage (waiting at most `--settle` seconds). Then the same work runs again in a
new process, with an empty cache (`lost`: the node is gone, only the run's storage is left) or
with the killed process's cache (`same`: the same node). The replay server counts the prompts it
answered twice (paid twice); the answers the killed process had stored are checked against them
("finished, paid again").

    python bench/bench_answers_in_flight.py [--items 100] [--concurrency 8] [--latency 1.0] [--kill-after 40]
                                            [--quiesce] [--roles worker,judges] [--resumes lost,same]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from tests.helpers.replay_server import replay_server, server_stats, server_times  # noqa: E402

SAMPLE = REPO_ROOT / "corpora" / "samples" / "citations_sample.jsonl"
MODEL = "openai/replay-model"
RUN_ID = "answers-in-flight"
ANSWERS = {
    "worker": '{"label": "VALID", "confidence": 0.8, "predicted_hallucination_type": null, "reason": "looks real"}',
    "judges": '{"detected": true, "confidence": 0.9, "evidence": "line 3", "reason": "found"}',
}
Role = Literal["worker", "judges"]


@dataclass
class KillFigures:
    role: str
    resume: str
    items: int
    concurrency: int
    answered_before_kill: int = 0
    """Answers the server had sent when the kill came (in-flight ones it sent after are not counted)."""
    stored_before_kill: int = 0
    """Answers the killed process had stored in its cache (finished before the kill)."""
    exported_before_kill: int = 0
    """Answers in the run's storage when the killed process was gone."""
    paid_twice: int = 0
    finished_paid_again: int = 0
    """Of the answers the killed process had stored, those the server answered again."""
    answered_prompts: int = 0
    resumed_exit: int | None = None
    paid_twice_prompts: list[str] = field(default_factory=list)
    resumed_output: str = ""
    """The resumed child's last line (its result as JSON)."""

    def row(self) -> str:
        return (f"| {self.role} | {self.resume} | {self.items} | {self.concurrency} | {self.answered_before_kill} | "
                f"{self.stored_before_kill} | {self.exported_before_kill} | {self.paid_twice} | "
                f"{self.finished_paid_again} | {self.answered_prompts} |")  # fmt: skip


HEADER = ("| role | resume | items | concurrency | answered at kill | stored at kill | exported at kill | paid twice | "
          "finished, paid again | prompts answered |\n|---|---|---|---|---|---|---|---|---|---|")  # fmt: skip


# -- the child: pays for answers until it is killed --------------------------------------------------
def child(role: Role, url: str, storage: str, cache: str, items: int, concurrency: int) -> None:
    from clients.lent_services import RunServices
    from clients.llm_gateway import LLMServices

    services = LLMServices(concurrency=concurrency, timeout_s=60.0)
    if role == "worker":
        from cluster.shard_worker import ShardWorker
        from cluster.shards import ShardTask
        from corpora.citations.hallmark import load_hallmark_jsonl
        from verifiers import RunContext, build_system
        from verifiers.registry import SystemSpec

        corpus = load_hallmark_jsonl(SAMPLE)
        spec = SystemSpec("llm_zero_shot", {"model": MODEL, "api_base": f"{url}/v1"})
        context = RunContext(RUN_ID, "2026-11-29", cache, RunServices(RUN_ID, "2026-11-29", llm=services))
        task = ShardTask(RUN_ID, spec.display_name, spec.config_hash(), spec, context, 0, 0, min(items, corpus.num_items))
        result = asyncio.run(ShardWorker(build_system, storage).run_shard(task, corpus.items))
        print(json.dumps({"status": result.status, "items": result.items, "errored": result.errored}), flush=True)
        return
    from adjudication.judge import Judge, JudgeSpec
    from clients.lent_services import RunServices
    from cluster.services_builder import driver_answers

    run_services = RunServices(run_key="k", snapshot="2026-11-29", cache_dir=cache, llm=services)
    with driver_answers(run_services, storage, "adjudication-key", "adjudication"):
        judge = Judge(JudgeSpec(MODEL, api_base=f"{url}/v1"), services, cache_dir=cache)
        slots = asyncio.Semaphore(concurrency)

        async def one(i: int) -> dict:
            async with slots:
                return await judge.detection_vote(f"Did the review find injected error {i}?", "panel")

        async def all_votes() -> list[dict]:
            return list(await asyncio.gather(*(one(i) for i in range(items))))

        votes = asyncio.run(all_votes())
    print(json.dumps({"votes": len(votes), "abstained": sum(v["detected"] is None for v in votes)}), flush=True)


def _child_command(role: Role, url: str, storage: Path, cache: Path, items: int, concurrency: int) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "child", role, "--url", url, "--storage", str(storage),
            "--cache", str(cache), "--items", str(items), "--concurrency", str(concurrency)]  # fmt: skip


def _stored(cache: Path) -> dict[str, str]:
    """Cache key -> messages hash of every model answer stored in `cache`."""
    from clients.llm_cache import LLMCache

    cache_ = LLMCache(cache)
    try:
        return {key: entry["messages_hash"] for key, entry in cache_.entries()}
    finally:
        cache_.close()


def _exported(storage: Path) -> set[str]:
    """Keys of the answers in the run's storage (every export, batch files included)."""
    import gzip

    keys: set[str] = set()
    for path in storage.rglob("*.jsonl.gz"):
        with contextlib.suppress(OSError, EOFError, ValueError):  # being written, or torn by the kill
            keys |= {json.loads(line)["key"] for line in gzip.decompress(path.read_bytes()).splitlines() if line.strip()}
    return keys


def _post(url: str, path: str, body: dict) -> None:
    import urllib.request

    request = urllib.request.Request(f"{url}{path}", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=10).read()


def kill_and_resume(work: Path, role: Role = "worker", resume: Literal["lost", "same"] = "lost", items: int = 100,
                    concurrency: int = 8, latency: float = 1.0, kill_after: int = 40, quiesce: bool = False,
                    settle_s: float = 60.0, timeout_s: float = 600.0) -> KillFigures:  # fmt: skip
    """One SIGKILL mid-work and one resume; the figures (see the module docstring)."""
    figures = KillFigures(role, resume, items, concurrency)
    storage, cache_a = work / "runs", work / "cache-a"
    cache_b = work / "cache-b" if resume == "lost" else cache_a
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    # --retry-after: a quiesced server's 429s make every request wait the gateway's longest pause (60 s)
    server_args = ("--default-content", ANSWERS[role], "--latency", str(latency), "--retry-after", "3600")
    with replay_server(*server_args) as url:
        killed = subprocess.Popen(_child_command(role, url, storage, cache_a, items, concurrency), cwd=work, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        try:
            deadline = time.monotonic() + timeout_s
            while server_stats(url).get("ok", 0) < kill_after:
                if killed.poll() is not None:
                    raise RuntimeError(f"the child ended before the kill:\n{killed.stderr.read().decode()[-3000:]}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"fewer than {kill_after} answers in {timeout_s:.0f}s")
                time.sleep(0.02)
            if quiesce:  # no answer after this one: "finished before the kill" is then exact
                _post(url, "/faults", {"fault_rate": {"429": 1.0}})
                settle = time.monotonic() + settle_s
                while time.monotonic() < settle:
                    stored = _stored(cache_a)
                    if len(stored) >= server_stats(url).get("ok", 0) and set(stored) <= _exported(storage):
                        break
                    time.sleep(0.1)
            else:
                time.sleep(latency / 2)
            figures.answered_before_kill = server_stats(url).get("ok", 0)
            killed.send_signal(signal.SIGKILL)
        finally:
            killed.kill()
            killed.communicate()
        stored = _stored(cache_a)
        figures.stored_before_kill = len(stored)
        figures.exported_before_kill = len(_exported(storage))
        if quiesce:
            _post(url, "/faults", {"fault_rate": {}})
        resumed = subprocess.run(_child_command(role, url, storage, cache_b, items, concurrency), cwd=work, env=env,
                                 capture_output=True, text=True, timeout=timeout_s)  # fmt: skip
        figures.resumed_exit = resumed.returncode
        if resumed.returncode != 0:
            raise RuntimeError(f"the resumed child failed:\n{resumed.stdout[-2000:]}\n{resumed.stderr[-3000:]}")
        figures.resumed_output = resumed.stdout.strip().splitlines()[-1] if resumed.stdout.strip() else ""
        stats, times = server_stats(url), server_times(url)
    figures.paid_twice = stats.get("paid_twice", 0)
    figures.answered_prompts = stats.get("answered_prompts", 0)
    figures.paid_twice_prompts = times["paid_twice_prompts"]
    figures.finished_paid_again = len(set(stored.values()) & set(figures.paid_twice_prompts))
    return figures


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command")
    c = sub.add_parser("child", help="(internal) the process that is killed")
    c.add_argument("role", choices=["worker", "judges"])
    c.add_argument("--url", required=True)
    c.add_argument("--storage", required=True)
    c.add_argument("--cache", required=True)
    c.add_argument("--items", type=int, default=100)
    c.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--items", type=int, default=100)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--latency", type=float, default=1.0, help="seconds per answer")
    p.add_argument("--kill-after", type=int, default=40, help="answers sent before the SIGKILL")
    p.add_argument("--quiesce", action="store_true", help="stop answering before the kill (see above)")
    p.add_argument("--roles", default="worker,judges")
    p.add_argument("--resumes", default="lost,same")
    args = p.parse_args()
    if args.command == "child":
        child(args.role, args.url, args.storage, args.cache, args.items, args.concurrency)
        return
    print(HEADER)
    for role in args.roles.split(","):
        for resume in args.resumes.split(","):
            with tempfile.TemporaryDirectory(prefix="scrutineer-answers-kill-") as tmp:
                f = kill_and_resume(Path(tmp), role, resume, args.items, args.concurrency, args.latency,  # type: ignore[arg-type]
                                    args.kill_after, args.quiesce)
            print(f.row(), flush=True)


if __name__ == "__main__":
    main()
