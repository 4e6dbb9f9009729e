"""Every Ray process of the tests' session head listens on 127.0.0.1 only.

Before RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 (tests/helpers/ray_cluster.py), `ray start
--node-ip-address=127.0.0.1` printed "Local node IP: <the machine's outward address>" and the GCS
and raylet listened on that interface or on every interface.
"""

from __future__ import annotations

import sys

import pytest
import ray

from tests.helpers.ray_cluster import head_processes, is_loopback_only, listening_sockets

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads sockets from /proc")


def test_every_listening_socket_of_the_head_is_loopback(ray_session):
    # A task makes the raylet start a worker, whose gRPC server must be loopback too.
    assert ray.get(ray.remote(lambda: 1).remote()) == 1
    names = set(head_processes(ray_session).values())
    assert {"gcs_server", "raylet"} <= names, names
    sockets = listening_sockets(ray_session)
    owners = {name for name, _, _ in sockets}
    assert {"gcs_server", "raylet"} <= owners, sockets  # the check sees the core servers' sockets
    gcs_port = int(ray_session.gcs_address.rsplit(":", 1)[1])
    dash_port = int(ray_session.dashboard_url.rsplit(":", 1)[1])
    ports = {port for _, _, port in sockets}
    assert {gcs_port, dash_port} <= ports, sockets
    exposed = [s for s in sockets if not is_loopback_only(s[1])]
    assert exposed == [], f"listening beyond loopback: {exposed}"


def test_loopback_check_rejects_wildcards_and_other_interfaces():
    assert is_loopback_only("127.0.0.1") and is_loopback_only("::ffff:127.0.0.1")
    assert not any(map(is_loopback_only, ["0.0.0.0", "::", "192.0.2.2", "::ffff:192.0.2.2"]))


def test_the_head_registered_its_node_on_loopback(ray_session):
    nodes = [n for n in ray.nodes() if n["Alive"]]
    assert [n["NodeManagerAddress"] for n in nodes] == ["127.0.0.1"]
