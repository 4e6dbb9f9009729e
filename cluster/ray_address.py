"""Where a driver's Ray is: one place for every job (`run_corpus.py`, `serve_checkers.py`).

Users meet two Ray addresses: the GCS address (`host:6379`, what `ray.init` takes) and the
dashboard URL (`http://host:8265`, what `ray job submit` takes, and what
`.dev-services/env.sh` exports as RAY_ADDRESS). A driver given the dashboard URL asks the
dashboard for the GCS address. An address that does not answer fails within seconds with a
message, never a traceback or a hang: every mistake here is a configuration mistake (exit 2).

Imports nothing heavy: `ray` is imported only by `init_ray`.

A new local Ray (no address given) is this process's alone: every one of its processes listens on
127.0.0.1 only, and its temp dir (sockets, logs, session files) is a fresh folder removed when the
process exits, not a session left under /tmp/ray by every run.
"""

from __future__ import annotations

import atexit
import ipaddress
import json
import os
import shutil
import socket
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

CONNECT_TIMEOUT_S = 3.0
SUBMITTED_JOB_ENV = "RAY_JOB_CONFIG_JSON_ENV_VAR"  # set by Ray in a job's driver


class RayAddressError(ValueError):
    """The configured Ray address is wrong or unreachable (a configuration error)."""


@dataclass(frozen=True)
class RayTarget:
    """What to hand `ray.init`: `address` None means a new local Ray."""

    address: str | None
    given: str | None  # what the user gave (flag or RAY_ADDRESS), for messages
    source: str  # "--ray-address" | "RAY_ADDRESS" | "local"

    @property
    def is_local(self) -> bool:
        return self.address is None


def configured_address(flag: str | None) -> tuple[str | None, str]:
    """The address the user asked for and where it came from."""
    if flag:
        return flag.strip(), "--ray-address"
    env = os.environ.get("RAY_ADDRESS", "").strip()
    if env:
        return env, "RAY_ADDRESS"
    return None, "local"


def resolve_ray_address(flag: str | None, timeout_s: float = CONNECT_TIMEOUT_S) -> RayTarget:
    """Resolve and probe the configured address; raise `RayAddressError` with what to do."""
    given, source = configured_address(flag)
    if given is None or given == "local":
        return RayTarget(None, given, "local")
    if given == "auto":
        return RayTarget("auto", given, source)
    if given.startswith(("http://", "https://")):
        gcs = gcs_address_from_dashboard(given, source, timeout_s)
        return RayTarget(gcs, given, source)
    host_port = given.removeprefix("ray://")
    host, port = _split_host_port(host_port, given, source)
    _probe_tcp(host, port, given, source, timeout_s)
    return RayTarget(given, given, source)


def gcs_address_from_dashboard(url: str, source: str = "--ray-address", timeout_s: float = CONNECT_TIMEOUT_S) -> str:
    """The GCS address (`host:port`) of the cluster whose dashboard is at `url`.

    The dashboard answers `/api/version` (so a wrong URL is told apart from a Ray without a
    reachable GCS) but its REST API does not publish the GCS address. A dashboard on this
    machine is matched to its process, whose command line names the GCS it serves; for a remote
    one the user is asked for the GCS address."""
    base = url.rstrip("/")
    try:
        with urllib.request.urlopen(f"{base}/api/version", timeout=timeout_s) as response:
            version = json.loads(response.read().decode("utf-8", "replace"))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise RayAddressError(
            f"{source}={url}: no Ray dashboard answers there ({reason}). Start the cluster "
            "(e.g. `bash infra/dev_services.sh start`) or give the GCS address: --ray-address host:6379"
        ) from None
    if not isinstance(version, dict) or "ray_version" not in version:
        raise RayAddressError(f"{source}={url}: the server there is not a Ray dashboard (no ray_version in /api/version)")
    parts = urlsplit(base)
    gcs = _local_dashboard_gcs(parts.hostname or "", parts.port or 80)
    if not gcs:
        raise RayAddressError(
            f"{source}={url} is a Ray dashboard (the address `ray job submit` takes); a driver needs the "
            "cluster's GCS address instead: --ray-address host:6379 (shown by `ray status` on the head), "
            "or submit this command with `ray job submit --address " + url + " --working-dir . -- python ...`"
        )
    host, port = _split_host_port(gcs, url, source)
    _probe_tcp(host, port, f"{host}:{port} (GCS of the dashboard {url})", source, timeout_s)
    return f"{host}:{port}"


