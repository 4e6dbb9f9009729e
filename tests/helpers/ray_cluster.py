"""One real Ray head per test session, started with `ray start --head` on 127.0.0.1.

Tests connect to it in-process (`ray.init(address=...)`), run `jobs/*.py` as subprocesses with
RAY_ADDRESS pointing at it, and submit jobs to its dashboard. Token authentication is disabled
on this loopback-only head (Ray 2.60 enables it by default; see README for the secure default).

Loopback only: `ray start --node-ip-address=127.0.0.1` alone is not enough. Ray replaces a
localhost node address by the machine's outward one (`resolve_ip_for_localhost` calls
`get_node_ip_address`, which asks the routing table), so the GCS, raylet, agents and workers
would listen on that interface. With RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 the lookup answers
127.0.0.1 (the single-machine mode Ray uses on macOS and Windows), for the head and for every
driver that joins it; tests/infra/test_ray_loopback.py checks the listening sockets.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.ports import free_port, wait_for_port

# Keeps every Ray process of a single-machine cluster on 127.0.0.1 (see the module docstring).
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


@dataclass(frozen=True)
class RayHead:
    gcs_address: str
    dashboard_url: str
    temp_dir: Path

    def env(self) -> dict[str, str]:
        """Environment for a subprocess that should use this head as its cluster."""
        return {**os.environ, **LOOPBACK_ENV, "RAY_ADDRESS": self.gcs_address, "RAY_AUTH_MODE": "disabled"}


def start_head(num_cpus: int = 4, extra_env: dict[str, str] | None = None) -> RayHead:
    temp_dir = Path(tempfile.mkdtemp(prefix="scrutineer-ray-"))
    gcs_port, dash_port = free_port(), free_port()
    # Every port a head opens, chosen free: defaults (agent 52365, client 10001, ...) collide
    # with any other Ray on the machine and silently disable the job agent.
    ports = {
        "--dashboard-agent-listen-port": free_port(),
        "--dashboard-agent-grpc-port": free_port(),
        "--metrics-export-port": free_port(),
        "--runtime-env-agent-port": free_port(),
        "--ray-client-server-port": free_port(),
        "--node-manager-port": free_port(),
        "--object-manager-port": free_port(),
    }
    env = {**os.environ, **(extra_env or {}), **LOOPBACK_ENV, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    subprocess.run(
        [
            "ray", "start", "--head",
            "--node-ip-address=127.0.0.1",
            f"--port={gcs_port}",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={dash_port}",
            f"--num-cpus={num_cpus}",
            f"--temp-dir={temp_dir}",
            "--include-dashboard=true",
            "--disable-usage-stats",
            *(f"{flag}={port}" for flag, port in ports.items()),
        ],
        check=True, env=env, capture_output=True, timeout=180,
    )  # fmt: skip
    wait_for_port(dash_port, timeout=120)
    return RayHead(f"127.0.0.1:{gcs_port}", f"http://127.0.0.1:{dash_port}", temp_dir)


def stop_head(head: RayHead) -> None:
    """Stop this head only. (`ray stop` would stop every Ray on the machine, other sessions' too.)
    Every process of the head carries its temp dir in its arguments; workers die with the raylet."""
    for signal_name, wait_s in (("TERM", 5.0), ("KILL", 1.0)):
        subprocess.run(["pkill", f"-{signal_name}", "-f", str(head.temp_dir)], capture_output=True, timeout=30)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and _alive(head):
            time.sleep(0.2)
    shutil.rmtree(head.temp_dir, ignore_errors=True)


def _alive(head: RayHead) -> bool:
    return bool(head_processes(head))


def head_processes(head: RayHead) -> dict[int, str]:
    """pid -> name of the live processes of this head (GCS, raylet, dashboard, agents, workers):
    those whose command line carries its unique temp dir."""
    return processes_carrying(str(head.temp_dir))


def processes_carrying(text: str) -> dict[int, str]:
    """pid -> name of the live processes whose command line contains `text`. Read from /proc (Linux)."""
    marker = text.encode()
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if marker in (proc / "cmdline").read_bytes():
                found[int(proc.name)] = (proc / "comm").read_text().strip()
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def _listening_inodes() -> dict[str, tuple[str, int]]:
    """socket inode -> (local address, port) of every listening TCP socket, from /proc/net/tcp{,6}."""
    sockets = {}
    for table, width in (("tcp", 4), ("tcp6", 16)):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A":  # TCP_LISTEN
                continue
            hex_ip, hex_port = fields[1].split(":")
            raw = bytes.fromhex(hex_ip)
            # /proc prints the address as host-order 32-bit words
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, width, 4))
            sockets[fields[9]] = (str(ipaddress.ip_address(raw)), int(hex_port, 16))
    return sockets


def listening_sockets(head: RayHead) -> list[tuple[str, str, int]]:
    """(process name, local address, port) of every TCP socket this head's processes listen on."""
    return sockets_of(head_processes(head))


def sockets_of(processes: dict[int, str]) -> list[tuple[str, str, int]]:
    """(process name, local address, port) of every TCP socket these processes listen on."""
    inodes = _listening_inodes()
    sockets = []
    for pid, name in processes.items():
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:
            continue
        for link in links:
            if link.startswith("socket:[") and (inode := link[8:-1]) in inodes:
                sockets.append((name, *inodes[inode]))
    return sockets


def is_loopback_only(address: str) -> bool:
    """127.0.0.1, or the same as an IPv4-mapped IPv6 address (gRPC prints ::ffff:127.0.0.1)."""
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    return str(mapped or ip) == "127.0.0.1"
