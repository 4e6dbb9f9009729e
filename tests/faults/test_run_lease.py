"""Two drivers on one run (issue 11, "paid twice"): the second exits 2 naming the owner, or waits
for it with --wait-for-lease; a SIGKILLed driver's lease expires and a later driver takes over
without recomputing a finished shard. Issue 26: a driver frozen (or cut off from storage) past its
lease's TTL, whose run another driver took over, stops with exit status 6 naming the new owner, and
no shard of its lands after the takeover (shard writes are fenced by the lease)."""

from __future__ import annotations

import functools
import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from storage.run_lease import LeaseLostError, RunLease
from storage.store import LeasedStoreUri, Store
from tests.helpers.paths import REPO_ROOT
from tests.helpers.run_job import run_job
from tests.helpers.s3_server import STORE_BACKENDS, file_or_s3_store

pytestmark = pytest.mark.integration  # drivers as subprocesses, moto S3

CORPUS = REPO_ROOT / "corpora" / "samples" / "citations_sample.jsonl"


def write_config(tmp_path: Path, log: Path, delay_s: float) -> Path:
    config = tmp_path / "lease.toml"
    config.write_text(
        f'snapshot = "2026-11-29"\nworkers = 2\nshard_size = 5\nbootstrap = 0\ntracking_uri = "none"\n'
        f'plugins = ["tests.helpers.scripted_system"]\n[corpus]\npath = "{CORPUS}"\n'
        f'[[systems]]\nname = "scripted"\nargs = {{ delay_s = {delay_s}, call_log = "{log}" }}\n'
    )
    return config


def start_driver(config: Path, tmp_path: Path, env: dict[str, str], name: str) -> subprocess.Popen:
    out = (tmp_path / f"{name}.log").open("w")
    return subprocess.Popen([sys.executable, str(REPO_ROOT / "jobs" / "run_corpus.py"), "--config", str(config)],
                            cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT)  # fmt: skip


def wait_for(condition, what: str, log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} never happened:\n" + log.read_text()[-3000:])


def run_dir(tmp_path: Path) -> Path | None:
    runs = [p for p in (tmp_path / "runs").glob("*") if (p / "manifest.json").exists()]
    return runs[0] if runs else None


