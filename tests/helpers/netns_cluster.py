"""Several Ray hosts on one machine: each node in its own network namespace.

Layout (all names carry a random suffix so parallel sessions never collide):

    root namespace: bridge br<sfx> at P.1/24, moto S3 and MLflow bound on P.1
    namespace scr<sfx>-head: veth at P.11, `ray start --head`   (GCS P.11:6379, dashboard P.11:8265)
    namespace scr<sfx>-w1:   veth at P.12, `ray start --address=P.11:6379`
    namespace scr<sfx>-w2:   veth at P.13, ...

P is a /24 drawn at random inside 198.18.0.0/15 (RFC 2544, reserved for network tests). No
namespace has a default route, so nothing leaves the test network; every Ray node has its own
ports, so Ray's default ports never clash with other Rays on the machine. Each node offers one
CPU (the machine is small and shared). Token authentication is disabled: the network is private
to this machine.

Disks: all hosts share this machine's filesystem except `NetnsCluster.node_dir`, which each Ray
node sees as its own folder (a bind mount in the node's mount namespace, like a separate
machine's disk): a response cache placed there is per host, so a killed host's cache is gone for
the others, as on a real cluster. CPUs: `head_cpus` and `worker_cpus` are Ray's logical CPUs
(the head offers none by default, so workers land on the worker hosts).

Teardown always runs (also after a failed setup or test): every process left in a namespace is
killed, the veth host ends are deleted explicitly (they can outlive `ip netns del`), then the
namespaces and the bridge.
"""

from __future__ import annotations

import contextlib
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.paths import REPO_ROOT

GCS_PORT = 6379  # outside Ray's worker port range 10002-19999, which a head --port may not use
DASHBOARD_PORT = 8265
PROXY_VARS = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


class NetnsUnavailable(RuntimeError):
    """This machine cannot build namespaces (not root, no `ip`, no bridge support)."""


@dataclass
class Node:
    role: str
    netns: str
    ip: str
    veth_host: str
    veth_ns: str
    temp_dir: Path

    def exec(self, *argv: str) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *argv]


@dataclass
class NetnsCluster:
    suffix: str
    prefix: str  # first three octets of the /24
    bridge: str
    nodes: dict[str, Node] = field(default_factory=dict)
    services: list[subprocess.Popen] = field(default_factory=list)
    s3_endpoint: str = ""
    mlflow_url: str = ""
    work_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="scrutineer-netns-")))
    worker_cpus: int = 4

    @property
    def node_dir(self) -> Path:
        """A folder each Ray node sees as its own (its `node-<role>` folder mounted here); the
        driver and this process see the empty original."""
        return self.work_dir / "node"

    @property
    def bridge_ip(self) -> str:
        return f"{self.prefix}.1"

    @property
    def head(self) -> Node:
        return self.nodes["head"]

    @property
    def gcs_address(self) -> str:
        return f"{self.head.ip}:{GCS_PORT}"

    @property
    def dashboard_url(self) -> str:
        return f"http://{self.head.ip}:{DASHBOARD_PORT}"

    def s3_env(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL": self.s3_endpoint, "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}  # fmt: skip

    def env(self, **extra: str) -> dict[str, str]:
        """Environment for a process on the test network: S3 on the bridge, no proxies, no auth."""
        env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS and k != "RAY_ADDRESS"}
        env.update(self.s3_env())
        # The loopback tests pin Ray to one node (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, see
        # tests/helpers/ray_cluster.py); these hosts are several nodes on their own addresses.
        env.update(RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", MLFLOW_DISABLE_TELEMETRY="true",
                   NO_PROXY="*", PYTHONPATH=str(REPO_ROOT), RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="1", **extra)  # fmt: skip
        return env

    def s3_client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.s3_endpoint, region_name="us-east-1",
                            aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip

    def pids(self, node: Node) -> list[int]:
        out = subprocess.run(["ip", "netns", "pids", node.netns], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    def raylet_pid(self, node: Node) -> int:
        for pid in self.pids(node):
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/comm").read_text().strip() == "raylet":
                    return pid
        raise AssertionError(f"no raylet process in namespace {node.netns}")

    def kill_raylet(self, role: str) -> int:
        """SIGKILL a host's raylet, as when the machine under it vanishes."""
        pid = self.raylet_pid(self.nodes[role])
        os.kill(pid, signal.SIGKILL)
        return pid

    def revive_dead_hosts(self, cpus: int | None = None) -> list[str]:
        """Start Ray again on every worker host whose raylet is gone (a test killed it), so each
        test finds both worker hosts; returns the roles restarted."""
        dead = []
        for role, node in self.nodes.items():
            if role == "head":
                continue
            try:
                self.raylet_pid(node)
            except AssertionError:
                dead.append(role)
                _kill_all(self, node)  # what the killed raylet left behind (workers, agents)
                _ray_start(self, node, self.env(), self.worker_cpus if cpus is None else cpus)
        if dead:
            wait_for_nodes(self, len(self.nodes))
        return dead

    def node_ids(self) -> dict[str, str]:
        """Ray node id -> role, from the state API on the head's dashboard."""
        from ray.util.state import list_nodes

        by_ip = {n.ip: role for role, n in self.nodes.items()}
        return {n.node_id: by_ip.get(n.node_ip, n.node_ip) for n in list_nodes(address=self.dashboard_url, limit=100)}


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise NetnsUnavailable(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")
    return done


def unavailable_reason() -> str | None:
    """Why namespaces cannot be built here (None when they can)."""
    if sys.platform != "linux":
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs these tests as root)"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is missing"
    return None


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _wait_http(url: str, timeout: float, what: str) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with opener.open(url, timeout=3):
                return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"{what} did not answer at {url} within {timeout}s")


