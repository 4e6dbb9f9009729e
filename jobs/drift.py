"""Drift: rerun a finished run's system on today's snapshot, the same everything else, and compare.

    python jobs/drift.py RUN [--storage ROOT] [--snapshot YYYY-MM-DD] [--tracking-uri URI]

RUN is what `jobs/compare_runs.py` accepts (a run id under --storage, a run folder, an MLflow run
id). The run's stored config (its manifest's `config`, with `systems` narrowed to the run's own
system) is written to a JSON config and `jobs/run_corpus.py --config` runs it with the new
snapshot into the same store; then `jobs/compare_runs.py` compares the old run with the new one.
Whatever changed is what the sources (and providers) changed since: the snapshot is the only
difference in the run record, unless the code or the corpus moved too (the report lists both).

exit status: 0 compared; 2 bad input (unknown run, same snapshot); otherwise run_corpus.py's.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

EXIT_OK, EXIT_BAD_INPUT = 0, 2
#: run_corpus.py exit statuses after which the new run exists and can be compared (3: some items errored).
_COMPARABLE = (0, 3)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="drift.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("run", help="run id, run folder, or MLflow run id of the finished run")
    p.add_argument("--storage", help="store root the run id is under")
    p.add_argument("--snapshot", default=dt.datetime.now(dt.UTC).date().isoformat(),
                   help="snapshot of the rerun (default: today, UTC)")  # fmt: skip
    p.add_argument("--tracking-uri", help="MLflow tracking URI for the rerun and the comparison (default: the "
                   "environment's, else the run's stored one, else ./mlruns; 'none' disables)")
    p.add_argument("--ray-address", help="Ray address for the rerun (default: RAY_ADDRESS, else a local Ray)")
    p.add_argument("--bootstrap", type=int, default=2000, help="paired bootstrap resamples of the comparison")
    return p.parse_args(argv)


def rerun_config(manifest: dict, snapshot: str, storage: str, tracking_uri: str | None) -> dict:
    """The stored config with the run's own system, the new snapshot and the same store."""
    config = dict(manifest.get("config") or {})
    system = manifest["system"]
    config["systems"] = [{"name": system["name"], "args": system.get("args") or {}, "label": system.get("label")}]
    config["snapshot"] = snapshot
    config["storage"] = storage
    if tracking_uri:
        config["tracking_uri"] = tracking_uri
    config.pop("ray_address", None)  # where it ran then is not where it runs now
    return config


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from jobs.compare_runs import CompareError, default_tracking, resolve
    from jobs.compare_runs import main as compare_main
    from storage.run_id import make_run_id

    tracking_uri = default_tracking(args.tracking_uri)
    try:
        store, run_id, _ = resolve(args.run, args.storage, tracking_uri)
    except CompareError as e:
        print(f"drift: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    manifest = store.read_json(run_id, "manifest.json")
    if not manifest.get("config") or "system" not in manifest:
        print(f"drift: {store.uri_of(run_id, 'manifest.json')}: no stored config or system to rerun", file=sys.stderr)
        return EXIT_BAD_INPUT
    if str(manifest.get("snapshot")) == args.snapshot:
        print(f"drift: run {run_id} is already on snapshot {args.snapshot}; pass another --snapshot", file=sys.stderr)
        return EXIT_BAD_INPUT
    # the run's own tracking server unless told otherwise: the rerun and the comparison land beside it
    tracking_uri = default_tracking(args.tracking_uri, (manifest.get("config") or {}).get("tracking_uri"))
    if tracking_uri is None and (args.tracking_uri or "").lower() != "none":
        from storage.tracking import default_tracking_uri

        tracking_uri = default_tracking_uri()  # where run_corpus.py logs the rerun without one
    config = rerun_config(manifest, args.snapshot, store.uri, tracking_uri)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rerun.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        cmd = [sys.executable, str(REPO_ROOT / "jobs" / "run_corpus.py"), "--config", str(path)]
        if args.ray_address:
            cmd += ["--ray-address", args.ray_address]
        print(f"[drift] rerunning {manifest['system'].get('label') or manifest['system']['name']} on snapshot "
              f"{args.snapshot}", flush=True)  # fmt: skip
        done = subprocess.run(cmd, check=False)
    if done.returncode not in _COMPARABLE:
        print(f"drift: run_corpus.py exited {done.returncode}; nothing compared", file=sys.stderr)
        return done.returncode
    corpus, system = manifest["corpus"], manifest["system"]
    new_id = make_run_id(corpus["name"], corpus["version"], system["name"], system["config_hash"], args.snapshot)
    if store.read_json(new_id, "manifest.json") is None:
        print(f"drift: no rerun {new_id} under {store.uri}: the corpus file changed since (a new version), so the "
              "runs audit different corpora; compare them with jobs/compare_runs.py if you mean to", file=sys.stderr)
        return EXIT_BAD_INPUT
    compare = [run_id, new_id, "--storage", store.uri, "--bootstrap", str(args.bootstrap)]
    return compare_main(compare + ["--tracking-uri", tracking_uri or "none"])


if __name__ == "__main__":
    sys.exit(main())
