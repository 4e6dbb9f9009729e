"""Finish a run: score every system's stored outputs (the writing — metrics next to the outputs,
the report, MLflow — is storage/run_publication.py's), and render the leaderboard.

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

from storage.outages import outage_mask
from storage.redaction import redact_text
from storage.run_publication import (
    Submission,
    SystemSummary,
    close_system_run,
    decided_share,
    finish_system_runs,
    publish_report,
    track_system_runs,
)
from storage.store import Store

LEADERBOARD_METRICS = ("detection_rate", "false_positive_rate", "f1_hallucination", "mcc")
PAPER_LEADERBOARD_METRICS = ("detection_rate", "natural_detection_rate", "false_positive_rate")
"""Injected-error detection, natural-error (errata) detection, false positives on clean copies."""
_HEADERS = {"detection_rate": "DR", "natural_detection_rate": "natDR", "false_positive_rate": "FPR",
            "f1_hallucination": "F1", "mcc": "MCC"}


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

    @property
    def labelled(self) -> bool:
        return any(s.scores.get("labelled") for s in self.systems) or not self.systems

    def render(self) -> str:
        """The console summary; URLs in it (storage, tracking) lose their userinfo and secret queries."""
        return redact_text(self._render())

    def _render(self) -> str:
        if self.columns == LEADERBOARD_METRICS and not self.labelled:
            return self._render_unlabelled()
        if self.columns == LEADERBOARD_METRICS:
            title = "Leaderboard (HALLMARK conventions: UNCERTAIN outside the confusion matrix, missing = VALID)"
            counts = (("scored", "num_scored"), ("errored", "num_errors"), ("unparsed", "num_parse_failures"),
                      ("uncertain", "num_uncertain"))  # fmt: skip
        else:
            title = "Paper audit: detection rate of injected errors, false-positive rate of flags on clean copies"
            counts = (("injected", "num_injections"), ("natural", "num_natural_errata"), ("flags", "num_flags_adjudicated"),
                      ("undecided", "num_undecided"), ("unscored", "num_unscored"), ("errored", "num_errors"))  # fmt: skip
        with_coverage = self.columns == LEADERBOARD_METRICS
        head = f"{'system':<20} " + " ".join(f"{_HEADERS.get(m, m):>7}" for m in self.columns)
        head += f" {'coverage':>8}" if with_coverage else ""
        head += " " + " ".join(f"{label:>9}" for label, _ in counts) + "  status"
        lines = ["", title, head]
        ranked = sorted(self.systems, key=lambda s: (s.scored, _sort_key(s.scores.get(self.columns[-1]))), reverse=True)
        for s in ranked:
            cells = " ".join(f"{_fmt(s.scores.get(m) if s.published and s.scored else None):>7}" for m in self.columns)
            if with_coverage:  # share decided next to DR/FPR: DR 1.000 at coverage 5.0% is not a good system
                cells += f" {_pct(decided_share(s.scores) if s.scored else None):>8}"
            tallies = " ".join(f"{s.scores.get(key) or 0:>9}" for _, key in counts)
            lines.append(f"{s.system:<20} {cells} {tallies}  {s.status}")
        lines += self._footer()
        return "\n".join(lines)

    def _render_unlabelled(self) -> str:
        """No labels: no metric applies; say what each system said."""
        lines = ["", "No labels in this corpus: metrics not applicable. What each system said:",
                 f"{'system':<20} {'VALID':>7} {'HALLUC.':>7} {'UNCERT.':>7} {'errored':>7} {'coverage':>8}  status"]
        for s in sorted(self.systems, key=lambda s: not s.scored):
            said = (s.scores.get("outputs") or {}).get("labels") or {}
            cells = " ".join(f"{said.get(k, 0):>7}" for k in ("VALID", "HALLUCINATED", "UNCERTAIN"))
            lines.append(f"{s.system:<20} {cells} {s.errored:>7} {_pct(decided_share(s.scores)):>8}  {s.status}")
        lines += self._footer()
        return "\n".join(lines)

    def _footer(self) -> list[str]:
        lines = []
        for s in self.systems:
            if not s.scored:
                lines.append(f"FAILED: {s.system}: every output errored, not scored; first error: {s.first_error}")
        for s in self.systems:
            if s.outage_items:
                verdict = ("published by override (--allow-incomplete)" if s.published
                           else "scores withheld; submit the same run again to retry just those items")  # fmt: skip
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
        return lines


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
    submission: Submission | None = None,
) -> RunSummary:
    from scoring import score_citation_outputs
    from scoring.hallmark_result import run_scores
    from scoring.report import write_run_report
    from scoring.stored_run import report_context

    summary = RunSummary(tracking_uri=tracking_uri, elapsed_s=elapsed_s)
    all_scores, tracked = [], []
    for run in runs:
        outputs = store.read_outputs(run.run_id)
        outage_items = count_outage_answers(outputs)
        published = not outage_items or allow_incomplete
        score = score_citation_outputs(truth, outputs, run_id=run.run_id, system=run.system_label,
                                       eval_mode=eval_mode, bootstrap=bootstrap)  # fmt: skip
        all_scores.append(score)
        first_error = None
        if score.failed:  # every output errored: reported as failed with its first error, never scored
            shard_errors = [e for (rid, _), e in sorted(failed.items()) if rid == run.run_id]
            first_error = score.census.first_error or (shard_errors[0] if shard_errors else "no output")
            scores = {"failed": True, "first_error": first_error, "labelled": score.labelled,
                      "num_errors": score.census.num_errors, "errors_by_kind": score.census.errors_by_kind,
                      "outputs": score.census.as_dict()}  # fmt: skip
        else:
            scores = run_scores(score, truth, outputs, split_name=getattr(run, "split", None) or run.run_id.split("@")[0])
        system = close_system_run(store, run, outputs, failed, score.metric_rows(), scores, outage_items=outage_items,
                                  published=published, allow_incomplete=allow_incomplete, first_error=first_error)  # fmt: skip
        summary.systems.append(system)
        metric_rows = [r for r in score.metric_rows().to_pylist()
                       if r["eval_mode"] in (None, eval_mode, "conservative") or eval_mode == "both"]  # fmt: skip
        tracked.append((system, run, score.metric_rows(), metric_rows if system.scored else [], {}))
    report_dir = work_dir / "report"
    report_files = write_run_report(report_dir, all_scores, context=report_context(store, [r.run_id for r in runs]))
    summary.report_uris, summary.leaderboard_uri = publish_report(store, summary.systems, runs, report_dir,
                                                                  report_files, LEADERBOARD_METRICS)  # fmt: skip
    if tracking_uri:
        track_system_runs(store, tracked, tracking_uri, experiment, work_dir, report_dir, report_files,
                          submission)
    finish_system_runs(store, summary.systems)
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
    submission: Submission | None = None,
) -> RunSummary:
    """Paper audits: each reviewer's verdicts (adjudicated by the caller) -> detection and
    false-positive statistics per reviewer, one report over all reviewers, MLflow per reviewer."""
    from scoring.paper_metrics import paper_audit_metrics, reviewer_audit_rows
    from scoring.paper_report import write_paper_report
    from storage.schemas import METRIC_SCHEMA, table_from_rows

    summary = RunSummary(tracking_uri=tracking_uri, elapsed_s=elapsed_s, columns=PAPER_LEADERBOARD_METRICS)
    replicates = max(bootstrap, 100)
    # "controls": the built-in control reviewers' verdicts (issue 15), reported beside the reviewers.
    extra = [verdicts["controls"]] if "controls" in verdicts else []
    combined = pa.concat_tables([verdicts[r.run_id] for r in runs] + extra) if runs else None
    # the corpus truth (stored with each run) gives the injection-validity counts
    truth = store.read_table(runs[0].run_id, "truth") if runs else None
    all_metrics = paper_audit_metrics(combined, run_id="+".join(r.run_id for r in runs), n_interval=replicates,
                                      n_paired=replicates, n_permutations=replicates, truth=truth)  # fmt: skip
    all_rows = all_metrics.to_pylist()
    tracked = []
    for run in runs:
        outputs = store.read_outputs(run.run_id)
        own = [r | {"run_id": run.run_id} for r in all_rows if r["system"] == run.system_label]
        # issue 15: its controls, the audit's validity, resample and injection-validity counts go on its own run
        mine = table_from_rows(own + reviewer_audit_rows(all_rows, run.system_label, run.run_id), METRIC_SCHEMA)
        headline = {r["metric"]: r["value"] for r in mine.to_pylist() if r["stratum"] == "all"}
        # the natural-error track's headline apart (issue 15): never mixed into the injected rate
        headline |= {f"natural_{r['metric']}": r["value"] for r in mine.to_pylist() if r["stratum"] == "track=natural"
                     and r["metric"] in ("detection_rate", "detection_over_all", "undecided_injections")}
        outcomes = verdicts[run.run_id].column("outcome").to_pylist()
        natural = [json.loads(d or "{}").get("track") == "natural" for d in verdicts[run.run_id].column("detail_json").to_pylist()]
        scores = {
            **headline,
            "num_injections": sum(o in ("detected", "missed") and not n for o, n in zip(outcomes, natural, strict=True)),
            "num_natural_errata": sum(o in ("detected", "missed") and n for o, n in zip(outcomes, natural, strict=True)),
            "num_undecided": outcomes.count("undecided"),
            "num_flags_adjudicated": sum(o in ("confirmed_issue", "false_positive", "ambiguous") for o in outcomes),
            "num_unscored": outcomes.count("unscored"),
            "num_errors": sum(1 for e in outputs.column("error").to_pylist() if e is not None),
        }
        store.write_table(run.run_id, "verdicts", verdicts[run.run_id])
        system = close_system_run(store, run, outputs, failed, mine, scores)
        summary.systems.append(system)
        tracked.append((system, run, mine, mine.to_pylist(), {"verdicts.parquet": verdicts[run.run_id]}))
    report_dir = work_dir / "report"
    report_files = write_paper_report(report_dir, combined, metrics=all_metrics) if runs else []
    summary.report_uris, summary.leaderboard_uri = publish_report(store, summary.systems, runs, report_dir,
                                                                  report_files, PAPER_LEADERBOARD_METRICS)  # fmt: skip
    if tracking_uri:
        track_system_runs(store, tracked, tracking_uri, experiment, work_dir, report_dir, report_files,
                          submission)
    finish_system_runs(store, summary.systems)
    return summary


def count_outage_answers(outputs: pa.Table) -> int:
    """Answers that depended on a source or model provider that was down (`detail["outage_sources"]`,
    see storage/outages.py): never verdicts; while any is left the run's scores are withheld."""
    return sum(outage_mask(outputs))


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.3f}"


def _pct(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.1%}"


def _sort_key(value: Any) -> float:
    return -2.0 if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
