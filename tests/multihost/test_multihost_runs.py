"""A run on several Ray hosts (network namespaces): shards spread over hosts, and a host that dies
mid-run costs nothing but time — every item has one output and the scores equal an undisturbed run's."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from index.build import write_index
from index.readers import bibtex_fields_row
from storage.store import Store
from storage.tracking import SYSTEM_RUNS
from tests.helpers.netns_cluster import NetnsCluster, leftovers, netns_cluster, unavailable_reason
from tests.helpers.paths import REPO_ROOT
from tests.helpers.run_job import submit_job

pytestmark = pytest.mark.heavy

SAMPLE = REPO_ROOT / "corpora" / "samples" / "citations_sample.jsonl"
REFERENCES = REPO_ROOT / "corpora" / "samples" / "real_references.jsonl"
SNAPSHOT = "2026-11-29"


def _reference_index(path: Path) -> Path:
    """The bundled reference list as an offline index (Parquet) every host reads."""
    rows = []
    for line in REFERENCES.read_text().splitlines():
        ref = json.loads(line)
        fields = {"title": ref.get("title"), "author": " and ".join(ref.get("authors") or []), "year": ref.get("year"),
                  "booktitle": ref.get("booktitle"), "journal": ref.get("journal"), "doi": ref.get("doi")}  # fmt: skip
        if ref.get("arxiv_id"):
            fields.update(eprint=ref["arxiv_id"], archiveprefix="arXiv")
        row = bibtex_fields_row("samples", ref["ref_id"], ref.get("bibtex_type") or "misc", fields, str(REFERENCES))
        if row:
            rows.append(row)
    write_index(rows, path)
    return path


def _run_ids(cluster: NetnsCluster, bucket: str, prefix: str) -> list[str]:
    listed = cluster.s3_client().list_objects_v2(Bucket=bucket, Prefix=prefix + "/")
    return sorted({k["Key"][len(prefix) + 1:].split("/")[0] for k in listed.get("Contents", [])
                   if k["Key"].endswith("/manifest.json")})  # fmt: skip


def _driver(cluster: NetnsCluster, config: Path, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """`jobs/run_corpus.py` started inside the head's namespace, connected to the cluster's GCS."""
    return subprocess.Popen(
        cluster.head.exec("python", str(REPO_ROOT / "jobs" / "run_corpus.py"), "--config", str(config)),
        cwd=config.parent, env=cluster.env(RAY_ADDRESS=cluster.gcs_address, **(env or {})),
        stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip


def _shard_tasks(cluster: NetnsCluster) -> list:
    from ray.util.state import list_tasks

    return [t for t in list_tasks(address=cluster.dashboard_url, limit=10_000, detail=True, raise_on_missing_output=False)
            if t.name.endswith("ShardWorker.run_shard")]  # fmt: skip


@pytest.fixture
def cluster(netns_ray, monkeypatch) -> NetnsCluster:
    """The session's cluster, with this process pointed at its S3 (to read stored outputs)."""
    for key, value in netns_ray.s3_env().items():
        monkeypatch.setenv(key, value)
    if revived := netns_ray.revive_dead_hosts():  # an earlier test killed a host: both are needed
        print(f"\nrestarted Ray on {revived}")
    return netns_ray


