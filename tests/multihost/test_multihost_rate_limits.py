"""Rate limits hold across hosts: 8 workers on two Ray hosts share one limit per model and per
source, send at it (>= 95 %) and are never refused once warmed up.

A real `jobs/run_corpus.py` run, workers spread over the two worker hosts (network namespaces),
against two rate-limited servers on the bridge: the OpenAI-compatible replay server (token bucket,
429 beyond `--rpm`) for `llm_zero_shot`, and the test source server (429 beyond
the limit, the same token bucket) as Crossref for `doi_only`. The run is configured at the servers' own limits
(`[llm.limits]`, `[llm.source_limits]`); what the servers saw decides.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers.bib_server import start_bib_server
from tests.helpers.netns_cluster import NetnsCluster
from tests.helpers.paths import REPO_ROOT
from tests.helpers.replay_server import replay_server, server_stats, server_times

pytestmark = pytest.mark.heavy

SAMPLE = REPO_ROOT / "corpora" / "samples" / "citations_sample.jsonl"
SNAPSHOT = "2026-11-29"
MODEL = "openai/replay-rate"
ANSWER = '{"label": "VALID", "confidence": 0.8, "predicted_hallucination_type": null, "reason": "looks real"}'
RATE = 8.0  # requests per second each server allows, and the run is configured for
ITEMS = 200  # per system: 25 s at the limit
WORKERS = 8
WARMUP_S = 3.0  # from the first answer: the limiter's bucket and the servers' meet
TAIL_S = 1.0  # before the last answer: the last shards drain
# The servers stand for providers on other machines: on this shared machine they get CPU first,
# so that they count requests when they arrive, not when a loaded host gets round to them.
SERVER_PRIORITY = -10


def rate_corpus(path: Path, n: int) -> Path:
    """`n` citations built from the bundled sample, each with its own DOI (one request each for
    Crossref and one distinct prompt each for the model: nothing is answered from the cache)."""
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    with path.open("w") as out:
        for i in range(n):
            row = json.loads(json.dumps(rows[i % len(rows)]))
            row["bibtex_key"] = f"{row['bibtex_key']}-r{i}"
            row["fields"]["doi"] = f"10.5555/scrutineer-rate-{i}"
            row["fields"]["title"] = f"{row['fields'].get('title') or 'Untitled'} (copy {i})"  # a prompt of its own
            row.pop("raw_bibtex", None)
            out.write(json.dumps(row) + "\n")
    return path


def steady_rate(answered: list[float], limited: list[float]) -> tuple[float, int, float]:
    """(answers per second over the steady window, 429s after warm-up, window seconds): the window
    runs from WARMUP_S after the first answer to TAIL_S before the last."""
    answered = sorted(answered)
    start, stop = answered[0] + WARMUP_S, answered[-1] - TAIL_S
    inside = [t for t in answered if start <= t <= stop]
    late_429 = sum(1 for t in limited if t >= start)
    return (len(inside) - 1) / (inside[-1] - inside[0]), late_429, stop - start


def shard_worker_hosts(cluster: NetnsCluster) -> list[tuple[str, str]]:
    """(host role, actor id) of every shard worker actor the cluster has seen."""
    from ray.util.state import list_actors

    nodes = cluster.node_ids()
    return [(nodes.get(a.node_id, a.node_id), a.actor_id) for a in list_actors(address=cluster.dashboard_url, limit=10_000)
            if a.class_name == "ShardWorker"]  # fmt: skip


def run_driver(cluster: NetnsCluster, config: Path, log: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    with log.open("w") as out:
        done = subprocess.run(
            cluster.head.exec("python", str(REPO_ROOT / "jobs" / "run_corpus.py"), "--config", str(config)),
            cwd=config.parent, env=cluster.env(RAY_ADDRESS=cluster.gcs_address, OPENAI_API_KEY="sk-test"),
            stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
        )  # fmt: skip
    return done


def test_eight_workers_on_two_hosts_keep_the_model_and_source_limits(netns_ray: NetnsCluster, tmp_path, monkeypatch):
    cluster = netns_ray
    for key, value in cluster.s3_env().items():
        monkeypatch.setenv(key, value)
    s3 = cluster.s3_client()
    if "multihost" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket="multihost")
    corpus = rate_corpus(cluster.work_dir / "rate_corpus.jsonl", ITEMS)
    bib = start_bib_server(host=cluster.bridge_ip, priority=SERVER_PRIORITY)
    try:
        bib.set_rate_limit("crossref", int(RATE), 1.0, bucket=True)
        rpm = RATE * 60
        with replay_server("--default-content", ANSWER, "--rpm", f"{rpm:g}", host=cluster.bridge_ip,
                           priority=SERVER_PRIORITY) as llm_url:  # fmt: skip
            config = cluster.work_dir / "rate.toml"
            config.write_text(
                f'storage = "s3://multihost/rate"\ntracking_uri = "none"\nsnapshot = "{SNAPSHOT}"\n'
                f'workers = {WORKERS}\ncpus_per_worker = 1\nshard_size = 10\nbootstrap = 0\n'
                f'[corpus]\npath = "{corpus}"\n'
                f'[llm]\ncache_dir = "{cluster.node_dir / "cache-rate"}"\nconcurrency = 8\n'
                f'source_base_urls = {{ crossref = "{bib.base_url("crossref")}" }}\n'
                f'[llm.limits]\n"{MODEL}" = {{ rpm = {rpm:g} }}\n'
                f'[llm.source_limits]\ncrossref = {{ rpm = {rpm:g} }}\n'
                f'[[systems]]\nname = "llm_zero_shot"\nargs = {{ model = "{MODEL}", api_base = "{llm_url}/v1" }}\n'
                f'[[systems]]\nname = "doi_only"\nargs = {{ sources = ["crossref"], authoritative = ["crossref"] }}\n'
            )
            log = tmp_path / "rate.log"
            started = time.monotonic()
            done = run_driver(cluster, config, log)
            print(f"\nrun took {time.monotonic() - started:.0f}s")
            assert done.returncode == 0, log.read_text()[-4000:]
            worker_hosts = shard_worker_hosts(cluster)
            llm_stats, llm_times = server_stats(llm_url), server_times(llm_url)
    finally:
        bib.stop()

    src = bib.stats["crossref"]
    figures = {
        "model": steady_rate(llm_times["ok"], llm_times["rate_limited"]),
        "source": steady_rate(src.answered_stamps, src.limited_stamps),
    }
    for name, (achieved, late_429, window) in figures.items():
        print(f"{name}: {achieved:.2f} req/s of {RATE:g} ({achieved / RATE:.3f}) over {window:.1f}s, "
              f"{late_429} HTTP 429 after warm-up")  # fmt: skip
    print(f"model server: {llm_stats}; source server: {dict(src.statuses)}")
    for name, (answered, limited) in {"model": (llm_times["ok"], llm_times["rate_limited"]),
                                      "source": (src.answered_stamps, src.limited_stamps)}.items():  # fmt: skip
        t0 = min(answered)
        per_second = Counter(int(t - t0) for t in answered)
        print(f"{name} answers per second: {[per_second[i] for i in range(max(per_second) + 1)]}; "
              f"429 at {[round(t - t0, 2) for t in limited]}")  # fmt: skip
    hosts = Counter(host for host, _ in worker_hosts)
    print(f"worker actors per host: {dict(hosts)}")
    assert set(hosts) == {"w1", "w2"}, f"workers not spread on the two worker hosts: {dict(hosts)}"
    assert llm_stats["ok"] == ITEMS and len(src.answered_stamps) == ITEMS  # each item asked once, no repeat
    for name, (achieved, late_429, _) in figures.items():
        assert late_429 == 0, f"{name}: {late_429} HTTP 429 after warm-up"
        assert achieved >= 0.95 * RATE, f"{name}: {achieved:.2f} req/s, under 95 % of {RATE:g}"