def _add_node(cluster: NetnsCluster, role: str, host_octet: int, index: int) -> Node:
    node = Node(role, f"scr{cluster.suffix}-{role}", f"{cluster.prefix}.{host_octet}",
                f"vh{cluster.suffix}{index}", f"vn{cluster.suffix}{index}", cluster.work_dir / f"ray-{role}")  # fmt: skip
    cluster.nodes[role] = node  # registered first: teardown removes whatever part was built
    _ip("netns", "add", node.netns)
    _ip("link", "add", node.veth_host, "type", "veth", "peer", "name", node.veth_ns)
    _ip("link", "set", node.veth_ns, "netns", node.netns)
    _ip("link", "set", node.veth_host, "master", cluster.bridge, "up")
    _ip("-n", node.netns, "addr", "add", f"{node.ip}/24", "dev", node.veth_ns)
    _ip("-n", node.netns, "link", "set", node.veth_ns, "up")
    _ip("-n", node.netns, "link", "set", "lo", "up")
    return node


def _ray_start(cluster: NetnsCluster, node: Node, env: dict[str, str], cpus: int) -> None:
    node.temp_dir.mkdir(parents=True, exist_ok=True)
    own = cluster.work_dir / f"node-{node.role}"
    own.mkdir(exist_ok=True)
    cluster.node_dir.mkdir(exist_ok=True)
    common = [f"--node-ip-address={node.ip}", f"--num-cpus={cpus}", "--object-store-memory=200000000",
              f"--temp-dir={node.temp_dir}", "--disable-usage-stats"]  # fmt: skip
    if node.role == "head":
        args = ["--head", f"--port={GCS_PORT}", "--include-dashboard=true", f"--dashboard-host={node.ip}",
                f"--dashboard-port={DASHBOARD_PORT}", *common]  # fmt: skip
    else:
        args = [f"--address={cluster.gcs_address}", *common]
    for attempt in range(2):
        # `ip netns exec` gives the command its own mount namespace: the bind mount is seen by this
        # node's raylet and workers only (their own disk at node_dir), and vanishes with them.
        argv = ["sh", "-c", 'mount --bind "$0" "$1" && shift && exec "$@"', str(own), str(cluster.node_dir),
                "ray", "start", *args]  # fmt: skip
        done = subprocess.run(node.exec(*argv), env=env, capture_output=True, text=True, timeout=300)
        if done.returncode == 0:
            return
        # `ray start` gives a raylet 30 s (fixed in Ray) to register with the GCS; on a loaded
        # machine it can take longer. A raylet still running registers late: wait_for_nodes sees
        # it. Otherwise clear the namespace and start once more.
        with contextlib.suppress(AssertionError):
            cluster.raylet_pid(node)
            return
        if attempt == 0:
            _kill_all(cluster, node)
    raise RuntimeError(f"ray start on {node.role} ({node.netns}) failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")


