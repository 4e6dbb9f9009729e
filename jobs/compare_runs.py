"""What flipped between two runs: `python jobs/compare_runs.py BEFORE AFTER [--storage ROOT] [--tracking-uri URI]`.

BEFORE and AFTER are each a run id under --storage, a run's folder (a path or s3:// URI ending in
the run id), or an MLflow run id (resolved through its `scrutineer.run_id` and `storage` tags with
--tracking-uri). Writes comparison.md, comparison.html, changes.csv and comparison.json to
`<storage of AFTER>/comparisons/<BEFORE>__vs__<AFTER>/` and logs them to both runs' MLflow runs under
`comparisons/<BEFORE>__vs__<AFTER>/` (never over a run's own `report/`), then prints one line saying
where it logged them or why not. The tracking URI: --tracking-uri, else SCRUTINEER_TRACKING_URI /
MLFLOW_TRACKING_URI, else run_corpus.py's local store ./mlruns when it exists.
Wiring only: storage -> scoring -> storage/MLflow.

Two runs on different corpora (name or version) are refused with exit 2; `--shared-items` compares
only the items both hold (same id), and the report says so.

exit status: 0 compared; 2 a run that cannot be found or read (the message says which and why), or
two runs on different corpora without --shared-items.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

EXIT_OK, EXIT_BAD_INPUT = 0, 2


class CompareError(ValueError):
    """A run reference that cannot be resolved or read."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="compare_runs.py", description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("before", help="run id, run folder, or MLflow run id of the earlier run")
    p.add_argument("after", help="run id, run folder, or MLflow run id of the later run")
    p.add_argument("--storage", help="store root the run ids are under (a path or s3://bucket/prefix)")
    p.add_argument("--tracking-uri", help="MLflow tracking URI: resolves MLflow run ids and receives the report "
                   "(default: SCRUTINEER_TRACKING_URI or MLFLOW_TRACKING_URI; 'none' disables)")
    p.add_argument("--bootstrap", type=int, default=2000, help="paired bootstrap resamples (0 disables)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--eval-mode", choices=["conservative", "aggressive"], default="conservative")
    p.add_argument("--out", help="also write the report files into this local folder")
    p.add_argument("--shared-items", action="store_true",
                   help="compare runs on different corpora on the items both hold (same id); without it they are "
                        "refused (exit 2)")
    return p.parse_args(argv)


def default_tracking(given: str | None, stored: str | None = None) -> str | None:
    """The tracking URI: given, else the environment's, else the run's stored one, else run_corpus.py's
    default local store (./mlruns) when it exists; None for 'none' or when there is none."""
    from storage.tracking import tracking_uri_from_environment

    local = Path.cwd() / "mlruns" / "mlflow.db"
    uri = given or tracking_uri_from_environment() or stored or (f"sqlite:///{local.resolve()}" if local.exists() else None)
    return None if uri is None or uri.lower() == "none" else uri


def resolve(ref: str, storage: str | None, tracking_uri: str | None) -> tuple[Any, str, str | None]:
    """(Store, run id, MLflow run id or None) of one reference."""
    from storage.mlflow_conventions import tracked_run
    from storage.store import Store

    if storage:
        store = Store(storage)
        if store.read_json(ref, "manifest.json") is not None:
            return store, ref, None
    if "/" in ref or ref.startswith("s3:"):
        root, _, run_id = ref.rstrip("/").rpartition("/")
        if run_id and root:
            store = Store(root)
            if store.read_json(run_id, "manifest.json") is not None:
                return store, run_id, None
    if tracking_uri:
        tracked = tracked_run(tracking_uri, ref)
        if tracked is not None:
            if tracked.storage:
                root = tracked.storage.rstrip("/").rpartition("/")[0]
                store = Store(root)
                if store.read_json(tracked.run_id, "manifest.json") is not None:
                    return store, tracked.run_id, ref
            if storage and Store(storage).read_json(tracked.run_id, "manifest.json") is not None:
                return Store(storage), tracked.run_id, ref
            raise CompareError(f"{ref}: MLflow run of scrutineer run {tracked.run_id}, whose records are not at "
                               f"{tracked.storage or '(no storage tag)'}; pass --storage")  # fmt: skip
    where = [f"--storage {storage}" if storage else "no --storage", "a run folder path" if "/" in ref else "",
             f"MLflow at {tracking_uri}" if tracking_uri else "no --tracking-uri"]  # fmt: skip
    raise CompareError(f"{ref}: no such run (looked in: {', '.join(w for w in where if w)})")