def calls(log: Path) -> list[str]:
    return [line.split()[1] for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.heavy
def test_second_driver_exits_2_naming_the_owner_and_a_waiting_one_pays_nothing(ray_head, tmp_path):
    log = tmp_path / "calls.log"
    config = write_config(tmp_path, log, delay_s=0.2)  # ~10 s of work: the first driver is still running
    first = start_driver(config, tmp_path, ray_head.env(), "first")
    try:
        wait_for(
            lambda: run_dir(tmp_path) is not None and calls(log),
            "the first driver starting work",
            tmp_path / "first.log",
        )
        run = run_dir(tmp_path)
        lease = json.loads((run / "lease.json").read_text())
        assert lease["pid"] == first.pid

        second = run_job(
            "run_corpus.py", "--config", str(config), cwd=tmp_path, env=ray_head.env(), timeout=120
        )
        assert first.poll() is None, "the first driver finished before the second one was refused"
        assert second.returncode == 2, second.stdout[-2000:] + second.stderr[-2000:]
        assert f"run {run.name} is owned by another driver" in second.stderr
        for part in (
            f"host {lease['host']}",
            f"pid {first.pid}",
            lease["acquired_at"],
            "--wait-for-lease",
            "--snapshot",
        ):
            assert part in second.stderr
        assert "Traceback" not in second.stderr

        waiting = run_job("run_corpus.py", "--config", str(config), "--wait-for-lease", cwd=tmp_path,
                          env=ray_head.env(), timeout=240)  # fmt: skip
        assert first.wait(timeout=240) == 0, (tmp_path / "first.log").read_text()[-3000:]
    finally:
        if first.poll() is None:
            first.kill()
    assert waiting.returncode == 0, waiting.stdout[-2000:] + waiting.stderr[-2000:]
    assert "[lease] waiting: run" in waiting.stdout
    assert "[resume] 20 of 20 shards already finished" in waiting.stdout

    per_item = Counter(calls(log))
    assert len(per_item) == 100 and set(per_item.values()) == {1}, "an item was computed by two drivers"
    ids = Store(str(tmp_path / "runs")).read_outputs(run.name).column("item_id").to_pylist()
    assert len(ids) == len(set(ids)) == 100
    assert not (run / "lease.json").exists()  # released at the end of each run


@pytest.mark.heavy
def test_sigkilled_drivers_lease_expires_and_a_later_driver_takes_over(ray_head, tmp_path):
    log = tmp_path / "calls.log"
    config = write_config(tmp_path, log, delay_s=0.1)
    env = {**ray_head.env(), "SCRUTINEER_LEASE_TTL_S": "15"}
    store = Store(str(tmp_path / "runs"))
    first = start_driver(config, tmp_path, env, "first")
    try:
        wait_for(lambda: run_dir(tmp_path) is not None and len(store.finished_shards(run_dir(tmp_path).name)) >= 3,
                 "three finished shards", tmp_path / "first.log")  # fmt: skip
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    run = run_dir(tmp_path)
    # As if the dead driver ran on another node: its pid cannot be probed, only expiry frees the run.
    lease = json.loads((run / "lease.json").read_text())
    (run / "lease.json").write_text(json.dumps({**lease, "host": "node-7"}))
    time.sleep(1.0)  # let workers owned by the dead driver exit
    done_before = store.finished_shards(run.name)
    calls_before = len(calls(log))

    refused = run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=env, timeout=120)
    assert refused.returncode == 2 and "host node-7" in refused.stderr, (
        refused.stdout[-2000:] + refused.stderr[-2000:]
    )

    resumed = run_job(
        "run_corpus.py", "--config", str(config), "--wait-for-lease", cwd=tmp_path, env=env, timeout=240
    )
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert f"[lease] run {run.name}: took over from host node-7, pid {lease['pid']}" in resumed.stdout
    assert "expired at" in resumed.stdout
    items = store.read_table(run.name, "items").column("item_id").to_pylist()
    recomputed = {items.index(i) // 5 for i in calls(log)[calls_before:]}
    assert recomputed and recomputed.isdisjoint(done_before), (
        "a shard finished before the kill was recomputed"
    )
    ids = store.read_outputs(run.name).column("item_id").to_pylist()
    assert len(ids) == len(set(ids)) == 100
    assert not (run / "lease.json").exists()


@pytest.mark.heavy
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_driver_releases_its_lease(ray_head, tmp_path, sig):
    log = tmp_path / "calls.log"
    config = write_config(tmp_path, log, delay_s=0.2)
    driver = start_driver(config, tmp_path, ray_head.env(), "driver")
    try:
        wait_for(
            lambda: run_dir(tmp_path) is not None and calls(log), "work starting", tmp_path / "driver.log"
        )
        assert (run_dir(tmp_path) / "lease.json").exists()
        driver.send_signal(sig)
        code = driver.wait(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
    # SystemExit (SIGTERM; Ray's driver handler once Ray is up, ours before) or KeyboardInterrupt
    assert code not in (0, -sig), (tmp_path / "driver.log").read_text()[-3000:]
    assert not (run_dir(tmp_path) / "lease.json").exists()  # the next driver need not wait for expiry


# -- a driver that lost its lease (issue 26) -----------------------------------------------------
@pytest.fixture(params=STORE_BACKENDS)
def store(request, tmp_path, monkeypatch) -> Store:
    return file_or_s3_store(request, tmp_path, monkeypatch, "fence")


def one_row_table(item_id: str) -> pa.Table:
    from storage.records import Output
    from storage.schemas import OUTPUT_SCHEMA, table_from_rows

    return table_from_rows([Output(item_id=item_id, label="VALID", confidence=0.9).to_row("r", "s", 0)], OUTPUT_SCHEMA)


def leftovers(store: Store, run_id: str) -> list[str]:
    return [p for folder in ("shards", "failed", "") for p, _, _ in store.list_files(run_id, folder) if ".tmp-" in p]


def test_fenced_writes_land_only_while_the_lease_names_their_owner(store):
    first = RunLease(store, ["run-f"], ttl_s=30, log=lambda line: None)
    first.acquire()
    try:
        fenced = Store(LeasedStoreUri(store.uri, first.owner))  # what a worker of the first driver opens
        assert fenced.lease_owner == first.owner
        fenced.write_shard("run-f", 0, one_row_table("a"))  # still the owner: lands
        assert store.finished_shards("run-f") == {0}
        # the first driver froze past its TTL and a second one took the run over
        path = store.path("run-f", "lease.json")
        data, version = store.read_versioned(path)
        expired = {**json.loads(data), "expires_at": "2000-01-01T00:00:00+00:00"}
        assert store.replace_if_unchanged(path, json.dumps(expired).encode(), version)
        second = RunLease(store, ["run-f"], ttl_s=30, log=lambda line: None)
        second.acquire()
        with pytest.raises(LeaseLostError) as refused:
            fenced.write_shard("run-f", 1, one_row_table("b"))
        assert second.owner in str(refused.value) and f"pid {second.pid}" in str(refused.value)
        with pytest.raises(LeaseLostError):
            fenced.mark_shard_failed("run-f", 2, "boom", 3)
        assert store.finished_shards("run-f") == {0} and store.failed_shards("run-f") == {}
        assert leftovers(store, "run-f") == []
        # the refusal crosses process boundaries (Ray pickles a worker's error) intact
        import pickle

        again = pickle.loads(pickle.dumps(refused.value))
        assert str(again) == str(refused.value) and again.run_id == "run-f"
        assert pickle.loads(pickle.dumps(LeasedStoreUri(store.uri, "o"))).lease_owner == "o"
        second.release()
        with pytest.raises(LeaseLostError, match="released or deleted"):  # no lease at all: not ours either
            fenced.write_shard("run-f", 1, one_row_table("b"))
    finally:
        first.release()


def test_a_lease_not_renewed_past_its_ttl_and_taken_over_is_confirmed_lost_naming_the_new_owner(store):
    lines: list[str] = []
    # heartbeat_s huge: the heartbeat thread is frozen with the driver (SIGSTOP, a paused VM)
    first = RunLease(store, ["run-a", "run-b"], ttl_s=1.0, heartbeat_s=3600, log=lines.append)
    first.acquire()
    first.confirm()  # fresh: nothing to do
    second = RunLease(store, ["run-a", "run-b"], ttl_s=30, log=lambda line: None)
    second.acquire(wait=True, poll_s=0.1)  # waits out the first one's TTL, then takes over
    try:
        with pytest.raises(LeaseLostError) as lost:
            first.confirm()  # back from the freeze: renews at once, finds the run taken
        assert f"pid {second.pid}" in str(lost.value) and second.owner in str(lost.value)
        assert sorted(first.lost) == ["run-a", "run-b"] and any("LOST run run-a" in line for line in lines)
        first.release()  # must not free the new owner's lease
        assert json.loads(store.read_versioned(store.path("run-a", "lease.json"))[0])["owner"] == second.owner
    finally:
        second.release()


def test_a_stale_lease_nobody_took_is_renewed_by_confirm_and_kept(store):
    # a storage outage longer than the TTL that no other driver used: the run goes on
    holder = RunLease(store, ["run-a"], ttl_s=1.0, heartbeat_s=3600, log=lambda line: None)
    holder.acquire()
    try:
        before = json.loads(store.read_versioned(store.path("run-a", "lease.json"))[0])["expires_at"]
        time.sleep(1.5)
        holder.confirm()
        after = json.loads(store.read_versioned(store.path("run-a", "lease.json"))[0])["expires_at"]
        assert after > before and holder.lost == []
    finally:
        holder.release()


@pytest.mark.integration
def test_a_driver_frozen_past_its_ttl_stops_and_lands_no_shard_after_the_takeover(ray_session, tmp_path, capsys):
    from cluster.runner import PoolConfig, run_shard_tasks
    from cluster.shards import ShardTask
    from tests.cluster.test_runner import make_items
    from verifiers import RunContext, SystemSpec, build_system

    log = tmp_path / "calls.log"
    spec = SystemSpec("scripted", {"delay_s": 0.5, "call_log": str(log)})
    ctx = RunContext("r-freeze", "2026-01-01")
    # shard 0 (1 item) ends first; shard 1 (20 items, ~10 s) is in flight across the takeover; 2-3 wait
    bounds = [(0, 1), (1, 21), (21, 23), (23, 25)]
    tasks = [ShardTask("r-freeze", "scripted", spec.config_hash(), spec, ctx, i, a, b) for i, (a, b) in enumerate(bounds)]
    store_uri = str(tmp_path / "runs")
    store = Store(store_uri)
    first = RunLease(store, ["r-freeze"], ttl_s=1.5, heartbeat_s=3600, log=print)  # heartbeat frozen too
    second = RunLease(store, ["r-freeze"], ttl_s=60, log=print)
    first.acquire()
    at_takeover: dict[str, set[int]] = {}

    def freeze(result) -> None:
        if at_takeover:
            return
        # the driver stalls here past its TTL; meanwhile a second driver takes the run over
        second.acquire(wait=True, poll_s=0.1)
        at_takeover["shards"] = store.finished_shards("r-freeze")

    try:
        outcome = run_shard_tasks(tasks, make_items(25), build=functools.partial(build_system, plugins=(
            "tests.helpers.scripted_system",)), store_uri=store_uri, pool=PoolConfig(workers=2),
            on_shard_done=freeze, lease=first)  # fmt: skip
        shards_after = store.finished_shards("r-freeze")
        holder = json.loads((tmp_path / "runs" / "r-freeze" / "lease.json").read_text())["owner"]
    finally:
        second.release()
        first.release()
    out = capsys.readouterr().out
    assert at_takeover["shards"] == {0}
    assert outcome.lease_lost and second.owner in outcome.lease_lost and f"pid {second.pid}" in outcome.lease_lost
    assert not outcome.complete and outcome.discarded == [("r-freeze", 1)]  # ran, but its file was refused
    assert shards_after == {0}, "a shard landed after the lease was lost"
    assert store.failed_shards("r-freeze") == {} and holder == second.owner
    called = {line.split()[1] for line in log.read_text().splitlines()}
    assert called == {f"item-{i:03d}" for i in range(21)}, "shards were handed out after the lease was lost"
    assert "[lease] LOST: run r-freeze is no longer this driver's" in out
    assert "1 shards' writes discarded, 2 shards left to the new owner" in out