def _local_dashboard_gcs(host: str, port: int) -> str | None:
    """GCS address of the dashboard process on this machine listening on `port`, if any
    (read from /proc: Linux, where clusters and dev heads run)."""
    try:
        if not any(info[4][0] in _LOOPBACK or info[4][0] in _local_ips() for info in socket.getaddrinfo(host, port)):
            return None
    except OSError:
        return None
    for cmdline_file in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            cmdline = cmdline_file.read_bytes().decode("utf-8", "replace").split("\0")
        except OSError:
            continue  # the process ended, or is not ours to read
        if not any(arg.endswith("dashboard/dashboard.py") for arg in cmdline[:4]):
            continue
        flags = dict(a.removeprefix("--").split("=", 1) for a in cmdline if a.startswith("--") and "=" in a)
        if flags.get("port") == str(port) and flags.get("gcs-address"):
            return flags["gcs-address"]
    return None


_LOOPBACK = ("127.0.0.1", "::1")


def _local_ips() -> set[str]:
    try:
        return {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)}
    except OSError:
        return set()


def init_ray(target: RayTarget, job_config=None, **kwargs) -> None:
    """`ray.init` for a resolved target (a new local Ray when the target is local)."""
    import ray

    if ray.is_initialized():
        return
    if target.is_local:
        start_local_ray(job_config=job_config, **kwargs)
    else:
        ray.init(address=target.address, job_config=job_config, **kwargs)


#: Ray's single-machine mode: a localhost node address stays 127.0.0.1 instead of being replaced by
#: the machine's outward address, and then the GCS, raylet, agents and workers bind 127.0.0.1 (with
#: an outward node address they bind every interface). Ray's own processes read it when they start.
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
#: A unix socket path must fit in 107 bytes: <temp dir>/session_<date>_<pid>/sockets/plasma_store.
_SOCKET_PATH_LIMIT, _SESSION_SOCKET_CHARS = 107, len("/session_2026-12-02_00-56-41_867075_4194304/sockets/plasma_store")
_LOCAL_TEMP_PREFIX = "scrutineer-run-ray-"
#: Starts of a local Ray tried before its start-up time-out is reported.
LOCAL_START_ATTEMPTS = 3


def start_local_ray(job_config=None, **kwargs) -> str:
    """Start a Ray of this process alone, on loopback, in a temp dir removed at exit; returns that dir.

    The driver has imported ray (ray_constants read the variable) long before it knows the run is
    local, so the variable is set for Ray's children and the constant for this process. Should Ray
    still pick a non-loopback node address, token authentication stays on."""
    import ray

    node_ip = pin_local_ray_to_loopback()
    if ipaddress.ip_address(node_ip).is_loopback:
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # nothing beyond this machine can connect
    else:
        print(f"warning: Ray chose node address {node_ip}, not loopback; token authentication stays on",
              file=sys.stderr)  # fmt: skip
    include_dashboard = kwargs.pop("include_dashboard", False)
    for attempt in range(1, LOCAL_START_ATTEMPTS + 1):
        temp_dir = tempfile.mkdtemp(prefix=_LOCAL_TEMP_PREFIX, dir=_local_temp_root())
        atexit.register(_remove_local_ray, temp_dir)  # runs before Ray's own exit hook (registered at import)
        try:
            ray.init(include_dashboard=include_dashboard, job_config=job_config, _temp_dir=temp_dir, **kwargs)
            return temp_dir
        except Exception as exc:
            # Ray waits a fixed 30 s for its raylet to register; a busy 2-core machine can miss that
            # once. Another attempt on a clean temp dir costs seconds; a real fault repeats and is raised.
            if "timed out during startup" not in str(exc) or attempt == LOCAL_START_ATTEMPTS:
                raise
            print(f"[ray] the local Ray did not start within Ray's 30 s (a busy machine?); starting it again "
                  f"({attempt + 1}/{LOCAL_START_ATTEMPTS})", file=sys.stderr, flush=True)  # fmt: skip
            atexit.unregister(_remove_local_ray)
            _remove_local_ray(temp_dir)
    raise AssertionError("unreachable")


