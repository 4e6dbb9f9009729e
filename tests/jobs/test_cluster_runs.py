"""Cluster-shaped runs (heavy): `ray job submit` to a `ray start --head`, and resume after SIGKILL."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from storage.store import Store
from storage.tracking import SYSTEM_RUNS
from tests.helpers.paths import REPO_ROOT
from tests.helpers.run_job import run_job, submit_job

pytestmark = pytest.mark.heavy
SNAPSHOT = "2026-11-29"


def test_ray_job_submit_writes_s3_and_tracks_on_server(ray_head, moto_s3, mlflow_server, tmp_path):
    moto_s3.client().create_bucket(Bucket="cluster-runs")
    config = tmp_path / "cluster.toml"
    config.write_text(
        f'storage = "s3://cluster-runs/citations"\ntracking_uri = "{mlflow_server}"\nsnapshot = "{SNAPSHOT}"\n'
        'workers = 2\nshard_size = 30\nbootstrap = 0\n[[systems]]\nname = "prescreen"\n'
    )
    runtime_env = json.dumps({"env_vars": moto_s3.env()})
    submitted = submit_job(ray_head.dashboard_url, config, runtime_env, ray_head.env(), timeout=600)
    assert submitted.returncode == 0, submitted.stdout[-4000:] + submitted.stderr[-4000:]
    assert "succeeded" in submitted.stdout and "Leaderboard" in submitted.stdout

    keys = [o["Key"] for o in moto_s3.client().list_objects_v2(Bucket="cluster-runs")["Contents"]]
    assert sum("/shards/" in k for k in keys) >= 3

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_server)
    runs = client.search_runs([client.get_experiment_by_name("scrutineer/citations_sample").experiment_id],
                              filter_string=SYSTEM_RUNS)  # fmt: skip
    assert [r.data.params["system"] for r in runs] == ["prescreen"]
    assert "detection_rate" in runs[0].data.metrics
    assert runs[0].data.tags["code_revision"].startswith("src-")  # no .git in a submitted working_dir


def _calls(log):
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def test_resume_after_driver_sigkill_recomputes_no_finished_shard(ray_head, tmp_path):
    corpus = REPO_ROOT / "corpora" / "samples" / "citations_sample.jsonl"
    log = tmp_path / "calls.log"
    config = tmp_path / "resume.toml"
    config.write_text(
        f'snapshot = "{SNAPSHOT}"\nworkers = 2\nshard_size = 5\nbootstrap = 0\ntracking_uri = "none"\n'
        f'plugins = ["tests.helpers.scripted_system"]\n[corpus]\npath = "{corpus}"\n'
        f'[[systems]]\nname = "scripted"\nargs = {{ delay_s = 0.05, call_log = "{log}" }}\n'
    )
    env = ray_head.env()
    driver_log = (tmp_path / "driver.log").open("w")
    driver = subprocess.Popen([sys.executable, str(REPO_ROOT / "jobs" / "run_corpus.py"), "--config", str(config)],
                              cwd=tmp_path, env=env, stdout=driver_log, stderr=subprocess.STDOUT)  # fmt: skip
    store = Store(str(tmp_path / "runs"))
    deadline = time.monotonic() + 180
    run_id = None
    while time.monotonic() < deadline:
        runs = [p.name for p in (tmp_path / "runs").glob("*") if (p / "manifest.json").exists()] if (tmp_path / "runs").exists() else []
        if runs and len(store.finished_shards(runs[0])) >= 4:
            run_id = runs[0]
            break
        time.sleep(0.05)
    assert run_id, "the run never finished four shards:\n" + (tmp_path / "driver.log").read_text()[-3000:]
    driver.send_signal(signal.SIGKILL)
    driver.wait(timeout=30)
    time.sleep(1.0)  # let workers owned by the dead driver exit
    done_before = store.finished_shards(run_id)
    total_shards = json.loads((tmp_path / "runs" / run_id / "manifest.json").read_text())["num_shards"]
    assert 4 <= len(done_before) < total_shards
    calls_before_resume = len(_calls(log))

    resumed = run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    resumed_calls = [item for _, item in _calls(log)[calls_before_resume:]]
    items = store.read_table(run_id, "items").column("item_id").to_pylist()
    finished_items = {items[i] for s in done_before for i in range(s * 5, min(s * 5 + 5, len(items)))}
    assert resumed_calls, "the resumed run did no work"
    assert not finished_items & set(resumed_calls), "a shard finished before the kill was recomputed"
    recomputed = {items.index(i) // 5 for i in resumed_calls}
    assert recomputed.isdisjoint(done_before)
    assert len(recomputed) == total_shards - len(done_before)
    print(f"\nshards finished before kill: {len(done_before)}/{total_shards}; shards run after resume: {len(recomputed)}")

    outputs = store.read_outputs(run_id)
    ids = outputs.column("item_id").to_pylist()
    assert len(ids) == len(set(ids)) == len(items)

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    uninterrupted = run_job("run_corpus.py", "--config", str(config), "--storage", str(fresh / "runs"), cwd=fresh, env=env)
    assert uninterrupted.returncode == 0
    reference = Store(str(fresh / "runs")).read_outputs(run_id).sort_by("item_id").drop_columns(["latency_s", "shard_id"])
    assert outputs.sort_by("item_id").drop_columns(["latency_s", "shard_id"]).equals(reference)
