"""The checkers Serve app under abuse, on real HTTP at 127.0.0.1: a list of slow checks does not
starve a concurrent simple check, oversized lists and bodies get 413, deep JSON gets 400, and a
client that disconnects frees the workers it held (their processes killed and replaced).

One app (one replica, two workers, 4 s per check) is started for this module by the real entry
point and shut down at its end; `jobs/check.py` is run as a subprocess for its nested-JSON case.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import httpx
import pytest

from tests.helpers.checker_service import deploy_checkers
from tests.helpers.paths import REPO_ROOT

pytestmark = pytest.mark.heavy  # a real Ray Serve app deployed by jobs/serve_checkers.py

SERVICE_TOML = """
[checkers]
app_name = "checkers_abuse"
route_prefix = "/abuse"
num_cpus = 0.25
num_replicas = 1
workers_per_replica = 2
timeout_s = 4.0
memory_mb = 600
max_batch_size = 8
batch_wait_timeout_s = 0.05
max_checks_per_request = 16
max_body_bytes = 65536
max_json_depth = 32
max_request_share = 0.5
"""
SLOW = {"kind": "math.equality", "lhs": r"10^{10^{10}}", "rhs": "1"}  # runs into the 4 s wall-clock limit
SIMPLE = {"kind": "math.equality", "lhs": "(x+1)^2", "rhs": "x^2+2x+1"}


@pytest.fixture(scope="module")
def url(ray_session, tmp_path_factory):
    from ray import serve

    path = tmp_path_factory.mktemp("abuse") / "service.toml"
    path.write_text(SERVICE_TOML)
    port, _ = deploy_checkers(ray_session.env(), path)
    base = f"http://127.0.0.1:{port}/abuse"
    with httpx.Client(timeout=120) as http:  # workers start lazily: one answered check = warm
        assert http.post(base, json=SIMPLE).json()["outcome"] == "confirmed"
    yield base
    serve.shutdown()


def _health(url: str) -> dict:
    return httpx.get(url + "/health", timeout=30).json()


def test_a_list_of_slow_checks_does_not_starve_a_simple_check(url):
    big: dict = {}

    def post_slow_list() -> None:
        start = time.perf_counter()
        big["reply"] = httpx.post(url, json=[SLOW] * 8, timeout=120).json()
        big["seconds"] = time.perf_counter() - start

    thread = threading.Thread(target=post_slow_list)
    thread.start()
    time.sleep(1.0)  # the list is admitted and its first checks hold workers
    start = time.perf_counter()
    simple = httpx.post(url, json=SIMPLE, timeout=120).json()
    latency = time.perf_counter() - start
    thread.join(timeout=120)
    print(
        f"simple check latency during a POST of 8 slow checks: {latency:.2f}s (list took {big['seconds']:.1f}s)"
    )
    assert simple["outcome"] == "confirmed"
    assert latency < 3.0  # below one check's wall-clock limit: it never queued behind the list
    assert [r["outcome"] for r in big["reply"]] == ["inconclusive"] * 8


def test_too_long_list_and_too_large_body_get_413_naming_the_limit(url):
    too_long = httpx.post(url, json=[SIMPLE] * 17, timeout=60)
    assert too_long.status_code == 413
    assert too_long.json()["error"] == "17 checks in one request; the limit is 16 (max_checks_per_request)"
    too_large = httpx.post(url, json={**SIMPLE, "lhs": "x+" * 40_000 + "x"}, timeout=60)
    assert too_large.status_code == 413
    assert too_large.json()["error"] == "request body larger than 65536 bytes (max_body_bytes)"
    # streamed without a Content-Length: still cut off at the limit
    chunked = httpx.post(url, content=iter([b'{"kind": "x", "pad": "', b"a" * 70_000, b'"}']), timeout=60)
    assert chunked.status_code == 413 and "max_body_bytes" in chunked.json()["error"]
    assert httpx.post(url, json=[SIMPLE] * 16, timeout=120).status_code == 200  # at the limit: served


@pytest.mark.parametrize("depth", [33, 30_000])  # 30,000: json.loads itself would hit RecursionError
def test_deeply_nested_json_gets_400(url, depth):
    reply = httpx.post(url, content=b"[" * depth + b"]" * depth, timeout=60)
    assert reply.status_code == 400
    assert reply.json() == {"error": "JSON nested deeper than 32 levels (max_json_depth)"}
    assert _health(url)["ok"]


def test_a_client_that_disconnects_frees_its_workers(url):
    before = _health(url)
    pids = set(before["worker_pids"])

    def post_and_hang_up() -> None:  # holds one of the two workers with a 4 s check, leaves after 0.8 s
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(url, json=SLOW, timeout=httpx.Timeout(60, read=0.8))

    start = time.perf_counter()
    clients = [threading.Thread(target=post_and_hang_up) for _ in range(2)]
    for client in clients:
        client.start()
    for client in clients:
        client.join(timeout=60)
    while (
        _health(url)["cancelled_checks"] < before["cancelled_checks"] + 2 and time.perf_counter() - start < 30
    ):
        time.sleep(0.05)
    freed = time.perf_counter() - start
    after = _health(url)
    simple_start = time.perf_counter()
    simple = httpx.post(url, json=SIMPLE, timeout=60).json()
    latency = time.perf_counter() - simple_start
    print(f"2 disconnected slow checks cancelled {freed:.2f}s after they were sent; "
          f"next simple check {latency:.2f}s (includes a fresh worker's start)")  # fmt: skip
    assert after["cancelled_checks"] - before["cancelled_checks"] == 2
    assert freed < 3.0  # killed on disconnect, not at the 4 s wall-clock limit
    killed = pids - set(after["worker_pids"])
    assert killed == pids and len(after["worker_pids"]) == 2  # both replaced by fresh processes
    for pid in killed:  # same machine: the killed worker processes are gone
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert simple["outcome"] == "confirmed" and latency < 10


@pytest.mark.parametrize("depth", [40, 200_000])
def test_check_job_refuses_nested_json_in_one_line(depth):
    done = subprocess.run([sys.executable, "jobs/check.py"], input="[" * depth + "]" * depth, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        json.dumps({"error": "JSON nested deeper than 32 levels (--max-depth)"})
    ]
    assert done.stdout == ""
