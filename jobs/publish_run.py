"""Log finished runs to MLflow from their stored records: for a run whose tracking server failed
after the work (run_corpus.py exit status 5 prints this command).

    python jobs/publish_run.py --storage ./runs --run-ids RUN_ID[,RUN_ID...] --tracking-uri http://mlflow:5000

Wiring only: storage.run_publication.republish_runs does the work.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="publish_run.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--storage", required=True, help="the run store: a path, file:// or s3://bucket/prefix")
    p.add_argument("--run-ids", required=True, nargs="+", help="run ids (comma- or space-separated)")
    p.add_argument("--tracking-uri", help="MLflow tracking URI (default: SCRUTINEER_TRACKING_URI or MLFLOW_TRACKING_URI)")
    p.add_argument("--experiment", help="MLflow experiment for a run never logged ({corpus} becomes the corpus name; "
                   "default: the one the run's stored config names, else scrutineer/{corpus} as run_corpus.py). "
                   "A run already in MLflow is published into its own MLflow run, wherever it is")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from cluster.preflight import check_storage, check_tracking, quick_mlflow_retries
    from storage.run_publication import republish_runs
    from storage.store import Store
    from storage.tracking import tracking_uri_from_environment

    quick_mlflow_retries()
    tracking_uri = args.tracking_uri or tracking_uri_from_environment()
    if not tracking_uri or tracking_uri.lower() == "none":
        print("error: no tracking server: pass --tracking-uri (or set MLFLOW_TRACKING_URI)", file=sys.stderr)
        return EXIT_BAD_INPUT
    run_ids = [r.strip() for arg in args.run_ids for r in arg.split(",") if r.strip()]
    for problem in (check_tracking(tracking_uri), check_storage(args.storage)):
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return EXIT_BAD_INPUT
    store = Store(args.storage)
    with tempfile.TemporaryDirectory(prefix="scrutineer-publish-") as tmp:
        try:
            systems = republish_runs(store, run_ids, tracking_uri, args.experiment, Path(tmp))
        except FileNotFoundError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    failed = [s for s in systems if s.tracking_error]
    for s in systems:
        if s.tracking_error:
            print(f"error: {s.system} ({s.run_id}): not logged: {s.tracking_error}", file=sys.stderr)
        else:
            print(f"logged {s.system} ({s.run_id}) to {tracking_uri}: MLflow run {s.mlflow_run_id}")
    return EXIT_FAILED if failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