def test_a_job_submitted_to_the_head_shards_the_corpus_across_hosts(cluster: NetnsCluster, tmp_path):
    cluster.s3_client().create_bucket(Bucket="multihost")
    index = _reference_index(cluster.work_dir / "references.parquet")
    config = cluster.work_dir / "sharded.toml"
    config.write_text(
        f'storage = "s3://multihost/sharded"\ntracking_uri = "{cluster.mlflow_url}"\nsnapshot = "{SNAPSHOT}"\n'
        f'workers = 2\ncpus_per_worker = 3\nshard_size = 10\nbootstrap = 0\n[corpus]\npath = "{SAMPLE}"\n'
        f'[[systems]]\nname = "prescreen"\n'
        f'[[systems]]\nname = "field_match"\nargs = {{ sources = ["offline_index"], index_path = "{index}" }}\n'
    )
    submitted = submit_job(cluster.dashboard_url, config, json.dumps({"env_vars": cluster.s3_env()}), cluster.env(),
                           attempts=60)  # fmt: skip
    assert submitted.returncode == 0, submitted.stdout[-4000:] + submitted.stderr[-4000:]
    assert "succeeded" in submitted.stdout and "Leaderboard" in submitted.stdout

    store = Store("s3://multihost/sharded")
    run_ids = _run_ids(cluster, "multihost", "sharded")
    assert len(run_ids) == 2
    for run_id in run_ids:
        ids = store.read_outputs(run_id).column("item_id").to_pylist()
        assert len(ids) == len(set(ids)) == 100
        assert len(store.finished_shards(run_id)) == 10

    nodes = cluster.node_ids()
    hosts = {nodes.get(t.node_id, t.node_id) for t in _shard_tasks(cluster) if t.state == "FINISHED"}
    print(f"\nshards finished on hosts: {sorted(hosts)}")
    assert len(hosts) >= 2, f"every shard ran on one host: {hosts}"

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=cluster.mlflow_url)
    runs = client.search_runs([client.get_experiment_by_name("scrutineer/citations_sample").experiment_id],
                              filter_string=SYSTEM_RUNS)  # fmt: skip
    assert sorted(r.data.params["system"] for r in runs) == ["field_match", "prescreen"]


def _scripted_config(cluster: NetnsCluster, name: str, delay_s: float) -> Path:
    config = cluster.work_dir / f"{name}.toml"
    config.write_text(
        f'storage = "s3://multihost/{name}"\ntracking_uri = "none"\nsnapshot = "{SNAPSHOT}"\n'
        f'workers = 2\nshard_size = 5\nbootstrap = 0\nmax_attempts = 3\nplugins = ["tests.helpers.scripted_system"]\n'
        f'[corpus]\npath = "{SAMPLE}"\n'
        f'[[systems]]\nname = "scripted"\nargs = {{ delay_s = {delay_s} }}\n'
    )
    return config


def _scores(store: Store, run_id: str) -> dict:
    """The run's scores, without what measures the run rather than the answers: time, and cost
    (a killed host's running shard is paid again: `cost_efficiency` moves, the scores do not)."""
    scores = store.read_json(run_id, "scores.json")
    return {k: v for k, v in scores.items()
            if k != "run_id" and "elapsed" not in k and "seconds" not in k and "cost" not in k}  # fmt: skip


def _kill_a_busy_host(cluster: NetnsCluster, driver: subprocess.Popen, prefix: str, log: Path) -> tuple[Store, str, set, str]:
    """Once the run under `s3://multihost/<prefix>` has finished two shards, SIGKILL the raylet of a
    worker host running a shard worker. Returns the store, the run id, the shards finished at the
    kill and the killed host."""
    from ray.util.state import list_actors

    store = Store(f"s3://multihost/{prefix}")
    deadline, run_id = time.monotonic() + 600, None
    while time.monotonic() < deadline and driver.poll() is None:
        run_ids = _run_ids(cluster, "multihost", prefix)
        if run_ids and len(store.finished_shards(run_ids[0])) >= 2:
            run_id = run_ids[0]
            break
        time.sleep(0.3)
    assert run_id, "the run never finished two shards:\n" + log.read_text()[-4000:]
    nodes = cluster.node_ids()
    busy = sorted({nodes[a.node_id] for a in list_actors(address=cluster.dashboard_url, limit=1000)
                   if a.class_name == "ShardWorker" and a.state == "ALIVE"} - {"head"})  # fmt: skip
    assert busy, "no worker actor on a worker host to kill"
    finished_at_kill = set(store.finished_shards(run_id))
    cluster.kill_raylet(busy[0])
    print(f"\nkilled the raylet of {busy[0]} with {len(finished_at_kill)}/20 shards finished")
    return store, run_id, finished_at_kill, busy[0]


