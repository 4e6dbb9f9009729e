"""One real Ray head per test session, started with `ray start --head` on 127.0.0.1.

Tests connect to it in-process (`ray.init(address=...)`), run `jobs/*.py` as subprocesses with
RAY_ADDRESS pointing at it, and submit jobs to its dashboard. Token authentication is disabled
on this loopback-only head (Ray 2.60 enables it by default; see README for the secure default).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.ports import free_port, wait_for_port


@dataclass(frozen=True)
class RayHead:
    gcs_address: str
    dashboard_url: str
    temp_dir: Path

    def env(self) -> dict[str, str]:
        """Environment for a subprocess that should use this head as its cluster."""
        return {**os.environ, "RAY_ADDRESS": self.gcs_address, "RAY_AUTH_MODE": "disabled"}


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
    env = {**os.environ, **(extra_env or {}), "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
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
    return subprocess.run(["pgrep", "-f", str(head.temp_dir)], capture_output=True).returncode == 0