def _kill_all(cluster: NetnsCluster, node: Node) -> None:
    """Every process in a node's namespace: SIGTERM, then SIGKILL what is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = cluster.pids(node)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + (5 if sig == signal.SIGTERM else 2)
        while pids and cluster.pids(node) and time.monotonic() < deadline:
            time.sleep(0.2)


def wait_for_nodes(cluster: NetnsCluster, count: int, timeout: float = 300) -> None:
    from ray.util.state import list_nodes

    deadline = time.monotonic() + timeout
    alive: list = []
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            alive = [n for n in list_nodes(address=cluster.dashboard_url, limit=100) if n.state == "ALIVE"]
            if len(alive) >= count:
                return
        time.sleep(1)
    raise TimeoutError(f"only {len(alive)} of {count} Ray nodes alive after {timeout}s")


def _start_services(cluster: NetnsCluster) -> None:
    host = cluster.bridge_ip
    s3_port = _free_port(host)
    cluster.services.append(subprocess.Popen(["moto_server", "-H", host, "-p", str(s3_port)], env=cluster.env(),
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                             start_new_session=True))  # fmt: skip
    cluster.s3_endpoint = f"http://{host}:{s3_port}"
    mlflow_port = _free_port(host)
    folder = cluster.work_dir / "mlflow"
    folder.mkdir()
    cluster.services.append(subprocess.Popen(
        [sys.executable, str(REPO_ROOT / "mlflow" / "launch_server.py"), "--host", host, "--port", str(mlflow_port),
         "--backend", f"sqlite:///{folder}/mlflow.db", "--artifacts", str(folder / "artifacts"),
         # MLflow accepts only localhost / RFC 1918 Host headers by default; 198.18/15 is neither.
         "--allowed-hosts", f"{host}:{mlflow_port},{host}"],
        env=cluster.env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    ))  # fmt: skip
    cluster.mlflow_url = f"http://{host}:{mlflow_port}"
    _wait_http(cluster.s3_endpoint, 60, "moto S3")
    _wait_http(f"{cluster.mlflow_url}/health", 180, "MLflow")


def teardown(cluster: NetnsCluster) -> list[str]:
    """Remove everything `netns_cluster` built; returns what could not be removed (for the log)."""
    problems = []
    for proc in cluster.services:  # own process groups: the MLflow server's workers go too
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    for node in cluster.nodes.values():
        _kill_all(cluster, node)
    for proc in cluster.services:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    for node in cluster.nodes.values():
        present = _ip("link", "show", node.veth_host, check=False).returncode == 0
        if present and (done := _ip("link", "del", node.veth_host, check=False)).returncode != 0:
            problems.append(f"veth {node.veth_host}: {done.stderr.strip()}")
        if (done := _ip("netns", "del", node.netns, check=False)).returncode != 0 and "No such file" not in done.stderr:
            problems.append(f"netns {node.netns}: {done.stderr.strip()}")
    present = _ip("link", "show", cluster.bridge, check=False).returncode == 0
    if present and (done := _ip("link", "del", cluster.bridge, check=False)).returncode != 0:
        problems.append(f"bridge {cluster.bridge}: {done.stderr.strip()}")
    shutil.rmtree(cluster.work_dir, ignore_errors=True)
    return problems


def leftovers(cluster: NetnsCluster) -> list[str]:
    """Interfaces and namespaces of this cluster still present (empty after a clean teardown)."""
    links = _ip("-o", "link", "show", check=False).stdout
    spaces = _ip("netns", "list", check=False).stdout
    names = [cluster.bridge] + [n.veth_host for n in cluster.nodes.values()]
    return [n for n in names if f" {n}:" in links or f" {n}@" in links] + [
        n.netns for n in cluster.nodes.values() if n.netns in spaces.split()]


@contextlib.contextmanager
def netns_cluster(workers: int = 2, start: bool = True, *, head_cpus: int = 0,
                  worker_cpus: int = 4) -> Iterator[NetnsCluster]:  # fmt: skip
    """A Ray head and `workers` worker hosts, each in its own namespace, plus moto S3 and MLflow
    on the bridge (`start=False`: the network only). `head_cpus` / `worker_cpus`: logical CPUs
    each offers (a worker actor takes `cpus_per_worker` of them). Raises NetnsUnavailable when
    this machine cannot build namespaces."""
    reason = unavailable_reason()
    if reason:
        raise NetnsUnavailable(reason)
    suffix = secrets.token_hex(3)  # interface names must fit 15 characters: vh<6 hex><index>
    prefix = f"198.{random.choice((18, 19))}.{random.randrange(256)}"
    cluster = NetnsCluster(suffix=suffix, prefix=prefix, bridge=f"br{suffix}", worker_cpus=worker_cpus)
    try:
        _ip("link", "add", "name", cluster.bridge, "type", "bridge")
        _ip("addr", "add", f"{cluster.bridge_ip}/24", "dev", cluster.bridge)
        _ip("link", "set", cluster.bridge, "up")
        _add_node(cluster, "head", 11, 0)
        for i in range(1, workers + 1):
            _add_node(cluster, f"w{i}", 11 + i, i)
        if not start:
            yield cluster
            return
        _start_services(cluster)
        # Like cluster hosts with an instance role: S3 credentials and endpoint in every node's env.
        node_env = cluster.env()
        _ray_start(cluster, cluster.head, node_env, head_cpus)
        _wait_http(f"{cluster.dashboard_url}/api/version", 180, "Ray dashboard")
        for i in range(1, workers + 1):
            _ray_start(cluster, cluster.nodes[f"w{i}"], node_env, worker_cpus)
        wait_for_nodes(cluster, workers + 1)
        yield cluster
    finally:
        problems = teardown(cluster)
        if problems:
            print(f"netns cluster teardown left: {problems}", file=sys.stderr)
