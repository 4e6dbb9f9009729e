"""Two drivers on one run (issue 11, "paid twice"): the second exits 2 naming the owner, or waits
for it with --wait-for-lease; a SIGKILLed driver's lease expires and a later driver takes over
without recomputing a finished shard."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from storage.store import Store
from tests.helpers.paths import REPO_ROOT
from tests.helpers.run_job import run_job

pytestmark = pytest.mark.heavy
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
