"""Every Ray process of the tests' session head, and of a default local run, listens on 127.0.0.1 only.

Before RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 (tests/helpers/ray_cluster.py), `ray start
--node-ip-address=127.0.0.1` printed "Local node IP: <the machine's outward address>" and the GCS
and raylet listened on that interface or on every interface.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import ray

from tests.helpers.paths import REPO_ROOT
from tests.helpers.ray_cluster import (
    descendants,
    head_processes,
    is_loopback_only,
    listening_sockets,
    processes_carrying,
    session_members,
    sockets_of,
)

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


def _user_shell_env(tmp_root: Path) -> dict[str, str]:
    """The environment of a user's shell: none of the test session's Ray settings (conftest sets
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 for this process), and TMPDIR at a folder of the test's own."""
    dropped = {"RAY_ADDRESS", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_AUTH_MODE"}
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, "TMPDIR": str(tmp_root)}


@pytest.mark.heavy  # a whole default run as a subprocess
@pytest.mark.integration
def test_a_default_local_run_listens_on_loopback_only_and_leaves_nothing(tmp_path: Path):
    """`python jobs/run_corpus.py` (local Ray) once had gcs_server and raylet on `*` and the agents on
    0.0.0.0 and the outward address, with authentication disabled; and left a session under /tmp/ray
    and an empty ./cache."""
    tmp_root = Path(tempfile.mkdtemp(prefix="s", dir="/tmp"))  # short: Ray's unix socket paths go under it
    try:
        log = (tmp_path / "run.log").open("w")
        run = subprocess.Popen([sys.executable, str(REPO_ROOT / "jobs" / "run_corpus.py")], cwd=tmp_path,
                               env=_user_shell_env(tmp_root), stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)  # fmt: skip  # its session holds all it starts
        seen: set[tuple[str, str, int]] = set()
        in_tmp_root: set[str] = set()  # names of processes that carried the run's temp dir
        try:
            while run.poll() is None:  # the run's process tree, and any Ray process that left it
                carrying = processes_carrying(str(tmp_root))
                in_tmp_root |= set(carrying.values())
                seen |= set(sockets_of(descendants(run.pid) | carrying))
                time.sleep(0.25)
        finally:
            if run.poll() is None:
                run.kill()
            log.close()
        output = (tmp_path / "run.log").read_text()
        assert run.returncode == 0, output[-3000:]
        assert {"gcs_server", "raylet"} <= {name for name, _, _ in seen}, seen  # the check saw the core servers
        assert "raylet" in in_tmp_root, in_tmp_root  # Ray's temp dir was the run's own, under TMPDIR
        assert [s for s in seen if not is_loopback_only(s[1])] == [], f"listening beyond loopback: {sorted(seen)}"

        deadline = time.monotonic() + 30  # the driver waited for them; this only absorbs a slow machine
        while (session_members(run.pid) or processes_carrying(str(tmp_root))) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert session_members(run.pid) == {} and processes_carrying(str(tmp_root)) == {}, "processes outlived the run"
        assert list(tmp_root.iterdir()) == [], "the run's Ray temp dir is removed at exit"
        assert not list(Path("/tmp/ray").glob(f"session_*_{run.pid}")), "no session of this run under /tmp/ray"
        assert not (tmp_path / "cache").exists(), "nothing was cached, so no cache folder"
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)
