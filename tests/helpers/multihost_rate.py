"""One rate-limited run on the network-namespace cluster, measured at the servers.

A real `jobs/run_corpus.py` run, its workers on the worker hosts, against two rate-limited
servers on the bridge: the OpenAI-compatible replay server (token bucket, 429 beyond `--rpm`) for
`llm_zero_shot`, and the test source server (the same token bucket) as Crossref for `doi_only`.
The run is configured at the servers' own limits (`[llm.limits]`, `[llm.source_limits]`); what
the servers saw decides. Used by tests/multihost/test_multihost_rate_limits.py and
bench/bench_multihost_rate.py.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.bib_server import start_bib_server
from tests.helpers.netns_cluster import NetnsCluster
from tests.helpers.paths import REPO_ROOT
from tests.helpers.replay_server import replay_server, server_stats, server_times

SAMPLE = REPO_ROOT / "corpora" / "samples" / "citations_sample.jsonl"
SNAPSHOT = "2026-11-29"
MODEL = "openai/replay-rate"
ANSWER = '{"label": "VALID", "confidence": 0.8, "predicted_hallucination_type": null, "reason": "looks real"}'
WARMUP_S = 3.0  # from the first answer: the limiter's pacing and the servers' buckets meet
STEADY_FROM_S = 10.0  # from the first answer: one shard per worker, so the last of 8 staggered workers has
# started (litellm imports on a loaded host); the rate is measured from here, 429s from WARMUP_S
TAIL_S = 1.0  # before the last answer: the last shards drain
# The servers stand for providers on other machines: on a shared machine they get CPU first, so
# that they count requests when they arrive, not when a loaded host gets round to them.
SERVER_PRIORITY = -10


@dataclass
class Rate:
    """What one server saw."""

    name: str
    limit: float
    achieved: float
    """Answers per second over the steady window."""
    late_429: int
    """HTTP 429 after warm-up."""
    early_429: int
    answered: int
    window_s: float
    per_second: list[int]

    @property
    def ratio(self) -> float:
        return self.achieved / self.limit


@dataclass
class RateRun:
    model: Rate
    source: Rate
    seconds: float
    worker_hosts: dict[str, int]
    paid_twice: int
    """Prompts the model server answered more than once (0: nothing paid twice)."""
    log: str


def rate_corpus(path: Path, n: int) -> Path:
    """`n` citations built from the bundled sample, each with its own DOI and title (one request
    each for Crossref, one distinct prompt each for the model: nothing comes from the cache)."""
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    with path.open("w") as out:
        for i in range(n):
            row = json.loads(json.dumps(rows[i % len(rows)]))
            row["bibtex_key"] = f"{row['bibtex_key']}-r{i}"
            row["fields"]["doi"] = f"10.5555/scrutineer-rate-{i}"
            row["fields"]["title"] = f"{row['fields'].get('title') or 'Untitled'} (copy {i})"
            row.pop("raw_bibtex", None)  # the prompt is built from the fields
            out.write(json.dumps(row) + "\n")
    return path


def steady(name: str, limit: float, answered: list[float], limited: list[float]) -> Rate:
    """Answers per second over the steady window, and the 429s after WARMUP_S.

    The window ends TAIL_S before the last answer and starts STEADY_FROM_S after the first, or later,
    after the last whole second without any answer: 8 workers with 8 requests in flight each
    never leave the server idle for a second once they run, so a silent second means workers
    were still starting (importing litellm takes tens of seconds on a loaded 2-core host), which
    is start-up time, not the limiter's rate. 429s count from WARMUP_S on, whatever the window."""
    answered = sorted(answered)
    t0 = answered[0]
    counts = Counter(int(t - t0) for t in answered)
    per_second = [counts[i] for i in range(max(counts) + 1)]
    stop = answered[-1] - TAIL_S
    silent = [i for i, n in enumerate(per_second) if n == 0 and t0 + i + 1 < stop]
    start = max(t0 + STEADY_FROM_S, t0 + silent[-1] + 1 if silent else t0)
    inside = [t for t in answered if start <= t <= stop]
    achieved = (len(inside) - 1) / (inside[-1] - inside[0]) if len(inside) > 1 else 0.0
    late = sum(1 for t in limited if t >= t0 + WARMUP_S)
    return Rate(name, limit, achieved, late, len(limited) - late, len(answered), stop - start, per_second)


