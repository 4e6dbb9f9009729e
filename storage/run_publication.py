"""Write what closing a run produces: each system run's metrics, scores and status next to its
outputs, the run's report and summary, and one MLflow run per system run. Scoring computes the
numbers; this module only stores and mirrors them."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from storage.store import Store
from storage.tracking import log_system_run, metric_key


@dataclass
class SystemSummary:
    system: str
    run_id: str
    status: str
    scores: dict[str, Any]
    items: int
    errored: int
    failed_shards: int
    outputs_uri: str
    mlflow_run_id: str | None = None
    outage_items: int = 0
    published: bool = True



def close_system_run(store: Store, run: Any, outputs: pa.Table, failed: dict[tuple[str, int], str],
                      metric_rows: pa.Table, scores: dict[str, Any], *, outage_items: int = 0, published: bool = True,
                      allow_incomplete: bool = False) -> SystemSummary:  # fmt: skip
    """Store one system's metrics, scores and status; what the summary shows of it."""
    expected = run.manifest["corpus"]["items"]
    failed_shards = sum(1 for (rid, _), _e in failed.items() if rid == run.run_id)
    status = "complete" if outputs.num_rows == expected else "incomplete"
    if outage_items:
        status = "incomplete: source outage" + (" (published by override)" if allow_incomplete else "")
    errored = sum(1 for e in outputs.column("error").to_pylist() if e is not None)
    store.write_table(run.run_id, "metrics", metric_rows)
    store.write_json(run.run_id, "scores.json", {**scores, "published": published, "status": status})
    store.close_run(run.run_id, status, items=outputs.num_rows, expected=expected, errored=errored,
                    failed_shards=failed_shards, outage_items=outage_items, published=published)  # fmt: skip
    return SystemSummary(run.system_label, run.run_id, status, scores, outputs.num_rows, errored, failed_shards,
                         store.uri_of(run.run_id, "shards"), outage_items=outage_items, published=published)  # fmt: skip


def publish_report(store: Store, systems: list[SystemSummary], runs: list[Any], report_dir: Path,
                   report_files: list[Path], columns: tuple[str, ...]) -> tuple[list[str], str]:  # fmt: skip
    """Copy the report next to the runs and write the run summary (the leaderboard's rows).
    Returns the report documents' URIs and the run summary's URI."""
    report_uris = []
    report_key = f"reports/{runs[0].manifest['corpus']['name']}__{runs[0].manifest['snapshot']}" if runs else "reports/empty"
    for path in report_files:
        rel = path.relative_to(report_dir).as_posix()
        store.write_file(report_key, rel, path.read_bytes())
        if path.suffix in (".md", ".html"):
            report_uris.append(store.uri_of(report_key, rel))
    board = [{"system": s.system, "run_id": s.run_id, "status": s.status, **{m: s.scores.get(m) for m in columns},
              "num_scored": s.scores.get("num_scored"), "num_errors": s.scores.get("num_errors"),
              "num_parse_failures": s.scores.get("num_parse_failures"), "published": s.published}
             for s in systems]  # fmt: skip
    store.write_json(report_key, "run_summary.json", board)
    return report_uris, store.uri_of(report_key, "run_summary.json")


def track_system_runs(store: Store, tracked: list[tuple], tracking_uri: str, experiment: str, work_dir: Path,
                      report_dir: Path, report_files: list[Path]) -> None:  # fmt: skip
    """One MLflow run per system run: params from the manifest, metrics, outputs and report as artifacts."""
    for system, run, metric_table, metric_rows, extra_tables in tracked:
        artifact_dir = work_dir / "mlflow" / system.run_id
        artifact_dir.mkdir(parents=True, exist_ok=True)
        pq.write_table(store.read_outputs(system.run_id), artifact_dir / "outputs.parquet")
        pq.write_table(metric_table, artifact_dir / "metrics.parquet")
        for name, table in extra_tables.items():
            pq.write_table(table, artifact_dir / name)
        (artifact_dir / "manifest.json").write_text(json.dumps(run.manifest, indent=2, default=str))
        (artifact_dir / "scores.json").write_text(json.dumps(system.scores, indent=2, default=str))
        for path in report_files:
            target = artifact_dir / "report" / path.relative_to(report_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
        metrics = {
            metric_key(r["metric"], r["stratum"]): r["value"]
            for r in metric_rows
            if system.published and r["value"] is not None and not (isinstance(r["value"], float) and math.isnan(r["value"]))
        }  # fmt: skip
        metrics.update(num_outage_items=float(system.outage_items), num_errored=float(system.errored),
                       num_failed_shards=float(system.failed_shards))  # fmt: skip
        params = {
            "corpus": run.manifest["corpus"]["name"],
            "corpus_version": run.manifest["corpus"]["version"],
            "system": system.system,
            "system_config_hash": run.manifest["system"]["config_hash"],
            "system_args": run.manifest["system"]["args"],
            "snapshot": run.manifest["snapshot"],
            "code_revision": run.manifest["code_revision"],
            "config": run.manifest["config"],
        }
        system.mlflow_run_id = log_system_run(
            tracking_uri, experiment, run_id=system.run_id, run_name=f"{system.system} · {params['corpus']}",
            params=params, metrics=metrics, artifact_dir=artifact_dir,
            tags={"status": system.status, "storage": store.uri_of(system.run_id)},
        )  # fmt: skip