def test_a_worker_host_killed_mid_run_changes_no_output_and_no_score(cluster: NetnsCluster, tmp_path):
    s3 = cluster.s3_client()
    if "multihost" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket="multihost")

    baseline_log = tmp_path / "baseline.log"
    baseline = _driver(cluster, _scripted_config(cluster, "baseline", 0.0), baseline_log)
    assert baseline.wait(timeout=600) == 0, baseline_log.read_text()[-4000:]

    log = tmp_path / "killed.log"
    driver = _driver(cluster, _scripted_config(cluster, "killed", 0.4), log)
    store, run_id, finished_at_kill, killed = _kill_a_busy_host(cluster, driver, "killed", log)
    done_at_kill = len(finished_at_kill)
    nodes = cluster.node_ids()

    assert driver.wait(timeout=600) == 0, log.read_text()[-4000:]
    assert done_at_kill < 20, "the kill landed after the run had finished"
    assert "[resume]" not in log.read_text()
    outputs = store.read_outputs(run_id)
    ids = outputs.column("item_id").to_pylist()
    assert len(ids) == len(set(ids)) == 100
    from ray.util.state import list_actors

    died = [a for a in list_actors(address=cluster.dashboard_url, limit=1000)
            if a.class_name == "ShardWorker" and nodes.get(a.node_id) == killed and a.state == "DEAD"]  # fmt: skip
    assert died, "no worker actor died with the killed host"
    baseline_id = _run_ids(cluster, "multihost", "baseline")[0]
    base_store = Store("s3://multihost/baseline")
    assert _scores(store, run_id) == _scores(base_store, baseline_id)
    base_labels = dict(zip(*[base_store.read_outputs(baseline_id).column(c).to_pylist() for c in ("item_id", "label")], strict=True))
    assert dict(zip(ids, outputs.column("label").to_pylist(), strict=True)) == base_labels


