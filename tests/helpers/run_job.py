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


def run_job_in_process(script: str, *args: str, cwd: Path, monkeypatch, env: dict[str, str] | None = None,
                       unset: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """`jobs/<script>`'s `main(argv)` in this process, for what is decided before any Ray or server
    starts (argument and config errors, --list-systems): seconds saved per call, and the unit tier's
    guard fails the test if the job starts a process after all.

    The job runs in `cwd` with `env` set and `unset` removed; the environment (which the job may
    extend, e.g. MLflow's retry settings) and the registered secrets are restored afterwards.
    Returns what `run_job` returns: exit status, stdout, stderr."""
    import contextlib
    import importlib
    import io
    import os
    from unittest import mock

    from storage import redaction

    main = importlib.import_module(f"jobs.{Path(script).stem}").main
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(redaction, "_registered", set(redaction._registered))  # registrations end with the test
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ, env or {}), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        for name in unset:
            os.environ.pop(name, None)
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse: --help exits 0, a usage error exits 2
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, int | None):
                print(exc.code, file=sys.stderr)
    return subprocess.CompletedProcess([script, *args], code, out.getvalue(), err.getvalue())


def run_corpus_on_head(ray_head, monkeypatch, argv: list[str], cwd: Path) -> int:
    """`jobs/run_corpus.main(argv)` in this process as a driver of the session's Ray head (the head's
    RAY_/AWS_ environment, `RAY_ADDRESS`), for end-to-end runs without a subprocess's start-up.

    The driver connects and disconnects Ray itself; a test process that was connected before (the
    session-scoped `ray_session`) is connected again afterwards, so later tests keep their Ray."""
    import ray

    from jobs.run_corpus import main

    was_connected = ray.is_initialized()
    ray.shutdown()
    try:
        # the job's folder and environment only while it runs: a driver connected from `cwd` would give
        # the head's workers that folder, not the repository, as their import path for later tests
        with monkeypatch.context() as patch:
            patch.chdir(cwd)
            for key, value in ray_head.env().items():
                if key.startswith("RAY_") or key.startswith("AWS_"):
                    patch.setenv(key, value)
            patch.setenv("RAY_ADDRESS", ray_head.gcs_address)
            return main(argv)
    finally:
        ray.shutdown()
        if was_connected:
            ray.init(address=ray_head.gcs_address, logging_level="ERROR", log_to_driver=False)
