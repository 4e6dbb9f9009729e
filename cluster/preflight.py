"""Check storage, tracking and the cluster before any work, each within a timeout.

Every check returns None when fine, else one line naming what failed and how to fix it; the
entry point prints it and exits 2. Without these a missing bucket or a dead tracking server
showed up as a traceback, after every shard had failed or after all the work was done.

- storage: a probe object written and deleted under the storage root, from the driver and from a
  Ray worker (a head without the AWS variables fails every shard while the driver writes fine);
- tracking: http(s) servers answer `GET /health` (or the MLflow REST API) within a few seconds;
  sqlite and file stores need a writable folder. A URI with `user:pass@` is asked with those
  credentials as Basic auth (its password is registered with the redactor, never printed);
- model keys: every configured model's key (`api_key_env`, or the provider's own variable) is
  present on every Ray node, checked by a task there: the driver's environment is not the
  workers', and a key missing there is an auth failure of every item, never an outage.
"""

from __future__ import annotations

import base64
import concurrent.futures
import os
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from storage.filesystem import StorageAccessError, probe_storage
from storage.redaction import redact_text, register_environment_secrets, register_secret, register_secret_env

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
    base, userinfo_auth = _without_userinfo(uri)
    headers = userinfo_auth or _auth_headers()
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


def _without_userinfo(uri: str) -> tuple[str, dict[str, str]]:
    """(`uri` without `user:pass@`, its Basic auth header): urllib cannot open a URL carrying
    userinfo (it reads `user:pass@host` as a host with a port), MLflow's client sends it as Basic."""
    parsed = urlparse(uri)
    base = uri.rstrip("/")
    if parsed.username is None and parsed.password is None:
        return base, {}
    user, password = unquote(parsed.username or ""), unquote(parsed.password or "")
    register_secret(password, parsed.password)  # whatever quotes it later (an MLflow error) loses it
    netloc = parsed.hostname or ""
    if ":" in netloc:  # an IPv6 literal
        netloc = f"[{netloc}]"
    if parsed.port is not None:
        netloc += f":{parsed.port}"
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return parsed._replace(netloc=netloc).geturl().rstrip("/"), {"Authorization": f"Basic {token}"}


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


@dataclass(frozen=True)
class KeyNeed:
    """A model a configured system calls, and where its key comes from."""

    who: str
    """The system's label, as the config names it."""
    model: str
    api_key_env: str | None = None
    api_base: str | None = None


def key_needs(systems: Iterable[tuple[str, Mapping[str, Any]]]) -> list[KeyNeed]:
    """The models `(label, args)` of configured systems call (systems with a `model` argument)."""
    needs = []
    for who, args in systems:
        model = args.get("model")
        if isinstance(model, str) and model:
            key_env, base = args.get("api_key_env"), args.get("api_base")
            needs.append(KeyNeed(who, model, key_env if isinstance(key_env, str) else None,
                                 base if isinstance(base, str) else None))  # fmt: skip
    return needs


def register_keys(needs: list[KeyNeed]) -> None:
    """Mask the models' keys (and every secret-named variable) in whatever this process stores or
    prints: a provider's error text echoing a key reaches the driver's summary, reports and MLflow."""
    register_secret_env(*(n.api_key_env for n in needs))
    register_environment_secrets()


def key_problems_here(needs: list[KeyNeed]) -> list[str]:
    """One line per model whose key this process's environment lacks (names only, never values)."""
    from clients.llm_litellm import missing_key_reasons

    return [f"system '{n.who}' (model {n.model}): {reason}"
            for n in needs for reason in missing_key_reasons(n.model, n.api_key_env, n.api_base)]  # fmt: skip


def check_keys_from_workers(needs: list[KeyNeed], timeout_s: float = 60.0) -> str | None:
    """Does every alive Ray node that can run work have each model's key? Call after `ray.init`."""
    if not needs:
        return None
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(num_cpus=0, max_retries=0)(key_problems_here)
    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU")]
    refs = [task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(needs)
            for n in nodes] or [task.remote(needs)]  # fmt: skip
    try:
        answers = ray.get(refs, timeout=timeout_s)
    except ray.exceptions.GetTimeoutError:
        return f"model keys: a Ray worker's check did not finish in {timeout_s:.0f}s; check that the cluster's nodes run tasks"
    problems = sorted({p for answer in answers for p in answer})
    if not problems:
        return None
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return (f"{problems[0]} on the Ray workers{more}: every item would fail authentication there; set the "
            "variable on every Ray node (or in the job's runtime_env env_vars), or fix api_key_env")  # fmt: skip