def pin_local_ray_to_loopback() -> str:
    """Make the next local `ray.init` use 127.0.0.1 as its node address; returns the address Ray
    will use. The variable is for Ray's own processes, the constant for this one (read at import)."""
    from ray._private import ray_constants, services

    os.environ.update(LOOPBACK_ENV)
    ray_constants.ENABLE_RAY_CLUSTER = False
    return services.get_node_ip_address()


def _local_temp_root() -> str:
    """TMPDIR (or the system's temp folder) when Ray's socket paths fit under it, else /tmp."""
    root = tempfile.gettempdir()
    fits = len(root) + 1 + len(_LOCAL_TEMP_PREFIX) + 8 + _SESSION_SOCKET_CHARS <= _SOCKET_PATH_LIMIT
    return root if fits else "/tmp"


def _remove_local_ray(temp_dir: str) -> None:
    """Stop the local Ray, end every process it started, then delete its temp dir (logs included: a
    run's record is in its store and MLflow, not in Ray's session files).

    `ray.shutdown` stops what it knows of; the agents and workers under the raylet exit on their
    own a little later (and may still write into the temp dir), and a `ray.init` that failed part
    way leaves its GCS and agents running. So the processes are listed first, while they are still
    in this process's tree (agents rename themselves, so the tree is what finds them)."""
    import ray

    started = _processes_under(temp_dir)
    try:
        ray.shutdown(wait_for_processes=True)
    finally:
        _end(started)
        shutil.rmtree(temp_dir, ignore_errors=True)


def _processes_under(temp_dir: str) -> set[int]:
    """This process's children whose command line names `temp_dir` (GCS, raylet, monitors), and
    everything below them. Read from /proc; empty where there is none."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended meanwhile
        parents[int(stat.parent.name)] = int(fields[1])
    marker = temp_dir.encode()
    found, frontier = set(), []
    for pid, parent in parents.items():
        try:
            if parent == os.getpid() and marker in Path(f"/proc/{pid}/cmdline").read_bytes():
                frontier.append(pid)
        except OSError:
            continue
    while frontier:
        pid = frontier.pop()
        if pid not in found:
            found.add(pid)
            frontier += [child for child, parent in parents.items() if parent == pid]
    return found


def _end(pids: set[int], grace_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after `grace_s`, to those of `pids` still running; wait until they are gone."""
    import signal
    import time

    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = {pid for pid in pids if _running(pid)}
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:  # ended meanwhile
                continue
        deadline = time.monotonic() + grace_s
        while (pids := {pid for pid in pids if _running(pid)}) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not pids:
            return


def _running(pid: int) -> bool:
    """Alive and not a zombie (a child of this process that ended waits to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def in_submitted_job() -> bool:
    return SUBMITTED_JOB_ENV in os.environ


def _split_host_port(address: str, given: str, source: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise RayAddressError(
            f"{source}={given}: not a Ray address; use host:port (GCS, e.g. 127.0.0.1:6379), "
            "http://host:8265 (dashboard) or 'auto'"
        )
    return host.strip("[]"), int(port)


def _probe_tcp(host: str, port: int, what: str, source: str, timeout_s: float) -> None:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return
    except OSError as exc:
        raise RayAddressError(
            f"{source}={what}: nothing answers at {host}:{port} ({exc.strerror or type(exc).__name__}); "
            "is the cluster running? (`ray status`, or unset RAY_ADDRESS to start a local Ray)"
        ) from None
