"""`jobs/llm_replay_server.py` started on 127.0.0.1 for a test, and its request counters."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.helpers.paths import REPO_ROOT
from tests.helpers.ports import free_port, wait_for_port


@contextmanager
def replay_server(*args: str, recordings: list[dict[str, Any]] | None = None, tmp: Path | None = None) -> Iterator[str]:
    """Start the replay server on 127.0.0.1; yield its base URL (`http://127.0.0.1:<port>`)."""
    port = free_port()
    command = [sys.executable, "-m", "jobs.llm_replay_server", "serve", "--port", str(port), *args]
    if recordings is not None:
        assert tmp is not None
        path = tmp / f"recording-{port}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in recordings))
        command += ["--recording", str(path)]
    proc = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(port, timeout=30)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def server_stats(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/stats", timeout=5) as response:
        return json.loads(response.read())
