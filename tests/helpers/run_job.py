"""Run `jobs/*.py` as a user would: a subprocess, against the session's Ray head."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import REPO_ROOT


def run_job(script: str, *args: str, cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            [sys.executable, str(REPO_ROOT / "jobs" / script), *args],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:  # show what it was doing
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = (exc.stderr or b"").decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        raise AssertionError(f"{script} {' '.join(args)} timed out after {timeout}s\n{out[-3000:]}\n{err[-3000:]}") from exc


def submit_job(dashboard_url: str, config: Path, runtime_env_json: str, env: dict[str, str],
               timeout: float = 900, attempts: int = 30) -> subprocess.CompletedProcess:
    """`ray job submit --working-dir <repo> -- python jobs/run_corpus.py --config CONFIG`, as the README
    says; retried while the head's job agent is still coming up after its dashboard."""
    import time

    for _ in range(attempts):
        submitted = subprocess.run(
            ["ray", "job", "submit", "--address", dashboard_url, "--working-dir", str(REPO_ROOT),
             "--runtime-env-json", runtime_env_json, "--", "python", "jobs/run_corpus.py", "--config", str(config)],
            capture_output=True, text=True, timeout=timeout, env=env,
        )  # fmt: skip
        if "No available agent to submit job" not in submitted.stderr:
            break
        time.sleep(2)
    return submitted
