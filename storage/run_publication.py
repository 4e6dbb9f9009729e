"""Write what closing a run produces: each system run's metrics, scores and status next to its
outputs, the run's report and summary, and one MLflow run per system run. Scoring computes the
numbers; this module only stores and mirrors them."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from storage.mlflow_conventions import experiment_name, row_metrics
from storage.redaction import redact_text
from storage.result_json import result_json
from storage.store import Store
from storage.tracking import find_system_run, log_job_run, log_system_run, short_name

#: Characters a report folder name keeps; anything else (a "/", "..", spaces) becomes "_".
_UNSAFE_KEY = re.compile(r"[^A-Za-z0-9@._-]+")


@dataclass(frozen=True)
class AuditValidity:
    """Whether a system's figure stands against the audit's controls (paper audits, issue 21):
    `reasons` empty when valid; `checked` False when the audit has no controls."""

    checked: bool = False
    reasons: tuple[str, ...] = ()

    @property
    def invalid(self) -> bool:
        return bool(self.reasons)

    def to_json(self) -> dict[str, Any]:
        return {"checked": self.checked, "invalid": self.invalid, "reasons": list(self.reasons)}


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
    expected: int = 0
    scored: bool = True  # False: every output errored, so the system failed and has no scores
    first_error: str | None = None
    tracking_error: str | None = None
    """Why this run is not in MLflow (the tracking server failed after the work); None when logged."""
    validity: AuditValidity = field(default_factory=AuditValidity)
    """The audit's verdict on this figure (AUDIT INVALID reasons); unchecked for kinds without controls."""


def close_system_run(store: Store, run: Any, outputs: pa.Table, failed: dict[tuple[str, int], str],
                      metric_rows: pa.Table, scores: dict[str, Any], *, outage_items: int = 0, published: bool = True,
                      allow_incomplete: bool = False, first_error: str | None = None) -> SystemSummary:  # fmt: skip
    """Store one system's metrics and scores; what the summary shows of it. `first_error` set means
    the system failed (every output errored): it gets no metrics and its status says why.
    The run's status.json is written by `finish_system_runs`, once the report is out."""
    expected = run.manifest["corpus"]["items"]
    failed_shards = sum(1 for (rid, _), _e in failed.items() if rid == run.run_id)
    errored = sum(1 for e in outputs.column("error").to_pylist() if e is not None)
    status = "complete" if outputs.num_rows == expected else "incomplete"
    if outage_items:
        status = "incomplete: source outage" + (" (published by override)" if allow_incomplete else "")
    if first_error is not None:
        status = f"failed: every output errored ({errored} of {expected})"
        metric_rows = metric_rows.schema.empty_table()  # never a row of zeros for a system that said nothing
    store.write_table(run.run_id, "metrics", metric_rows)
    store.write_json(run.run_id, "scores.json", {**scores, "published": published, "status": status})
    return SystemSummary(run.system_label, run.run_id, status, scores, outputs.num_rows, errored, failed_shards,
                         store.uri_of(run.run_id, "shards"), outage_items=outage_items, published=published,
                         expected=expected, scored=first_error is None, first_error=first_error)  # fmt: skip


def finish_system_runs(store: Store, systems: list[SystemSummary]) -> None:
    """Write each run's status.json: last, so "complete" is never on disk before its report is."""
    for s in systems:
        store.close_run(s.run_id, "failed" if not s.scored else s.status, detail=s.status, items=s.items,
                        expected=s.expected, errored=s.errored, failed_shards=s.failed_shards,
                        outage_items=s.outage_items, published=s.published, first_error=s.first_error)  # fmt: skip


def safe_key_part(text: str) -> str:
    """One path component made from user input (corpus name, snapshot): never "..", never a "/"."""
    cleaned = _UNSAFE_KEY.sub("_", str(text)).strip("._")
    return cleaned or "unnamed"


def report_key(runs: list[Any]) -> str:
    """`reports/<corpus>__<snapshot>__<run set>`: runs of other systems on the same corpus and day get
    their own folder (the run-set hash names which run ids the report covers)."""
    if not runs:
        return "reports/empty"
    manifest = runs[0].manifest
    run_set = hashlib.sha256("\n".join(sorted(r.run_id for r in runs)).encode()).hexdigest()[:8]
    return "reports/" + "__".join((safe_key_part(manifest["corpus"]["name"]), safe_key_part(manifest["snapshot"]), run_set))


