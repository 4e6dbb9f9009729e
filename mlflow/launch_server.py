"""Start an MLflow tracking server for scrutineer runs (sqlite or Postgres backend, artifacts local or on S3).

This folder has no __init__.py on purpose: a package named `mlflow` would shadow the real one.

    python mlflow/launch_server.py --backend sqlite:///mlflow-server/mlflow.db --artifacts s3://bucket/mlflow
    python mlflow/launch_server.py --backend postgresql://user@127.0.0.1/mlflow --port 5000

S3 credentials and endpoint (AWS_ENDPOINT_URL / MLFLOW_S3_ENDPOINT_URL for MinIO or moto) come from
the environment. The server runs without MLflow's job runner (7 extra processes, ~3 GB) and with
one worker, which is plenty for run tracking.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import urllib.request


def build_command(args: argparse.Namespace) -> list[str]:
    return [
        sys.executable, "-m", "mlflow", "server",
        "--host", args.host, "--port", str(args.port),
        "--backend-store-uri", args.backend,
        "--artifacts-destination", args.artifacts,
        "--serve-artifacts",
        "--workers", str(args.workers),
        *(["--allowed-hosts", args.allowed_hosts] if args.allowed_hosts else []),
    ]  # fmt: skip


def server_env() -> dict[str, str]:
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_DISABLE_TELEMETRY": "true"}
    if env.get("AWS_ENDPOINT_URL") and not env.get("MLFLOW_S3_ENDPOINT_URL"):
        env["MLFLOW_S3_ENDPOINT_URL"] = env["AWS_ENDPOINT_URL"]
    return env


def wait_healthy(url: str, timeout_s: float, proc: subprocess.Popen | None = None) -> bool:
    """Whether the server answers /health within `timeout_s`; False at once if it has exited."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and (proc is None or proc.poll() is None):
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return True
        except OSError:
            time.sleep(0.3)
    return False


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="sqlite:///mlflow-server/mlflow.db", help="backend store URI (sqlite:/// or postgresql://)")
    p.add_argument("--artifacts", default="./mlflow-server/artifacts", help="artifact destination (path or s3://bucket/prefix)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default loopback only)")
    p.add_argument("--port", type=int, default=5000)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--allowed-hosts", help="Host headers the server accepts besides localhost and private IPs "
                   "(comma-separated), e.g. its Kubernetes service name; MLflow answers others 403")
    p.add_argument("--detach", action="store_true", help="start in the background, wait until healthy, print the PID")
    p.add_argument("--health-timeout", type=float, default=240.0,
                   help="with --detach: seconds to wait for the server to answer /health (a first start creates the "
                        "database tables, which takes minutes on a busy 2-core machine; default 240)")
    args = p.parse_args()
    if args.backend.startswith("sqlite:///"):
        os.makedirs(os.path.dirname(args.backend.removeprefix("sqlite:///")) or ".", exist_ok=True)
    command = build_command(args)
    if not args.detach:
        return subprocess.call(command, env=server_env())
    proc = subprocess.Popen(command, env=server_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://{args.host}:{args.port}"
    if not wait_healthy(url, args.health_timeout, proc):
        proc.terminate()
        state = f"exited with status {proc.returncode}" if proc.poll() is not None else \
            f"did not answer within {args.health_timeout:g} s"
        print(f"MLflow server did not become healthy at {url}: it {state}", file=sys.stderr)
        return 1
    print(proc.pid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
