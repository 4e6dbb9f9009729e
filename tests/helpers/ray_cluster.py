"""One real Ray head per test session, started with `ray start --head` on 127.0.0.1.

Tests connect to it in-process (`ray.init(address=...)`), run `jobs/*.py` as subprocesses with
RAY_ADDRESS pointing at it, and submit jobs to its dashboard. Token authentication is disabled
on this loopback-only head (Ray 2.60 enables it by default; see README for the secure default).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
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


def start_head(num_cpus: int = 4) -> RayHead:
    temp_dir = Path(tempfile.mkdtemp(prefix="scrutineer-ray-"))
    gcs_port, dash_port = free_port(), free_port()
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
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
        ],
        check=True, env=env, capture_output=True, timeout=180,
    )  # fmt: skip
    wait_for_port(dash_port, timeout=120)
    return RayHead(f"127.0.0.1:{gcs_port}", f"http://127.0.0.1:{dash_port}", temp_dir)


def stop_head(head: RayHead) -> None:
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    subprocess.run(["ray", "stop", "--force"], env=env, capture_output=True, timeout=120)