def publish_report(store: Store, systems: list[SystemSummary], runs: list[Any], report_dir: Path,
                   report_files: list[Path], columns: tuple[str, ...]) -> tuple[list[str], str]:  # fmt: skip
    """Copy the report next to the runs and write the run summary (the leaderboard's rows).
    Returns the report documents' URIs and the run summary's URI."""
    report_uris = []
    key = report_key(runs)
    for path in report_files:
        rel = path.relative_to(report_dir).as_posix()
        store.write_file(key, rel, path.read_bytes())
        if path.suffix in (".md", ".html"):
            report_uris.append(store.uri_of(key, rel))
    board = [{"system": s.system, "run_id": s.run_id, "status": s.status,
              **{m: s.scores.get(m) if s.scored and s.published else None for m in columns},
              "coverage": decided_share(s.scores), "num_scored": s.scores.get("num_scored"),
              "num_errors": s.scores.get("num_errors"), "num_parse_failures": s.scores.get("num_parse_failures"),
              "published": s.published, "failed": not s.scored, "first_error": s.first_error,
              "labelled": s.scores.get("labelled"), "null_reasons": s.scores.get("null_reasons") or {},
              "audit_validity": s.validity.to_json()}
             for s in systems]  # fmt: skip
    store.write_json(key, "run_summary.json", board)
    # A stable pointer per corpus and day to the newest report (the folders themselves never collide).
    latest = key.rsplit("__", 1)[0].removeprefix("reports/") + "__latest.json" if runs else "empty__latest.json"
    store.write_json("reports", latest, {"report": key, "run_ids": [s.run_id for s in systems],
                                          "documents": report_uris})  # fmt: skip
    return report_uris, store.uri_of(key, "run_summary.json")


def decided_share(scores: dict[str, Any]) -> float | None:
    """Share of items with a definite verdict (not UNCERTAIN, not errored): the leaderboard's coverage."""
    if scores.get("decided_fraction") is not None:
        return scores["decided_fraction"]
    return (scores.get("outputs") or {}).get("decided_share")


@dataclass(frozen=True)
class Submission:
    """One publish of a job's runs (a run_corpus.py submission, or a re-publish)."""

    started_at: float
    """epoch seconds when this submission's work began: its MLflow submission run starts here"""
    config: dict[str, Any] | None = None
    """this submission's config; None: the stored manifest's (a re-publish knows no other)"""
    code_revision: str | None = None
    """this submission's code; None: the stored manifest's"""


def job_id_of(run_ids: list[str]) -> str:
    """The job a set of runs belongs to: the same runs resumed or re-published are the same job."""
    return hashlib.sha256("\n".join(sorted(run_ids)).encode()).hexdigest()[:12]


def most_common(values: list[Any]) -> str | None:
    """The most frequent non-empty value (ties: the first seen); None when there is none."""
    counts: dict[Any, int] = {}
    for v in values:
        if v not in (None, ""):
            counts[v] = counts.get(v, 0) + 1
    return str(max(counts, key=counts.__getitem__)) if counts else None


