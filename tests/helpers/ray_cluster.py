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

import contextlib
import ipaddress
import os
import shutil
import signal
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
    session_id: int  # `ray start` ran in a session of its own: every process of the head is in it

    def env(self) -> dict[str, str]:
        """Environment for a subprocess that should use this head as its cluster."""
        return {**os.environ, **LOOPBACK_ENV, "RAY_ADDRESS": self.gcs_address, "RAY_AUTH_MODE": "disabled"}


def start_head(num_cpus: int = 4, extra_env: dict[str, str] | None = None, attempts: int = 3) -> RayHead:
    """A head on fresh ports. Ray gives its raylet a fixed 30 s to register, which a loaded 2-core
    machine can miss: such a start is cleaned up and tried again; any other failure is raised."""
    for attempt in range(1, attempts + 1):
        try:
            return _start_head_once(num_cpus, extra_env)
        except RuntimeError as exc:
            if "timed out during startup" not in str(exc) or attempt == attempts:
                raise
    raise AssertionError("unreachable")


def _start_head_once(num_cpus: int, extra_env: dict[str, str] | None) -> RayHead:
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
    # A session of its own, so that stopping the head finds every process it started, renamed or not.
    start = subprocess.Popen(
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
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    head = RayHead(f"127.0.0.1:{gcs_port}", f"http://127.0.0.1:{dash_port}", temp_dir, start.pid)
    try:
        output, _ = start.communicate(timeout=180)
        if start.returncode != 0:
            raise RuntimeError(f"ray start failed ({start.returncode}):\n{output.decode(errors='replace')[-3000:]}")
        wait_for_port(dash_port, timeout=120)
    except BaseException:
        stop_head(head)  # a head that half started leaves nothing running
        raise
    return head


def stop_head(head: RayHead) -> None:
    """Stop this head only. (`ray stop` would stop every Ray on the machine, other sessions' too.)
    Every process of the head is in its session (the agents rename themselves and the client
    server's command line does not carry the temp dir, so matching command lines missed them)."""
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        for pid in head_processes(head):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and head_processes(head):
            time.sleep(0.2)
    shutil.rmtree(head.temp_dir, ignore_errors=True)


def head_processes(head: RayHead) -> dict[int, str]:
    """pid -> name of the live processes of this head (GCS, raylet, dashboard, agents, client server,
    workers): its session's, and any whose command line carries its unique temp dir."""
    return session_members(head.session_id) | processes_carrying(str(head.temp_dir))


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


def _process_table() -> dict[int, tuple[str, int, int]]:
    """pid -> (name, parent pid, session id) of every live process (zombies left out). From /proc."""
    table = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        # "pid (comm) state ppid pgrp session ...": comm may hold spaces and ")", so split at the last ")"
        comm, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        if rest[0] != "Z":  # a zombie has exited already
            table[int(proc.name)] = (comm, int(rest[1]), int(rest[3]))
    return table


def descendants(pid: int) -> dict[int, str]:
    """pid -> name of `pid` and every live process below it (children, their children, ...)."""
    table = _process_table()
    found, frontier = {}, [pid]
    while frontier:
        current = frontier.pop()
        if current in table and current not in found:
            found[current] = table[current][0]
            frontier += [child for child, (_, parent, _) in table.items() if parent == current]
    return found


def session_members(session_id: int) -> dict[int, str]:
    """pid -> name of the live processes of a session: what a process started with setsid (or
    start_new_session) and everything it started have in common, even once they are orphaned.
    Unlike the command line, Ray's agents rename themselves (ray::DashboardAgent)."""
    return {pid: name for pid, (name, _, session) in _process_table().items() if session == session_id}


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
