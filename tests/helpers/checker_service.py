"""Deploy the checker service the way a user does: `jobs/serve_checkers.py --detach` from a TOML file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import REPO_ROOT
from tests.helpers.ports import free_port, wait_for_port


def deploy_checkers(env: dict[str, str], config_path: Path) -> tuple[int, dict]:
    """Deploy on a free port of the session's cluster; returns the port and the announcement line."""
    port = free_port()
    done = subprocess.run([sys.executable, "jobs/serve_checkers.py", "--config", str(config_path), "--port", str(port),
                           "--detach"], env=env, cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    announced = json.loads(done.stdout.strip().splitlines()[-1])
    wait_for_port(port, timeout=120)
    return port, announced