def test_teardown_removes_namespaces_and_veths_even_when_the_body_fails():
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    seen: list[tuple[NetnsCluster, subprocess.Popen]] = []
    with pytest.raises(RuntimeError, match="body failed"), netns_cluster(workers=1, start=False) as cluster:
        assert cluster.prefix.startswith(("198.18.", "198.19."))
        head, worker = cluster.head, cluster.nodes["w1"]
        server = subprocess.Popen(worker.exec(sys.executable, "-m", "http.server", "8000", "--bind", worker.ip),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        seen.append((cluster, server))
        fetch = f"import time, urllib.request as u\nfor _ in range(100):\n  try: u.urlopen('http://{worker.ip}:8000/', timeout=2); break\n  except OSError: time.sleep(0.2)\nelse: raise SystemExit(1)"
        reached = subprocess.run(head.exec(sys.executable, "-c", fetch), capture_output=True, text=True, timeout=60)
        assert reached.returncode == 0, reached.stderr  # one host reaches another over the bridge
        routes = subprocess.run(["ip", "-n", head.netns, "route"], capture_output=True, text=True).stdout
        assert "default" not in routes  # and nothing else
        assert server.poll() is None
        raise RuntimeError("body failed")
    cluster, server = seen[0]
    assert leftovers(cluster) == []
    assert server.wait(timeout=10) is not None  # processes left in a namespace are killed


PAID_MODEL = "openai/replay-paid"
PAID_ANSWER = '{"label": "VALID", "confidence": 0.8, "predicted_hallucination_type": null, "reason": "looks real"}'


def _paid_config(cluster: NetnsCluster, name: str, api_base: str) -> Path:
    """`llm_zero_shot` against the replay server, one request at a time per worker, each node's
    response cache on its own disk (`node_dir`): a killed host's cache is lost with it."""
    config = cluster.work_dir / f"{name}.toml"
    config.write_text(
        f'storage = "s3://multihost/{name}"\ntracking_uri = "none"\nsnapshot = "{SNAPSHOT}"\n'
        f'workers = 2\nshard_size = 5\nbootstrap = 0\nmax_attempts = 3\n'
        f'[corpus]\npath = "{SAMPLE}"\n'
        f'[llm]\ncache_dir = "{cluster.node_dir / f"cache-{name}"}"\nconcurrency = 1\n'
        f'[[systems]]\nname = "llm_zero_shot"\nargs = {{ model = "{PAID_MODEL}", api_base = "{api_base}/v1" }}\n'
    )
    return config


def test_a_worker_host_killed_mid_run_pays_for_no_finished_answer_again(cluster: NetnsCluster, tmp_path):
    """A paid system (a model behind the replay server): the kill costs only the answers of the
    shard that was running on the killed host; every answer of a finished shard stays paid once."""
    from clients.llm_request import messages_hash
    from corpora import load_corpus
    from storage.records import Item
    from tests.helpers.replay_server import replay_server, reset_stats, server_stats, server_times
    from verifiers.citations.llm_zero_shot import build_messages

    s3 = cluster.s3_client()
    if "multihost" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket="multihost")
    env = {"OPENAI_API_KEY": "sk-test"}
    with replay_server("--default-content", PAID_ANSWER, "--latency", "0.4", host=cluster.bridge_ip) as url:
        baseline_log = tmp_path / "paid-baseline.log"
        baseline = _driver(cluster, _paid_config(cluster, "paid-baseline", url), baseline_log, env)
        assert baseline.wait(timeout=600) == 0, baseline_log.read_text()[-4000:]
        assert server_stats(url)["paid_twice"] == 0
        reset_stats(url)

        log = tmp_path / "paid-killed.log"
        driver = _driver(cluster, _paid_config(cluster, "paid-killed", url), log, env)
        store, run_id, finished_at_kill, _ = _kill_a_busy_host(cluster, driver, "paid-killed", log)
        assert driver.wait(timeout=600) == 0, log.read_text()[-4000:]
        stats, times = server_stats(url), server_times(url)

    assert len(finished_at_kill) < 20, "the kill landed after the run had finished"
    outputs = store.read_outputs(run_id)
    ids = outputs.column("item_id").to_pylist()
    assert len(ids) == len(set(ids)) == 100
    baseline_id = _run_ids(cluster, "multihost", "paid-baseline")[0]
    base_store = Store("s3://multihost/paid-baseline")
    assert _scores(store, run_id) == _scores(base_store, baseline_id)
    base_labels = dict(zip(*[base_store.read_outputs(baseline_id).column(c).to_pylist() for c in ("item_id", "label")], strict=True))
    assert dict(zip(ids, outputs.column("label").to_pylist(), strict=True)) == base_labels

    # What the provider billed: every prompt at least once; a prompt twice only if its shard was
    # running on the killed host when it died, never one of a shard finished by then (each node's
    # cache is its own disk: a finished shard's answers come from the run's storage, not a disk).
    items = [Item.from_row(r) for r in load_corpus(str(SAMPLE)).items.to_pylist()]
    item_of = {messages_hash(build_messages(item)): item.item_id for item in items}
    twice = sorted(item_of[h] for h in times["paid_twice_prompts"])
    shard_of = dict(zip(ids, outputs.column("shard_id").to_pylist(), strict=True))
    repaid_shards = sorted({shard_of[i] for i in twice})
    print(f"replay server after the kill: {stats}; paid twice: {twice} (shards {repaid_shards})")
    assert stats["answered_prompts"] == 100
    assert not set(repaid_shards) & finished_at_kill, f"answers of shards finished before the kill paid again: {twice}"
    assert len(repaid_shards) <= 2 and len(twice) <= 2 * 5  # at most the killed host's running shards
