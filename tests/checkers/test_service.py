"""The checkers Ray Serve app: real HTTP on 127.0.0.1, a deployment handle from a Ray task,
batching, autoscaled replicas from config, limits that never take the service down.

One app is started for this module on a free port and shut down (serve.shutdown) at its end.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from clients.checker_client import CheckReply, CheckRequest, HandleCheckerClient, HttpCheckerClient
from clients.errors import TransientError
from tests.helpers.checker_service import deploy_checkers
from tests.helpers.ports import free_port

if TYPE_CHECKING:  # checkers.service imports Ray Serve (seconds): imported where a test runs, not at collection
    from checkers.service import ServiceConfig

pytestmark = pytest.mark.heavy  # a real Ray Serve app deployed by jobs/serve_checkers.py

APP = "checkers_test"


SERVICE_TOML = """
[checkers]
app_name = "checkers_test"
route_prefix = "/checkers"
num_cpus = 0.25
workers_per_replica = 1
timeout_s = 4.0
memory_mb = 600
max_batch_size = 8
batch_wait_timeout_s = 0.2

[checkers.autoscaling]
min_replicas = 2
max_replicas = 3
target_ongoing_requests = 2
"""


@pytest.fixture(scope="module")
def service(ray_session, tmp_path_factory):
    """Deployed by the real entry point, `jobs/serve_checkers.py --detach`, from a TOML config."""
    from ray import serve

    from checkers.service import ServiceConfig

    path = tmp_path_factory.mktemp("checkers") / "service.toml"
    path.write_text(SERVICE_TOML)
    port, announced = deploy_checkers(ray_session.env(), path)
    assert announced["url"] == f"http://127.0.0.1:{port}/checkers"
    yield dataclasses.replace(ServiceConfig.from_toml(path), port=port)
    serve.shutdown()


def url(config: ServiceConfig) -> str:
    return f"http://127.0.0.1:{config.port}{config.route_prefix}"


def _listening_addresses(port: int) -> set[str]:
    """Local addresses with a listening TCP socket on `port` (from /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port_hex = local.rsplit(":", 1)
            if state == "0A" and int(port_hex, 16) == port:
                found.add(address)
    return found


def test_http_binds_loopback_only(service):
    assert _listening_addresses(service.port) == {"0100007F"}  # 127.0.0.1, not 0.0.0.0 or ::


def test_http_single_list_kinds_and_health(service):
    with httpx.Client(timeout=120) as http:
        one = http.post(url(service) + "/", json={"kind": "numerics.percentages_sum",
                                                  "percentages": ["40%", "75%"]}).json()  # fmt: skip
        assert (one["outcome"], one["severity"]) == ("refuted", "high")
        many = http.post(url(service), json=[
            {"kind": "math.series", "payload": {"series": r"\sum_{n=0}^{\infty}\frac{x^n}{n^2}", "equals": "1"}},
            {"kind": "units.dimensions", "payload": {"equation": "E = m c^2", "units": {"E": "J", "m": "kg", "c": "m/s"}}},
            {"kind": "no.such"},
        ]).json()  # fmt: skip
        assert [r["outcome"] for r in many] == ["refuted", "confirmed", "error"]
        assert many[0]["evidence"]["undefined_terms"][0]["index"] == "n=0"
        kinds = http.get(url(service) + "/kinds").json()
        assert len(kinds) == 19 and "math.limiting_form" in kinds
        health = http.get(url(service) + "/health").json()
        assert health["ok"] and health["engine"] == "wolframscript not installed; sympy used"
        assert http.post(url(service), content=b"{nope").status_code == 400


def test_limits_and_attacks_do_not_take_the_service_down(service, tmp_path):
    marker = tmp_path / "pwned"
    with httpx.Client(timeout=120) as http:
        hung = http.post(
            url(service), json={"kind": "math.equality", "lhs": r"10^{10^{10}}", "rhs": "1"}
        ).json()
        assert hung["outcome"] == "inconclusive" and "wall-clock" in hung["reason"]
        attack = http.post(url(service), json={"kind": "math.equality", "syntax": "plain", "rhs": "1",
                                               "lhs": f"__import__('os').system('touch {marker}')"}).json()  # fmt: skip
        assert attack["outcome"] == "error"
        after = http.post(
            url(service), json={"kind": "math.equality", "lhs": "(x+1)^2", "rhs": "x^2+2x+1"}
        ).json()
        assert after["outcome"] == "confirmed"
    assert not marker.exists()


def test_http_client_and_error_mapping(service):
    client = HttpCheckerClient(url(service))
    reply = asyncio.run(client.check(CheckRequest("numerics.ratio", {"numerator": "13 hours",
                                                                      "denominator": "6 minutes", "stated": "∼200"})))  # fmt: skip
    assert isinstance(reply, CheckReply) and reply.outcome == "refuted" and reply.severity == "medium"
    down = HttpCheckerClient(f"http://127.0.0.1:{free_port()}/checkers", timeout_s=5)
    with pytest.raises(TransientError):
        asyncio.run(down.check(CheckRequest("math.equality", {"lhs": "x", "rhs": "x"})))


def test_handle_from_a_ray_task_batches(service):
    import ray

    @ray.remote(num_cpus=0)
    def audit(app: str) -> tuple[list[str], dict]:
        client = HandleCheckerClient(app)
        requests = [
            CheckRequest("numerics.abstract_body", {"abstract": f"0.3{i}", "body": "0.34"}) for i in range(8)
        ]
        replies = asyncio.run(client.check_many(requests))
        single = client.check_blocking(CheckRequest("math.approximation", {
            "statement": r"\frac{q}{(1+q)^2} \approx q/4", "var": "q", "to": "0"}))  # fmt: skip
        # stats answer from one replica at a time: ask often enough to hear from both
        stats = [client.handle.stats.remote().result() for _ in range(20)]
        return [r.outcome for r in replies] + [single.outcome], stats

    outcomes, stats = ray.get(audit.remote(APP), timeout=180)
    assert outcomes == ["refuted"] * 4 + ["confirmed"] + ["refuted"] * 3 + ["refuted"]
    assert {s["max_batch_size"] for s in stats} == {8}  # from the TOML config
    # the 8 concurrent requests of check_many were gathered into batches larger than one
    assert max(s["largest_batch"] for s in stats) >= 2


def test_replicas_follow_the_autoscaling_config(service):
    from ray import serve

    status = serve.status().applications[APP].deployments["CheckerService"]
    assert status.replica_states.get("RUNNING", 0) >= 2  # min_replicas = 2 from the config


def test_config_from_toml(tmp_path):
    from checkers.service import Autoscaling, ServiceConfig

    path = tmp_path / "service.toml"
    path.write_text('[checkers]\nport = 8123\nnum_replicas = 2\nmax_batch_size = 16\ntimeout_s = 3.5\n'
                    '[checkers.autoscaling]\nmin_replicas = 1\nmax_replicas = 4\n')  # fmt: skip
    config = ServiceConfig.from_toml(path)
    assert (config.host, config.port, config.num_replicas, config.max_batch_size) == (
        "127.0.0.1",
        8123,
        2,
        16,
    )
    assert config.autoscaling == Autoscaling(min_replicas=1, max_replicas=4)
    assert config.limits().timeout_s == 3.5
    assert json.dumps(config.extra) == "{}"
