"""Check storage, tracking and the cluster before any work, each within a timeout.

Every check returns None when fine, else one line naming what failed and how to fix it; the
entry point prints it and exits 2. Without these a missing bucket or a dead tracking server
showed up as a traceback, after every shard had failed or after all the work was done.

- storage: a probe object written and deleted under the storage root, from the driver and from a
  Ray worker (a head without the AWS variables fails every shard while the driver writes fine);
- tracking: http(s) servers answer `GET /health` (or the MLflow REST API) within a few seconds;
  sqlite and file stores need a writable folder.
"""

from __future__ import annotations

import base64
import concurrent.futures
import os
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

from storage.filesystem import StorageAccessError, probe_storage
from storage.redaction import redact_text

#: MLflow's HTTP client retries a dead server for minutes by default (7 retries, backoff factor 2,
#: 120 s timeout). A run that already checked the server needs a few quick tries, no more.
MLFLOW_QUICK_RETRIES = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "20",
}


def quick_mlflow_retries() -> None:
    """Bound MLflow's retries (a user's own settings win)."""
    for name, value in MLFLOW_QUICK_RETRIES.items():
        os.environ.setdefault(name, value)


def check_storage(uri: str, timeout_s: float = 30.0) -> str | None:
    """Can this process write (and delete) under the storage root?"""
    return _within(timeout_s, f"storage {redact_text(uri)}", _storage_problem, uri)


def check_storage_from_worker(uri: str, timeout_s: float = 60.0) -> str | None:
    """Can a Ray worker write under the storage root? Call after `ray.init`.

    Workers run with their node's environment, not the driver's: AWS variables set only where the
    driver runs leave every shard failing."""
    import ray

    task = ray.remote(num_cpus=0, max_retries=0)(_storage_problem)
    try:
        problem = ray.get(task.remote(uri), timeout=timeout_s)
    except ray.exceptions.GetTimeoutError:
        return f"storage {redact_text(uri)}: a Ray worker's probe write did not finish in {timeout_s:.0f}s; " \
               "check that the cluster's nodes can reach the storage endpoint"  # fmt: skip
    if problem is None:
        return None
    return (f"{problem} (seen from a Ray worker; this machine can write there: give every Ray node the same "
            "AWS variables or instance role)")  # fmt: skip


def _storage_problem(uri: str) -> str | None:
    try:
        probe_storage(uri)
    except StorageAccessError as exc:
        return f"storage {redact_text(uri)}: {exc.reason}; {exc.hint}"
    except Exception as exc:  # unavailable, or anything else the probe hit
        return f"storage {redact_text(uri)} cannot be written: {exc}; start it, or fix --storage / AWS_ENDPOINT_URL"
    return None


def check_tracking(uri: str | None, timeout_s: float = 5.0) -> str | None:
    """Does the tracking store answer (http) or can it be written (sqlite, file)?"""
    if not uri or uri.lower() == "none":
        return None
    parsed = urlparse(uri)
    if parsed.scheme in ("http", "https"):
        return _within(timeout_s + 2, f"tracking server {redact_text(uri)}", _http_problem, uri, timeout_s)
    if parsed.scheme == "sqlite":
        return _folder_problem(Path(uri.removeprefix("sqlite:///")).parent, uri)  # sqlite:////abs or sqlite:///rel
    if parsed.scheme in ("", "file"):
        return _folder_problem(Path(parsed.path or uri), uri)
    return None  # databricks, postgresql, ...: MLflow's own client checks those


def _http_problem(uri: str, timeout_s: float) -> str | None:
    shown = redact_text(uri)
    base = uri.rstrip("/")
    headers = _auth_headers()
    status = None
    for path in ("/health", "/api/2.0/mlflow/experiments/search?max_results=1"):
        request = urllib.request.Request(base + path, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - http(s) only
                if response.status < 400:
                    return None
        except urllib.error.HTTPError as exc:
            status = exc.code
            if exc.code in (401, 403):
                return (f"tracking server {shown} refused the request (HTTP {exc.code}): set MLFLOW_TRACKING_TOKEN "
                        "or MLFLOW_TRACKING_USERNAME/MLFLOW_TRACKING_PASSWORD, or pass --tracking-uri none")  # fmt: skip
            continue
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            return (f"tracking server {shown} is unreachable ({reason}): start it (mlflow server ...), fix --tracking-uri "
                    "/ MLFLOW_TRACKING_URI, or pass --tracking-uri none to run without tracking")  # fmt: skip
    return (f"tracking server {shown} answered HTTP {status} and does not look like an MLflow server: fix "
            "--tracking-uri, or pass --tracking-uri none")  # fmt: skip


def _auth_headers() -> dict[str, str]:
    if os.environ.get("MLFLOW_TRACKING_TOKEN"):
        return {"Authorization": f"Bearer {os.environ['MLFLOW_TRACKING_TOKEN']}"}
    user, password = os.environ.get("MLFLOW_TRACKING_USERNAME"), os.environ.get("MLFLOW_TRACKING_PASSWORD")
    if user and password:
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}
    return {}


def _folder_problem(folder: Path, uri: str) -> str | None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".scrutineer-probe-{os.getpid()}"
        probe.write_bytes(b"probe")
        probe.unlink()
    except OSError as exc:
        return (f"tracking store {redact_text(uri)}: cannot write to {folder} ({exc.strerror or exc}): choose a writable "
                "--tracking-uri, or pass --tracking-uri none")  # fmt: skip
    return None


def _within(timeout_s: float, what: str, fn, *args) -> str | None:
    """`fn(*args)`, or a line saying it did not answer in time (the thread is left to finish)."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(fn, *args).result(timeout=timeout_s)
    except concurrent.futures.TimeoutError:
        return f"{what} did not answer in {timeout_s:.0f}s: check that it runs and is reachable from here"
    finally:
        pool.shutdown(wait=False)