def track_system_runs(store: Store, tracked: list[tuple], tracking_uri: str, experiment: str, work_dir: Path,
                      report_dir: Path, report_files: list[Path], submission: Submission | None = None) -> None:  # fmt: skip
    """One MLflow run per system run, nested under the job's run (storage/tracking.py says how
    they are keyed and why the UI's params and durations are true): params from the manifest,
    metrics, outputs and report as artifacts, and a nested run for this submission.

    A tracking failure never loses the work: it is kept on each system (`tracking_error`) for the
    caller to report, with how to publish later (`republish_runs`)."""
    import time

    submission = submission or Submission(started_at=time.time())
    runs_of_report = [run for _, run, *_ in tracked]  # the report covers these runs: its key names them
    down: str | None = None
    job_run_ids: dict[str, str] = {}  # experiment -> the job's MLflow run in it
    for system, run, metric_table, metric_rows, extra_tables in tracked:
        artifact_dir = work_dir / "mlflow" / system.run_id
        artifact_dir.mkdir(parents=True, exist_ok=True)
        outputs = store.read_outputs(system.run_id)
        pq.write_table(outputs, artifact_dir / "outputs.parquet")
        pq.write_table(metric_table, artifact_dir / "metrics.parquet")
        for name, table in extra_tables.items():
            pq.write_table(table, artifact_dir / name)
        (artifact_dir / "manifest.json").write_text(result_json(run.manifest))
        (artifact_dir / "scores.json").write_text(result_json(system.scores))
        metrics = row_metrics(metric_rows) if system.published else {}  # values, then <metric>_ci_low / _ci_high
        if system.scored:  # a failed system gets no metrics at all, not a row of zeros
            metrics.update(num_outage_items=float(system.outage_items), num_errored=float(system.errored),
                           num_failed_shards=float(system.failed_shards))  # fmt: skip
            said = (system.scores.get("outputs") or {}).get("labels") or {}
            metrics.update({f"said_{label.lower()}": float(n) for label, n in said.items()})
        manifest = run.manifest
        params = {  # fixed for a stored run: its id hashes them, the store refuses another shard size
            "corpus": manifest["corpus"]["name"],
            "corpus_version": manifest["corpus"]["version"],
            "system": system.system,
            "system_config_hash": manifest["system"]["config_hash"],
            "system_args": manifest["system"]["args"],
            "snapshot": manifest["snapshot"],
            "shard_size": manifest.get("shard_size"),
        }
        code_revision = submission.code_revision or manifest.get("code_revision")
        changing = {"code_revision": code_revision, "config": submission.config or manifest.get("config") or {}}
        # what the compare view lines runs up by: the provider's model id and the prompt (most common in the outputs)
        line_up = {"code_revision": code_revision, "corpus_version": manifest["corpus"]["version"],
                   "model_id": _most_common_column(outputs, "model_id"),
                   "prompt_hash": _most_common_column(outputs, "prompt_hash")}  # fmt: skip
        if down is not None:  # one dead server is not asked again per system
            system.tracking_error = down
            continue
        try:
            # a run already logged keeps its experiment (a re-publish lands where the run is)
            existing = find_system_run(tracking_uri, system.run_id, store.uri)
            name = existing[0] if existing else experiment_name(experiment, params["corpus"])
            if name not in job_run_ids:
                job_run_ids[name] = log_job_run(
                    tracking_uri, name, job_id=job_id_of([s.run_id for s, *_ in tracked]), storage=store.uri,
                    run_name=short_name("job", params["corpus"], time.strftime("%Y-%m-%d %H:%M", time.gmtime(
                        submission.started_at))), started_at=submission.started_at,
                    params={"corpus": params["corpus"], "snapshot": params["snapshot"],
                            "systems": ",".join(sorted(s.system for s, *_ in tracked))},
                )  # fmt: skip
            system.mlflow_run_id = log_system_run(
                tracking_uri, name, run_id=system.run_id,
                run_name=short_name(system.system, "·", str(params["snapshot"])),
                report_dir=report_dir if report_files else None, report_key=report_key(runs_of_report),
                params=params, metrics=metrics, artifact_dir=artifact_dir,
                tags={"status": system.status, "storage": store.uri_of(system.run_id),
                      **{k: v for k, v in line_up.items() if v is not None},
                      **({"first_error": system.first_error[:5000]} if system.first_error else {}),
                      **({"audit_validity": "invalid" if system.validity.invalid else "valid",
                          "audit_invalid_reasons": "\n".join(system.validity.reasons)[:5000]}
                         if system.validity.checked else {})},
                failed=not system.scored, storage=store.uri, changing_params=changing,
                parent_run_id=job_run_ids[name], started_at=submission.started_at,
            )  # fmt: skip
        except Exception as exc:  # the records are in the store: the leaderboard is printed, tracking is redone later
            down = system.tracking_error = redact_text(f"{type(exc).__name__}: {_first_line(exc)}")


