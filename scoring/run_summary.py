"""Finish a run: score every system's stored outputs, write metrics and the report next to the
outputs, mirror each system's run into MLflow, and render the leaderboard.

Every number here is computed from the records in the store (outputs + truth), so the same
summary can be rebuilt later from storage alone.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from storage.store import Store
from storage.tracking import log_system_run, metric_key

LEADERBOARD_METRICS = ("detection_rate", "false_positive_rate", "f1_hallucination", "mcc")


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


@dataclass
class RunSummary:
    systems: list[SystemSummary] = field(default_factory=list)
    leaderboard_uri: str | None = None
    report_uris: list[str] = field(default_factory=list)
    tracking_uri: str | None = None
    elapsed_s: float = 0.0

    @property
    def errored_items(self) -> int:
        return sum(s.errored for s in self.systems)

    @property
    def withheld(self) -> bool:
        return any(not s.published for s in self.systems)

    def render(self) -> str:
        head = (f"{'system':<20} {'DR':>7} {'FPR':>7} {'F1':>7} {'MCC':>7} {'scored':>7} {'errored':>8} "
                f"{'unparsed':>8} {'uncertain':>9}  status")  # fmt: skip
        lines = ["", "Leaderboard (HALLMARK conventions: UNCERTAIN outside the confusion matrix, missing = VALID)", head]
        ranked = sorted(self.systems, key=lambda s: _sort_key(s.scores.get("mcc")), reverse=True)
        for s in ranked:
            cells = " ".join(f"{_fmt(s.scores.get(m) if s.published else None):>7}" for m in LEADERBOARD_METRICS)
            lines.append(
                f"{s.system:<20} {cells} {s.scores.get('num_scored', 0):>7} {s.scores.get('num_errors', 0):>8} "
                f"{s.scores.get('num_parse_failures', 0):>8} {s.scores.get('num_uncertain', 0):>9}  {s.status}"
            )
        for s in self.systems:
            if s.outage_items:
                verdict = "published by override (--allow-incomplete)" if s.published else "scores withheld"
                lines.append(f"INCOMPLETE: {s.system}: {s.outage_items} answers depended on an unavailable source; {verdict}")
        lines.append("")
        lines.append(f"finished in {self.elapsed_s:.1f}s; wrote:")
        for s in self.systems:
            lines.append(f"  {s.system}: outputs {s.outputs_uri}" + (f" (MLflow run {s.mlflow_run_id})" if s.mlflow_run_id else ""))
        if self.leaderboard_uri:
            lines.append(f"  leaderboard: {self.leaderboard_uri}")
        for uri in self.report_uris:
            lines.append(f"  report: {uri}")
        if self.tracking_uri:
            lines.append(f"  MLflow: {self.tracking_uri}  (open with: mlflow ui --backend-store-uri {self.tracking_uri})")
        return "\n".join(lines)


def summarize_citation_runs(
    store: Store,
    runs: list[Any],
    truth: pa.Table,
    *,
    failed: dict[tuple[str, int], str],
    tracking_uri: str | None,
    experiment: str,
    eval_mode: str,
    bootstrap: int,
    work_dir: Path,
    elapsed_s: float,
    allow_incomplete: bool = False,
) -> RunSummary:
    from scoring import score_citation_outputs
    from scoring.report import write_run_report

    summary = RunSummary(tracking_uri=tracking_uri, elapsed_s=elapsed_s)
    all_scores = []
    for run in runs:
        outputs = store.read_outputs(run.run_id)
        expected = run.manifest["corpus"]["items"]
        failed_shards = sum(1 for (rid, _), _e in failed.items() if rid == run.run_id)
        outage_items = count_outage_answers(outputs)
        status = "complete" if outputs.num_rows == expected else "incomplete"
        if outage_items:
            status = "incomplete: source outage" + (" (published by override)" if allow_incomplete else "")
        published = not outage_items or allow_incomplete
        score = score_citation_outputs(truth, outputs, run_id=run.run_id, system=run.system_label,
                                       eval_mode=eval_mode, bootstrap=bootstrap)  # fmt: skip
        all_scores.append(score)
        errored = sum(1 for e in outputs.column("error").to_pylist() if e is not None)
        store.write_table(run.run_id, "metrics", score.metric_rows())
        store.write_json(run.run_id, "scores.json", {**score.summary, "published": published, "status": status})
        store.close_run(run.run_id, status, items=outputs.num_rows, expected=expected, errored=errored,
                        failed_shards=failed_shards, outage_items=outage_items, published=published)  # fmt: skip
        summary.systems.append(
            SystemSummary(run.system_label, run.run_id, status, score.summary, outputs.num_rows, errored, failed_shards,
                          store.uri_of(run.run_id, "shards"), outage_items=outage_items, published=published)  # fmt: skip
        )
    report_dir = work_dir / "report"
    report_files = write_run_report(report_dir, all_scores)
    report_key = f"reports/{runs[0].manifest['corpus']['name']}__{runs[0].manifest['snapshot']}" if runs else "reports/empty"
    for path in report_files:
        rel = path.relative_to(report_dir).as_posix()
        store.write_file(report_key, rel, path.read_bytes())
        if path.suffix in (".md", ".html"):
            summary.report_uris.append(store.uri_of(report_key, rel))
    board = [{"system": s.system, "run_id": s.run_id, "status": s.status, **{m: s.scores.get(m) for m in LEADERBOARD_METRICS},
              "num_scored": s.scores.get("num_scored"), "num_errors": s.scores.get("num_errors"),
              "num_parse_failures": s.scores.get("num_parse_failures"), "published": s.published}
             for s in summary.systems]  # fmt: skip
    store.write_json(report_key, "run_summary.json", board)
    summary.leaderboard_uri = store.uri_of(report_key, "run_summary.json")

    if tracking_uri:
        for system, score in zip(summary.systems, all_scores, strict=True):
            run = next(r for r in runs if r.run_id == system.run_id)
            artifact_dir = work_dir / "mlflow" / system.run_id
            artifact_dir.mkdir(parents=True, exist_ok=True)
            pq.write_table(store.read_outputs(system.run_id), artifact_dir / "outputs.parquet")
            pq.write_table(score.metric_rows(), artifact_dir / "metrics.parquet")
            (artifact_dir / "manifest.json").write_text(json.dumps(run.manifest, indent=2, default=str))
            (artifact_dir / "scores.json").write_text(json.dumps(score.summary, indent=2, default=str))
            for path in report_files:
                target = artifact_dir / "report" / path.relative_to(report_dir)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(path.read_bytes())
            metrics = {
                metric_key(r["metric"], r["stratum"]): r["value"]
                for r in score.metric_rows().to_pylist()
                if system.published and r["value"] is not None
                and (r["eval_mode"] in (None, eval_mode, "conservative") or eval_mode == "both")
            }  # fmt: skip
            metrics["num_outage_items"] = float(system.outage_items)
            metrics["num_errored"] = float(system.errored)
            metrics["num_failed_shards"] = float(system.failed_shards)
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
    return summary


def count_outage_answers(outputs: pa.Table) -> int:
    """Answers that depended on a source that was down (verifiers mark them in detail)."""
    return sum(1 for d in outputs.column("detail_json").to_pylist() if d and '"outage_sources"' in d)


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.3f}"


def _sort_key(value: Any) -> float:
    return -2.0 if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