def shard_workers(cluster: NetnsCluster) -> dict[str, str]:
    """Actor id -> host role of every shard worker actor the cluster has seen."""
    from ray.util.state import list_actors

    nodes = cluster.node_ids()
    return {a.actor_id: nodes.get(a.node_id, a.node_id) for a in list_actors(address=cluster.dashboard_url, limit=10_000)
            if a.class_name == "ShardWorker"}  # fmt: skip


def measure_rate_run(cluster: NetnsCluster, name: str, *, rate: float, items: int, workers: int,
                     log: Path, timeout: float = 900) -> RateRun:  # fmt: skip
    """Run `llm_zero_shot` and `doi_only` over `items` generated citations with `workers` workers
    (one CPU each: the head offers none, so they go to the worker hosts), both servers limited to
    `rate` requests per second and the run configured at that limit."""
    s3 = cluster.s3_client()
    if "multihost" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket="multihost")
    corpus = rate_corpus(cluster.work_dir / f"{name}.jsonl", items)
    # one shard per worker: both systems' shards run side by side from the start, so neither server
    # waits while the pool is busy with the other system's shards (that would measure the
    # scheduling, not the limiter)
    shard_size = -(-2 * items // workers)
    rpm = rate * 60
    bib = start_bib_server(host=cluster.bridge_ip, priority=SERVER_PRIORITY)
    try:
        bib.set_rate_limit("crossref", int(rate), 1.0, bucket=True)
        with replay_server("--default-content", ANSWER, "--rpm", f"{rpm:g}", host=cluster.bridge_ip,
                           priority=SERVER_PRIORITY) as llm_url:  # fmt: skip
            config = cluster.work_dir / f"{name}.toml"
            config.write_text(
                f'storage = "s3://multihost/{name}"\ntracking_uri = "none"\nsnapshot = "{SNAPSHOT}"\n'
                f'workers = {workers}\ncpus_per_worker = 1\nshard_size = {shard_size}\nbootstrap = 0\n'
                f'[corpus]\npath = "{corpus}"\n'
                f'[llm]\ncache_dir = "{cluster.node_dir / f"cache-{name}"}"\nconcurrency = 8\n'
                f'source_base_urls = {{ crossref = "{bib.base_url("crossref")}" }}\n'
                f'[llm.limits]\n"{MODEL}" = {{ rpm = {rpm:g} }}\n'
                f'[llm.source_limits]\ncrossref = {{ rpm = {rpm:g} }}\n'
                f'[[systems]]\nname = "llm_zero_shot"\nargs = {{ model = "{MODEL}", api_base = "{llm_url}/v1" }}\n'
                f'[[systems]]\nname = "doi_only"\nargs = {{ sources = ["crossref"], authoritative = ["crossref"] }}\n'
            )
            earlier = shard_workers(cluster)
            started = time.monotonic()
            with log.open("w") as out:
                done = subprocess.run(
                    cluster.head.exec("python", str(REPO_ROOT / "jobs" / "run_corpus.py"), "--config", str(config)),
                    cwd=config.parent, env=cluster.env(RAY_ADDRESS=cluster.gcs_address, OPENAI_API_KEY="sk-test"),
                    stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
                )  # fmt: skip
            seconds = time.monotonic() - started
            if done.returncode != 0:
                raise AssertionError(f"run_corpus exited {done.returncode}:\n{log.read_text()[-4000:]}")
            llm_stats, llm_times = server_stats(llm_url), server_times(llm_url)
    finally:
        bib.stop()
    src = bib.stats["crossref"]
    return RateRun(
        model=steady("model", rate, llm_times["ok"], llm_times["rate_limited"]),
        source=steady("source", rate, src.answered_stamps, src.limited_stamps),
        seconds=seconds,
        worker_hosts=dict(Counter(h for a, h in shard_workers(cluster).items() if a not in earlier)), paid_twice=llm_stats["paid_twice"],
        log=log.read_text(),
    )  # fmt: skip
