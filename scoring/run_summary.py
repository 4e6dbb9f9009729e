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
PAPER_LEADERBOARD_METRICS = ("detection_rate", "false_positive_rate")
_HEADERS = {"detection_rate": "DR", "false_positive_rate": "FPR", "f1_hallucination": "F1", "mcc": "MCC"}


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
    columns: tuple[str, ...] = LEADERBOARD_METRICS

    @property
    def errored_items(self) -> int:
        return sum(s.errored for s in self.systems)

    @property
    def withheld(self) -> bool:
        return any(not s.published for s in self.systems)

    def render(self) -> str:
        if self.columns == LEADERBOARD_METRICS:
            title = "Leaderboard (HALLMARK conventions: UNCERTAIN outside the confusion matrix, missing = VALID)"
            counts = (("scored", "num_scored"), ("errored", "num_errors"), ("unparsed", "num_parse_failures"),
                      ("uncertain", "num_uncertain"))  # fmt: skip
        else:
            title = "Paper audit: detection rate of injected errors, false-positive rate of flags on clean copies"
            counts = (("injected", "num_injections"), ("flags", "num_flags_adjudicated"), ("unscored", "num_unscored"),
                      ("errored", "num_errors"))  # fmt: skip
        head = f"{'system':<20} " + " ".join(f"{_HEADERS.get(m, m):>7}" for m in self.columns)
        head += " " + " ".join(f"{label:>9}" for label, _ in counts) + "  status"
        lines = ["", title, head]
        ranked = sorted(self.systems, key=lambda s: _sort_key(s.scores.get(self.columns[-1])), reverse=True)
        for s in ranked:
            cells = " ".join(f"{_fmt(s.scores.get(m) if s.published else None):>7}" for m in self.columns)
            tallies = " ".join(f"{s.scores.get(key) or 0:>9}" for _, key in counts)
            lines.append(f"{s.system:<20} {cells} {tallies}  {s.status}")
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
    all_scores, tracked = [], []
    for run in runs:
        outputs = store.read_outputs(run.run_id)
        outage_items = count_outage_answers(outputs)
        published = not outage_items or allow_incomplete
        score = score_citation_outputs(truth, outputs, run_id=run.run_id, system=run.system_label,
                                       eval_mode=eval_mode, bootstrap=bootstrap)  # fmt: skip
        all_scores.append(score)
        system = _close_system_run(store, run, outputs, failed, score.metric_rows(), score.summary,
                                   outage_items=outage_items, published=published, allow_incomplete=allow_incomplete)  # fmt: skip
        summary.systems.append(system)
        metric_rows = [r for r in score.metric_rows().to_pylist()
                       if r["eval_mode"] in (None, eval_mode, "conservative") or eval_mode == "both"]  # fmt: skip
        tracked.append((system, run, score.metric_rows(), metric_rows, {}))
    report_dir = work_dir / "report"
    report_files = write_run_report(report_dir, all_scores)
    _publish(store, summary, runs, report_dir, report_files, LEADERBOARD_METRICS)
    if tracking_uri:
        _track(store, summary, tracked, tracking_uri, experiment, work_dir, report_dir, report_files)
    return summary


def summarize_paper_runs(
    store: Store,
    runs: list[Any],
    verdicts: dict[str, pa.Table],
    *,
    failed: dict[tuple[str, int], str],
    tracking_uri: str | None,
    experiment: str,
    bootstrap: int,
    work_dir: Path,
    elapsed_s: float,
) -> RunSummary:
    """Paper audits: each reviewer's verdicts (adjudicated by the caller) -> detection and
    false-positive statistics per reviewer, one report over all reviewers, MLflow per reviewer."""
    from scoring.paper_metrics import paper_audit_metrics
    from scoring.paper_report import write_paper_report

    summary = RunSummary(tracking_uri=tracking_uri, elapsed_s=elapsed_s, columns=PAPER_LEADERBOARD_METRICS)
    replicates = max(bootstrap, 100)
    combined = pa.concat_tables([verdicts[r.run_id] for r in runs]) if runs else None
    all_metrics = paper_audit_metrics(combined, run_id="+".join(r.run_id for r in runs), n_interval=replicates,
                                      n_paired=replicates, n_permutations=replicates)  # fmt: skip
    tracked = []
    for run in runs:
        outputs = store.read_outputs(run.run_id)
        mine = all_metrics.filter(pa.compute.equal(all_metrics.column("system"), run.system_label))
        mine = mine.set_column(mine.schema.get_field_index("run_id"), "run_id", pa.array([run.run_id] * mine.num_rows))
        headline = {r["metric"]: r["value"] for r in mine.to_pylist() if r["stratum"] == "all"}
        outcomes = verdicts[run.run_id].column("outcome").to_pylist()
        scores = {
            **headline,
            "num_injections": sum(o in ("detected", "missed") for o in outcomes),
            "num_flags_adjudicated": sum(o in ("confirmed_issue", "false_positive", "ambiguous") for o in outcomes),
            "num_unscored": outcomes.count("unscored"),
            "num_errors": sum(1 for e in outputs.column("error").to_pylist() if e is not None),
        }
        store.write_table(run.run_id, "verdicts", verdicts[run.run_id])
        system = _close_system_run(store, run, outputs, failed, mine, scores)
        summary.systems.append(system)
        tracked.append((system, run, mine, mine.to_pylist(), {"verdicts.parquet": verdicts[run.run_id]}))
    report_dir = work_dir / "report"
    report_files = write_paper_report(report_dir, combined, metrics=all_metrics) if runs else []
    _publish(store, summary, runs, report_dir, report_files, PAPER_LEADERBOARD_METRICS)
    if tracking_uri:
        _track(store, summary, tracked, tracking_uri, experiment, work_dir, report_dir, report_files)
    return summary


def _close_system_run(store: Store, run: Any, outputs: pa.Table, failed: dict[tuple[str, int], str],
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


def _publish(store: Store, summary: RunSummary, runs: list[Any], report_dir: Path, report_files: list[Path],
             columns: tuple[str, ...]) -> None:  # fmt: skip
    """Copy the report next to the runs and write the run summary (the leaderboard's rows)."""
    report_key = f"reports/{runs[0].manifest['corpus']['name']}__{runs[0].manifest['snapshot']}" if runs else "reports/empty"
    for path in report_files:
        rel = path.relative_to(report_dir).as_posix()
        store.write_file(report_key, rel, path.read_bytes())
        if path.suffix in (".md", ".html"):
            summary.report_uris.append(store.uri_of(report_key, rel))
    board = [{"system": s.system, "run_id": s.run_id, "status": s.status, **{m: s.scores.get(m) for m in columns},
              "num_scored": s.scores.get("num_scored"), "num_errors": s.scores.get("num_errors"),
              "num_parse_failures": s.scores.get("num_parse_failures"), "published": s.published}
             for s in summary.systems]  # fmt: skip
    store.write_json(report_key, "run_summary.json", board)
    summary.leaderboard_uri = store.uri_of(report_key, "run_summary.json")


def _track(store: Store, summary: RunSummary, tracked: list[tuple], tracking_uri: str, experiment: str,
           work_dir: Path, report_dir: Path, report_files: list[Path]) -> None:  # fmt: skip
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


def count_outage_answers(outputs: pa.Table) -> int:
    """Answers that depended on a source that was down (verifiers mark them in detail)."""
    return sum(1 for d in outputs.column("detail_json").to_pylist() if d and '"outage_sources"' in d)


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.3f}"


def _sort_key(value: Any) -> float:
    return -2.0 if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
