"""Start the checkers Ray Serve application (wiring only; see checkers/service.py).

    python jobs/serve_checkers.py --config configs/checkers.toml      # blocks until Ctrl-C
    python jobs/serve_checkers.py --port 8123 --replicas 2 --detach   # deploy and return

Connects to the Ray cluster in RAY_ADDRESS (or starts a local one), starts Serve's HTTP proxy on
the configured host (127.0.0.1 by default) and port, and deploys the app. On a remote cluster,
submit it as a job so replicas get the code: `ray job submit --working-dir . -- python
jobs/serve_checkers.py --detach`. The app outlives this process; `serve shutdown` stops it. Settings come from the
`[checkers]` table of the TOML file; command-line flags override single values.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from checkers.service import ServiceConfig, start  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help="TOML file with a [checkers] table")
    parser.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="HTTP port (default 8000)")
    parser.add_argument("--replicas", type=int, help="fixed replica count")
    parser.add_argument("--detach", action="store_true", help="return after deploying instead of blocking")
    args = parser.parse_args(argv)
    config = ServiceConfig.from_toml(args.config) if args.config else ServiceConfig()
    overrides = {
        k: v for k, v in {"host": args.host, "port": args.port, "num_replicas": args.replicas}.items() if v
    }
    config = dataclasses.replace(config, **overrides)

    import ray

    ray.init(address=os.environ.get("RAY_ADDRESS"), logging_level="ERROR")
    start(config)
    url = f"http://{config.host}:{config.port}{config.route_prefix}"
    print(json.dumps({"app": config.app_name, "url": url, "replicas": config.num_replicas,
                      "autoscaling": dataclasses.asdict(config.autoscaling) if config.autoscaling else None}), flush=True)  # fmt: skip
    if args.detach:
        return 0
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        from ray import serve

        serve.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
