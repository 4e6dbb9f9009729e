"""Start the checkers Ray Serve application (wiring only; see checkers/service.py).

    python jobs/serve_checkers.py --config configs/checkers.toml      # blocks until Ctrl-C
    python jobs/serve_checkers.py --port 8123 --replicas 2 --detach   # deploy on a running cluster and return

Connects to the Ray cluster in --ray-address or RAY_ADDRESS (a GCS address host:6379 or the
dashboard URL http://host:8265), or starts a local one, starts Serve's HTTP proxy on the
configured host (127.0.0.1 by default) and port, and deploys the app. --detach needs a running
cluster: the app lives in the cluster, and a local Ray started here would stop with this process.
On a remote cluster, submit it as a job so replicas get the code: `ray job submit --working-dir .
-- python jobs/serve_checkers.py --detach`. A detached app outlives this process; `serve shutdown`
stops it. Without --detach, Ctrl-C or SIGTERM deletes this app (other apps on the cluster keep
running), prints one line and exits 0. Settings come from the `[checkers]` table of the TOML file (configs/checkers.toml
documents every option); command-line flags override single values.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cluster.ray_address import RayAddressError, in_submitted_job, init_ray, resolve_ray_address  # noqa: E402

EXIT_BAD_INPUT = 2


class Stopped(BaseException):
    """SIGTERM or SIGINT arrived: stop serving (BaseException, so no handler on the way swallows it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signal_name = signal.Signals(signum).name


def _raise_stopped(signum: int, frame: object) -> None:
    raise Stopped(signum)


def _stop_on_signals() -> None:
    # ray.init installs its own SIGTERM handler (sys.exit(15)); ours is set after it, and before.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _raise_stopped)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="exit status: 0 deployed (and, without --detach, stopped by Ctrl-C); "
                                     "2 bad config, unreachable Ray address or --detach without a running cluster")  # fmt: skip
    parser.add_argument("--config", help="TOML file with a [checkers] table (e.g. configs/checkers.toml)")
    parser.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="HTTP port (default 8000)")
    parser.add_argument("--replicas", type=int, help="fixed replica count")
    parser.add_argument("--ray-address", help="Ray GCS address host:port or dashboard URL http://host:8265 "
                        "(default: RAY_ADDRESS, else a new local Ray)")  # fmt: skip
    parser.add_argument("--detach", action="store_true",
                        help="return after deploying instead of blocking (needs a running cluster)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.config and not Path(args.config).is_file():
        print(f"error: config file not found: {args.config} (the bundled one is configs/checkers.toml)", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        target = resolve_ray_address(args.ray_address)
    except RayAddressError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.detach and target.is_local and not in_submitted_job():
        print("error: --detach needs a running Ray cluster (set RAY_ADDRESS or --ray-address; start one with "
              "`ray start --head` or `bash infra/dev_services.sh start`): a local Ray started here would stop, "
              "and the app with it, as soon as this command returns", file=sys.stderr)  # fmt: skip
        return EXIT_BAD_INPUT

    import tomllib

    from checkers.service import ServiceConfig, start

    try:
        config = ServiceConfig.from_toml(args.config) if args.config else ServiceConfig()
    except (tomllib.TOMLDecodeError, TypeError, ValueError) as exc:
        print(f"error: {args.config}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if config.extra:
        print(f"error: {args.config}: unknown [checkers] options {sorted(config.extra)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    overrides = {
        k: v for k, v in {"host": args.host, "port": args.port, "num_replicas": args.replicas}.items() if v
    }
    config = dataclasses.replace(config, **overrides)

    try:
        _stop_on_signals()
        init_ray(target, logging_level="ERROR")
        _stop_on_signals()
        start(config)
        url = f"http://{config.host}:{config.port}{config.route_prefix}"
        print(json.dumps({"app": config.app_name, "url": url, "replicas": config.num_replicas,
                          "autoscaling": dataclasses.asdict(config.autoscaling) if config.autoscaling else None}), flush=True)  # fmt: skip
        if args.detach:
            return 0
        while True:
            time.sleep(3600)
    except Stopped as stop:
        for signum in (signal.SIGTERM, signal.SIGINT):  # a second signal must not interrupt the cleanup
            signal.signal(signum, signal.SIG_IGN)
        print(f"stopped by {stop.signal_name}: {_delete_app(config.app_name)}", flush=True)
        return 0


#: Seconds to wait for Serve to delete the app on a stop signal.
DELETE_WAIT_S = 15.0


def _delete_app(app_name: str) -> str:
    """Delete only this app (Serve's proxy and other apps on a shared cluster keep running)."""
    import ray
    from ray import serve

    if not ray.is_initialized():
        return f"app {app_name!r} was not deployed"
    outcome: list[str] = []

    def delete() -> None:
        try:
            serve.delete(app_name)
            outcome.append(f"app {app_name!r} deleted")
        except Exception as exc:  # Ray itself stopping: say so in the one line, no stack dump
            outcome.append(f"app {app_name!r} not deleted ({type(exc).__name__})")

    # A signal sent to the whole process group stops a local Ray's own processes too, and then
    # serve.delete waits forever on a controller that is gone: the wait is bounded.
    worker = threading.Thread(target=delete, daemon=True)
    worker.start()
    worker.join(DELETE_WAIT_S)
    return outcome[0] if outcome else f"app {app_name!r} not deleted within {DELETE_WAIT_S:g} s (Ray stopping?)"


if __name__ == "__main__":
    sys.exit(main())