def _most_common_column(table: pa.Table, column: str) -> str | None:
    return most_common(table.column(column).to_pylist()) if column in table.column_names else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:400]


@dataclass(frozen=True)
class StoredRun:
    """A finished run as the store holds it (what `track_system_runs` needs of a planned run)."""

    run_id: str
    system_label: str
    manifest: dict[str, Any]


DEFAULT_EXPERIMENT = "scrutineer/{corpus}"
"""run_corpus.py's default experiment (cluster.run_config.RunConfig.experiment): one per corpus."""


def republish_runs(store: Store, run_ids: list[str], tracking_uri: str, experiment: str | None,
                   work_dir: Path) -> list[SystemSummary]:  # fmt: skip
    """Log finished runs to MLflow again from their stored records alone: manifest, outputs,
    metrics, scores, status and the report next to them. For a run whose tracking failed after the
    work. An MLflow run already logged for a run id and storage root is reused, not duplicated;
    the publish is a submission of its own (started now, the stored manifest's config). It lands in
    the experiment the run is already in; a run never logged goes to `experiment`, else to the one
    its stored config names (run_corpus.py's default: `scrutineer/{corpus}`).

    Raises FileNotFoundError naming a run that is missing or was never scored."""
    import time

    submission = Submission(started_at=time.time())
    runs, systems, tracked = [], [], []
    for run_id in run_ids:
        manifest = store.read_json(run_id, "manifest.json")
        scores = store.read_json(run_id, "scores.json")
        status = store.read_json(run_id, "status.json")
        if manifest is None:
            raise FileNotFoundError(f"run {run_id!r}: no manifest.json under {store.uri}")
        if scores is None or status is None:
            raise FileNotFoundError(f"run {run_id!r} under {store.uri} has not been scored: run jobs/run_corpus.py "
                                    "with the same config again to finish it")  # fmt: skip
        system_spec = manifest["system"]
        run = StoredRun(run_id, system_spec.get("label") or system_spec["name"], manifest)
        runs.append(run)
        failed = set(store.failed_shards(run_id)) - store.finished_shards(run_id)
        system = SystemSummary(run.system_label, run_id, status.get("detail") or status["status"],
                               {k: v for k, v in scores.items() if k not in ("published", "status")},
                               int(status.get("items") or 0), int(status.get("errored") or 0), len(failed),
                               store.uri_of(run_id, "shards"), outage_items=int(status.get("outage_items") or 0),
                               published=bool(scores.get("published", True)), expected=int(status.get("expected") or 0),
                               scored=status["status"] != "failed", first_error=status.get("first_error"))  # fmt: skip
        systems.append(system)
        metric_table = store.read_table(run_id, "metrics")
        if metric_table is None:
            metric_table = pa.table({})
        eval_mode = (manifest.get("config") or {}).get("eval_mode", "conservative")
        rows = [r for r in metric_table.to_pylist()
                if r.get("eval_mode") in (None, eval_mode, "conservative") or eval_mode == "both"]  # fmt: skip
        extra = {}
        verdicts = store.read_table(run_id, "verdicts")
        if verdicts is not None:
            extra["verdicts.parquet"] = verdicts
        tracked.append((system, run, metric_table, rows if system.scored else [], extra))
    if experiment is None:
        experiment = (runs[0].manifest.get("config") or {}).get("experiment") or DEFAULT_EXPERIMENT if runs else ""
    report_dir = work_dir / "report"
    report_files = _download_report(store, report_key(runs), report_dir)
    track_system_runs(store, tracked, tracking_uri, experiment, work_dir, report_dir, report_files, submission)
    return systems


def _download_report(store: Store, key: str, into: Path) -> list[Path]:
    """The report documents stored under `key` (reports/...), copied into a local folder."""
    import pyarrow.fs as pafs

    files = []
    selector = pafs.FileSelector(store.path(key), recursive=True, allow_not_found=True)
    base = store.path(key)
    for info in store.fs.get_file_info(selector):
        if info.type != pafs.FileType.File or ".tmp-" in info.base_name:
            continue
        target = into / info.path[len(base):].lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        with store.fs.open_input_stream(info.path) as f:
            target.write_bytes(f.read())
        files.append(target)
    return files
