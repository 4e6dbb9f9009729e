"""The run lease on local disk and on a real S3 API (moto server): one owner per run, expiry,
takeover, heartbeat, release, all-or-none over a job's runs."""

from __future__ import annotations

import json
import time

import pytest

from storage.run_lease import LeaseHeld, LeaseRecord, RunLease, lease_ttl_from_env
from storage.store import Store
from tests.helpers.s3_server import STORE_BACKENDS, file_or_s3_store


@pytest.fixture(params=STORE_BACKENDS)
def store(request, tmp_path, monkeypatch) -> Store:
    return file_or_s3_store(request, tmp_path, monkeypatch, "lease")


def lease(store: Store, run_ids: list[str], ttl_s: float = 30.0, **kwargs) -> RunLease:
    lines: list[str] = []
    held = RunLease(store, run_ids, ttl_s=ttl_s, log=lines.append, **kwargs)
    held.lines = lines  # type: ignore[attr-defined]
    return held


def stored(store: Store, run_id: str) -> LeaseRecord | None:
    current = store.read_versioned(store.path(run_id, "lease.json"))
    return None if current is None else LeaseRecord.from_bytes(current[0])


def test_conditional_writes_compare_and_swap(store):
    path = store.path("r", "x.json")
    assert store.read_versioned(path) is None
    v1 = store.create_if_absent(path, b"one")
    assert v1 and store.create_if_absent(path, b"two") is None  # the second create loses
    assert store.read_versioned(path) == (b"one", v1)
    v2 = store.replace_if_unchanged(path, b"three", v1)
    assert v2 and v2 != v1
    assert store.replace_if_unchanged(path, b"four", v1) is None  # stale version
    assert store.delete_if_unchanged(path, v1) is False
    assert store.read_versioned(path)[0] == b"three"
    assert store.delete_if_unchanged(path, v2) is True
    assert store.read_versioned(path) is None


def test_second_driver_is_refused_with_the_owner_named_until_release(store):
    first = lease(store, ["run-a"])
    first.acquire()
    try:
        record = stored(store, "run-a")
        assert record.owner == first.owner and record.pid == first.pid and record.ttl_s == 30.0
        second = lease(store, ["run-a"])
        with pytest.raises(LeaseHeld) as refused:
            second.acquire()
        message = str(refused.value)
        for part in (
            first.host,
            f"pid {first.pid}",
            record.acquired_at,
            record.expires_at,
            "--wait-for-lease",
            "--snapshot",
        ):
            assert part in message
    finally:
        first.release()
    assert stored(store, "run-a") is None  # released: the object is gone
    second.acquire()  # now free
    assert stored(store, "run-a").owner == second.owner and second.takeovers == []
    second.release()


def foreign(store: Store, run_id: str, expires_in: float) -> None:
    """A lease written by a driver on another host (its pid cannot be probed from here)."""
    now = time.time()
    iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(t))  # noqa: E731
    record = LeaseRecord(run_id, "elsewhere:4242:beef", "elsewhere", 4242, iso(now - 100), iso(now - 5),
                         iso(now + expires_in), 60.0)  # fmt: skip
    assert store.create_if_absent(store.path(run_id, "lease.json"), record.to_bytes())


def test_expired_lease_is_taken_over_and_reported(store):
    foreign(store, "run-a", expires_in=-1)
    taker = lease(store, ["run-a"])
    taker.acquire()
    assert stored(store, "run-a").owner == taker.owner
    assert (
        len(taker.takeovers) == 1 and "elsewhere" in taker.takeovers[0] and "expired at" in taker.takeovers[0]
    )
    assert taker.lines == taker.takeovers
    taker.release()


def test_live_foreign_lease_is_waited_for_until_it_expires(store):
    foreign(store, "run-a", expires_in=1.5)
    waiter = lease(store, ["run-a"])
    with pytest.raises(LeaseHeld):
        waiter.acquire()
    started = time.monotonic()
    waiter.acquire(wait=True, poll_s=0.2)
    assert 0.5 < time.monotonic() - started < 10
    assert waiter.lines[0].startswith("[lease] waiting: run run-a is owned by another driver: host elsewhere")
    assert len(waiter.takeovers) == 1
    waiter.release()


@pytest.mark.integration
def test_a_dead_process_on_this_host_is_taken_over_at_once(store, tmp_path):
    import subprocess
    import sys

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(dead.stdout)
    holder = lease(store, ["run-a"])
    holder.acquire()
    record = json.loads(store.read_versioned(store.path("run-a", "lease.json"))[0])
    holder._stop.set()  # simulate a SIGKILL: no release, no heartbeat
    path = store.path("run-a", "lease.json")
    current = store.read_versioned(path)
    assert store.replace_if_unchanged(path, json.dumps({**record, "pid": pid}).encode(), current[1])
    taker = lease(store, ["run-a"])
    taker.acquire()
    assert "no longer running on this host" in taker.takeovers[0]
    taker.release()


def test_heartbeat_keeps_the_lease_alive_past_its_ttl(store):
    holder = lease(store, ["run-a", "run-b"], ttl_s=1.2, heartbeat_s=0.2)
    holder.acquire()
    first = stored(store, "run-a")
    time.sleep(2.5)  # twice the TTL
    renewed = stored(store, "run-a")
    assert renewed.owner == holder.owner and renewed.expires_at > first.expires_at
    assert renewed.acquired_at == first.acquired_at
    with pytest.raises(LeaseHeld):
        lease(store, ["run-b"]).acquire()
    assert holder.lost == []
    holder.release()
    assert stored(store, "run-a") is None and stored(store, "run-b") is None


def test_a_stalled_holder_notices_it_lost_the_lease(store):
    holder = lease(store, ["run-a"], ttl_s=0.5, heartbeat_s=60)
    holder.acquire()
    time.sleep(0.8)
    taker = lease(store, ["run-a"])
    taker.acquire()
    holder.renew()
    assert holder.lost == ["run-a"] and "LOST run run-a" in holder.lines[-1]
    holder.release()  # must not delete the new owner's lease
    assert stored(store, "run-a").owner == taker.owner
    taker.release()


def test_all_or_none_over_a_jobs_runs(store):
    other = lease(store, ["run-b"])
    other.acquire()
    job = lease(store, ["run-a", "run-b", "run-c"])
    with pytest.raises(LeaseHeld) as refused:
        job.acquire()
    assert refused.value.holder.run_id == "run-b"
    assert stored(store, "run-a") is None and stored(store, "run-c") is None  # what it got was given back
    other.release()
    job.acquire()
    assert {stored(store, r).owner for r in ("run-a", "run-b", "run-c")} == {job.owner}
    job.release()


def test_ttl_from_env(monkeypatch):
    monkeypatch.delenv("SCRUTINEER_LEASE_TTL_S", raising=False)
    assert lease_ttl_from_env() == 60.0
    monkeypatch.setenv("SCRUTINEER_LEASE_TTL_S", "3.5")
    assert lease_ttl_from_env() == 3.5
    monkeypatch.setenv("SCRUTINEER_LEASE_TTL_S", "soon")
    with pytest.raises(ValueError, match="SCRUTINEER_LEASE_TTL_S='soon' is not a number"):
        lease_ttl_from_env()
