"""The checkers Serve app under abuse, on real HTTP at 127.0.0.1: a list of slow checks does not
starve a concurrent simple check, nor does one client's flood of slow checks (its surplus is
refused 429 with Retry-After), oversized lists and bodies get 413, deep JSON gets 400, a client
that disconnects frees the workers it held (their processes killed and replaced), and SIGTERM
stops a blocking `serve_checkers.py` with one line and exit status 0.

One app (one replica, two workers, 4 s per check) is started for this module by the real entry
point and shut down at its end; `jobs/check.py` is run as a subprocess for its nested-JSON case.
Clients on the same address are told apart by their `X-API-Key` header.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest

from tests.helpers.checker_service import deploy_checkers
from tests.helpers.paths import REPO_ROOT

# a real Ray Serve app deployed by jobs/serve_checkers.py
pytestmark = [pytest.mark.heavy, pytest.mark.integration]

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
max_client_share = 0.5
max_queue_wait_s = 6.0
"""
SLOW = {"kind": "math.equality", "lhs": r"10^{10^{10}}", "rhs": "1"}  # runs into the 4 s wall-clock limit
SIMPLE = {"kind": "math.equality", "lhs": "(x+1)^2", "rhs": "x^2+2x+1"}
TIMEOUT_S, MAX_QUEUE_WAIT_S = 4.0, 6.0


def as_client(name: str) -> dict[str, str]:
    return {"X-API-Key": f"test-key-{name}"}


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
        big["reply"] = httpx.post(url, json=[SLOW] * 8, headers=as_client("lister"), timeout=120).json()
        big["seconds"] = time.perf_counter() - start

    thread = threading.Thread(target=post_slow_list)
    thread.start()
    time.sleep(1.0)  # the list is admitted and its first checks hold workers
    start = time.perf_counter()
    simple = httpx.post(url, json=SIMPLE, headers=as_client("simple"), timeout=120).json()
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

    def post_and_hang_up(name: str) -> None:  # holds one of the two workers with a 4 s check, leaves after 0.8 s
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(url, json=SLOW, headers=as_client(name), timeout=httpx.Timeout(60, read=0.8))

    start = time.perf_counter()  # two clients: one client may hold only one of the two workers
    clients = [threading.Thread(target=post_and_hang_up, args=(f"leaver{i}",)) for i in range(2)]
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


def test_one_clients_flood_of_slow_checks_does_not_starve_another_clients_simple_check(url):
    """Issue 26 item 8: 30 concurrent slow one-check requests from one client used to queue a
    simple check from another client behind all of them (169 s at 10 s per check)."""

    async def scenario() -> tuple[list[tuple[float, httpx.Response]], float, float, dict]:
        async with httpx.AsyncClient(timeout=180) as http:
            start = time.monotonic()

            async def one(body: dict, client: str) -> tuple[float, httpx.Response]:
                reply = await http.post(url, json=body, headers=as_client(client))
                return time.monotonic() - start, reply

            flood = [asyncio.ensure_future(one(SLOW, "flood")) for _ in range(30)]
            await asyncio.sleep(1.0)  # the flood is queued and holds its share of the workers
            sent = time.monotonic() - start
            answered, simple = await one(SIMPLE, "simple")
            return list(await asyncio.gather(*flood)), sent, answered, simple.json()

    flood, sent, answered, simple = asyncio.run(scenario())
    results = [(at, r) for at, r in flood if r.status_code == 200]
    refused = [(at, r) for at, r in flood if r.status_code == 429]
    last = max(at for at, _ in flood)
    print(f"simple check {answered - sent:.2f}s during a 30-request flood; flood: {len(results)} answered, "
          f"{len(refused)} refused 429, last reply at {last:.1f}s")  # fmt: skip
    assert simple["outcome"] == "confirmed"
    assert answered < last  # answered while the flood was still being served
    # it did not queue behind the flood: at most the one flood check running beside it finished first
    assert sum(at < answered for at, _ in results) <= 1
    assert answered - sent < 3 * TIMEOUT_S  # generous; before the fix ~30 checks x 4 s / 2 workers
    assert len(results) + len(refused) == 30 and results and refused
    assert all(r.json()["outcome"] == "inconclusive" for _, r in results)
    for _, reply in refused:
        assert reply.headers["Retry-After"] == str(math.ceil(TIMEOUT_S))
        assert reply.json()["limit"] == "max_queue_wait_s" and "(max_queue_wait_s)" in reply.json()["error"]
    # a check is refused once it has waited the limit, not at once and not never
    assert min(at for at, _ in refused) >= MAX_QUEUE_WAIT_S
    health = _health(url)
    assert health["queue_wait_rejections"] >= len(refused) and health["scheduler"]["waiting"] == 0


def test_sigterm_stops_a_blocking_serve_checkers_with_one_line_and_leaves_other_apps(url, ray_session, tmp_path):
    """Issue 24 item 4: SIGTERM to `serve_checkers.py` (no --detach) used to die by Ray's handler."""
    port = int(url.split(":")[2].split("/")[0])  # Serve's proxy is already up on this port
    config = tmp_path / "term.toml"
    config.write_text('[checkers]\napp_name = "checkers_term"\nroute_prefix = "/term"\nnum_cpus = 0.1\n'
                      "workers_per_replica = 1\n")  # fmt: skip
    server = subprocess.Popen([sys.executable, "jobs/serve_checkers.py", "--config", str(config), "--port", str(port)],
                              env=ray_session.env(), cwd=REPO_ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        announced = json.loads(server.stdout.readline())  # printed once deployed
        assert announced["app"] == "checkers_term"
        assert httpx.get(f"http://127.0.0.1:{port}/term/kinds", timeout=60).status_code == 200
        server.send_signal(signal.SIGTERM)
        out, err = server.communicate(timeout=120)
    finally:
        if server.poll() is None:
            server.kill()
    assert server.returncode == 0, err[-3000:]
    assert "Traceback" not in err and "Traceback" not in out, err[-3000:]
    assert out.strip().splitlines() == ["stopped by SIGTERM: app 'checkers_term' deleted"], (out, err[-2000:])
    assert httpx.get(f"http://127.0.0.1:{port}/term/kinds", timeout=60).status_code == 404
    assert _health(url)["ok"]  # the module's app kept running (no serve.shutdown of the whole cluster)