def load_side(store: Any, run_id: str):
    """The run's record, outputs, verdicts and truth."""
    import pyarrow.compute as pc

    from scoring.citations.run_comparison import Side
    from storage.run_record import RunRecord, RunRecordError
    from verifiers.registry import registered

    manifest = store.read_json(run_id, "manifest.json")
    outputs = store.read_outputs(run_id)
    cost = pc.sum(outputs.column("cost_usd")).as_py() if outputs.num_rows else None
    name = (manifest.get("system") or {}).get("name")
    entry = registered().get(name) if name else None
    try:
        record = RunRecord.from_stored(manifest, store.read_json(run_id, "status.json"), storage_uri=store.uri_of(run_id),
                                       runtime_arg_names=entry.runtime_args if entry else None, cost_usd=cost,
                                       default_args=entry.effective_args() if entry else None,
                                       source=store.uri_of(run_id, "manifest.json"))  # fmt: skip
    except RunRecordError as e:
        raise CompareError(str(e)) from None
    truth = store.read_table(run_id, "truth")
    if truth is None:
        raise CompareError(f"{store.uri_of(run_id, 'tables', 'truth.parquet')}: missing; the run never started")
    return Side(record, outputs, store.read_table(run_id, "verdicts")), truth


def comparison_key(run_a: str, run_b: str) -> str:
    """`comparisons/<before>__vs__<after>`, beside the runs in the store."""
    return f"comparisons/{run_a}__vs__{run_b}".replace("..", "_")


def comparison_json(c: Any) -> dict[str, Any]:
    return {"before": c.before.model_dump(), "after": c.after.model_dump(),
            "differences": [list(d) for d in c.differences], "provenance": c.provenance, "shared": c.shared,
            "only_before": c.only_before, "only_after": c.only_after, "counts": c.counts,
            "mcnemar": asdict(c.mcnemar) if c.mcnemar else None, "paired": [asdict(p) for p in c.paired],
            "changes": [asdict(x) for x in c.changes], "injections": [asdict(i) for i in c.injections],
            "notes": c.notes}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tracking_uri = default_tracking(args.tracking_uri)
    try:
        store_a, run_a, ml_a = resolve(args.before, args.storage, tracking_uri)
        store_b, run_b, ml_b = resolve(args.after, args.storage, tracking_uri)
        before, _ = load_side(store_a, run_a)
        after, truth = load_side(store_b, run_b)
    except CompareError as e:
        print(f"compare_runs: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT

    from scoring.citations.comparison_report import changes_csv, to_html, to_markdown
    from scoring.citations.run_comparison import DifferentCorpora, compare_runs
    from storage.mlflow_conventions import log_files, tracked_runs_of
    from storage.redaction import redact_text
    from storage.result_json import result_json
    from storage.tracking import TRACKING_URI_VARIABLES

    try:
        c = compare_runs(before, after, truth, eval_mode=args.eval_mode, n_resamples=args.bootstrap, seed=args.seed,
                         shared_items=args.shared_items)  # fmt: skip
    except DifferentCorpora as e:
        print(f"compare_runs: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    files = {"comparison.md": to_markdown(c), "comparison.html": to_html(c), "changes.csv": changes_csv(c),
             "comparison.json": result_json(comparison_json(c), sort_keys=True)}  # fmt: skip
    key = comparison_key(run_a, run_b)
    for name, text in files.items():
        store_b.write_file(key, name, text.encode())
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(args.out) if args.out else Path(tmp)
        local.mkdir(parents=True, exist_ok=True)
        paths = []
        for name, text in files.items():
            (local / name).write_text(text, encoding="utf-8")
            paths.append(local / name)
        mlflow_line = f"MLflow: not logged: no tracking URI (pass --tracking-uri or set {TRACKING_URI_VARIABLES[-1]})"
        if tracking_uri:
            targets: dict[str, set[str]] = {}
            for side, store, run_id, ml in (("before", store_a, run_a, ml_a), ("after", store_b, run_b, ml_b)):
                here = (None, store.uri_of(run_id), redact_text(store.uri_of(run_id)))  # not the same id in another root
                found = {t.mlflow_run_id for t in tracked_runs_of(tracking_uri, run_id) if t.storage in here}
                targets[side] = found | ({ml} if ml else set())
            for ml in sorted(set().union(*targets.values())):
                log_files(tracking_uri, ml, paths, key)  # under comparisons/: never over a run's own report/
            missing = [side for side, found in targets.items() if not found]
            logged = ", ".join(f"{side} {ml}" for side, found in targets.items() for ml in sorted(found))
            mlflow_line = redact_text(
                (f"MLflow: logged under {key}/ to {logged}" if logged else "MLflow: not logged")
                + (f"; no MLflow run of the {' and '.join(missing)} run at {tracking_uri} (log it with "
                   "jobs/publish_run.py)" if missing else ""))  # fmt: skip
    m = c.mcnemar
    print(f"{c.shared} shared items; {len(c.changes)} changed"
          + (f" ({m.fixed} fixed, {m.broken} broken, McNemar p = {m.p_value:.3g})" if m else ""))
    for k, x, y in c.differences:
        print(f"  differs: {k}: {x} -> {y}")
    print(f"report: {store_b.uri_of(key, 'comparison.html')}")
    print(mlflow_line)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
