"""`jobs/llm_replay_server.py` started on 127.0.0.1 for a test, and its request counters."""

from __future__ import annotations

import json
import os
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
def replay_server(*args: str, recordings: list[dict[str, Any]] | None = None, tmp: Path | None = None,
                  host: str = "127.0.0.1", priority: int | None = None) -> Iterator[str]:  # fmt: skip
    """Start the replay server on `host` (127.0.0.1, or a bridge address that network-namespace
    hosts reach); yield its base URL (`http://<host>:<port>`). `priority`: its nice value (see
    `tests.helpers.bib_server.start_bib_server`)."""
    port = free_port()  # free on 127.0.0.1; a port the machine hands out is as free on the bridge
    command = [sys.executable, "-m", "jobs.llm_replay_server", "serve", "--host", host, "--port", str(port), *args]
    if recordings is not None:
        assert tmp is not None
        path = tmp / f"recording-{port}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in recordings))
        command += ["--recording", str(path)]
    nice = None if priority is None else (lambda: os.setpriority(os.PRIO_PROCESS, 0, priority))
    proc = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=nice)
    try:
        wait_for_port(port, timeout=30, host=host)
        yield f"http://{host}:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # test addresses never go via a proxy


def server_stats(url: str) -> dict[str, Any]:
    with _OPENER.open(f"{url}/stats", timeout=5) as response:
        return json.loads(response.read())


def server_times(url: str) -> dict[str, list[float]]:
    """Wall-clock times of answers (`ok`) and of rate-limit 429s (`rate_limited`), and the
    prompts (messages hashes) answered more than once (`paid_twice_prompts`)."""
    with _OPENER.open(f"{url}/stats/times", timeout=10) as response:
        return json.loads(response.read())


def reset_stats(url: str) -> None:
    """Forget what was served (counters, times, paid prompts); recordings and faults stay."""
    request = urllib.request.Request(f"{url}/stats/reset", data=b"{}", method="POST")
    with _OPENER.open(request, timeout=10) as response:
        response.read()
