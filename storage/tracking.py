"""MLflow mirrors runs (Parquet in the store is the record).

What the MLflow UI shows, and why it is true:

- One *system run* per stored run, keyed by (scrutineer run id, storage root): the tags
  `scrutineer.run_id` and `scrutineer.storage` (the redacted root URI). The same run id under
  another storage root (or written with another shard size, which needs another root) is another
  MLflow run, never a write into the first one's.
- Its params are what cannot change for a stored run (corpus, system, snapshot, shard_size, ...:
  the run id hashes them, the store refuses another shard size), logged once at creation.
  What may change between submissions (the config, the code revision) is not a param there
  (MLflow params are immutable, so a second value would be refused or silently stale): the
  system run carries the latest values as tags `scrutineer.param.<name>`, rewritten on each publish.
- Each publish (a submission of the job, or `jobs/publish_run.py`) is a *submission run* nested
  under the system run (`mlflow.parentRunId`), with its own params (that submission's config and
  code revision) and its own start/end: its Duration is the work of that submission. The system
  run starts with the first submission; its end is set to start + the submissions' summed work
  (MLflow cannot move a start), so its Duration is the work, not the idle time between resumes;
  the same figure is the metric `work_seconds`.
- The system run stays under the job that created it; its `report/` holds that run set's report,
  and a report over another run set goes to `reports/<report folder>/`, never over it.
- One *job run* per (job, storage root) above the system runs (`scrutineer.job`, params corpus,
  snapshot, systems); the job id hashes the job's run ids, so a resumed job or a re-publish of
  the same runs finds the same parent.
"""

from __future__ import annotations

import math
import os
import re
import time
from pathlib import Path
from typing import Any

from storage.redaction import redact, redact_text

EXPERIMENT_KIND_TAGS = {"mlflow.experimentKind": "custom_model_development"}

RUN_ID_TAG = "scrutineer.run_id"
STORAGE_KEY_TAG = "scrutineer.storage"
JOB_TAG = "scrutineer.job"
PARAM_TAG_PREFIX = "scrutineer.param."
SUBMISSION_OF_TAG = "scrutineer.submission_of"
SUBMISSION_TAG = "scrutineer.submission"
PARENT_TAG = "mlflow.parentRunId"
REPORT_TAG = "scrutineer.report"
"""The report (its store key, reports/<corpus>__<snapshot>__<run set>) in the system run's `report/`."""
REPORT_ARTIFACTS = "report"
OTHER_REPORTS_ARTIFACTS = "reports"
WORK_SECONDS = "work_seconds"
#: `search_runs` filter for system runs alone (not the job runs above them nor their submissions)
SYSTEM_RUNS = f"tags.`{RUN_ID_TAG}` LIKE '%'"
_BAD_KEY_CHARS = re.compile(r"[^A-Za-z0-9_\-. /]")
DIGITS = 6
"""Metric values are logged rounded to this many decimals (a stored float's last bits are noise in the UI)."""


TRACKING_URI_VARIABLES = ("SCRUTINEER_TRACKING_URI", "MLFLOW_TRACKING_URI")


def tracking_uri_from_environment() -> str | None:
    """The tracking server named in the environment (dev services' env.sh, a cluster's job env)."""
    return next((os.environ[v] for v in TRACKING_URI_VARIABLES if os.environ.get(v)), None)


def default_tracking_uri(base: Path | None = None) -> str:
    """A local sqlite store under ./mlruns."""
    folder = (base or Path.cwd()) / "mlruns"
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder.resolve()}/mlflow.db"


def _client(tracking_uri: str):
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=tracking_uri)


def _experiment_id(client, name: str, tracking_uri: str) -> str:
    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        _tag_experiment_kind(client, experiment)
        return experiment.experiment_id
    artifact_location = None
    if tracking_uri.startswith("sqlite:///"):
        # Keep local artifacts beside the local store instead of the process's cwd.
        db_path = Path(tracking_uri.removeprefix("sqlite:///"))
        artifact_location = (db_path.parent / "artifacts").resolve().as_uri()
    # MLflow 3's UI opens an experiment on its runs only with this tag (storage/mlflow_conventions.py)
    return client.create_experiment(name, artifact_location=artifact_location, tags=EXPERIMENT_KIND_TAGS)


def _tag_experiment_kind(client, experiment) -> None:
    """An experiment made before (or by hand) without the kind tag opens on the empty GenAI overview."""
    for key, value in EXPERIMENT_KIND_TAGS.items():
        if experiment.tags.get(key) != value:
            client.set_experiment_tag(experiment.experiment_id, key, value)


def short_name(*parts: str, limit: int = 48) -> str:
    """A run name of `parts` joined by spaces, at most `limit` characters: cut between words (then "…"),
    never inside one, so what the UI shows is still a word."""
    text = " ".join(p for p in parts if p)
    if len(text) <= limit:
        return text
    words, out = text.split(" "), ""
    for w in words:
        if len(out) + len(w) + (1 if out else 0) > limit - 1:
            break
        out = f"{out} {w}" if out else w
    return (out.rstrip(" ·") or text[: limit - 1]) + "…"


def find_system_run(tracking_uri: str, run_id: str, storage: str) -> tuple[str, str] | None:
    """(experiment name, MLflow run id) of the system run of (`run_id`, `storage`) in any experiment:
    a stored run has one MLflow run, wherever it was first logged."""
    client = _client(tracking_uri)
    storage = redact_text(storage)
    experiments = {e.experiment_id: e.name for e in client.search_experiments()}
    if not experiments:
        return None
    pattern = run_id.replace("'", "_")  # one search over every experiment, compared exactly in Python
    for run in client.search_runs(list(experiments), filter_string=f"tags.`{RUN_ID_TAG}` LIKE '{pattern}'",
                                  max_results=1000):  # fmt: skip
        if run.data.tags.get(RUN_ID_TAG) == run_id and run.data.tags.get(STORAGE_KEY_TAG, "") == storage:
            return experiments[run.info.experiment_id], run.info.run_id
    return None


def metric_key(metric: str, stratum: str) -> str:
    key = metric if stratum in ("all", "", None) else f"{metric}/{stratum.replace('=', '/')}"
    return _BAD_KEY_CHARS.sub("_", key)


def flatten(prefix: str, obj: Any) -> dict[str, str]:
    if isinstance(obj, dict):
        out: dict[str, str] = {}
        for k, v in obj.items():
            out.update(flatten(f"{prefix}.{k}" if prefix else str(k), v))
        return out
    return {prefix: str(obj)[:6000]}


def _params(params: dict[str, Any]) -> dict[str, str]:
    return {key[:250]: value for key, value in flatten("", redact(params)).items()}


def finite_number(value: Any) -> bool:
    return value is not None and not isinstance(value, bool) and math.isfinite(float(value))


def batch_entities(metrics: dict[str, Any], params: dict[str, str], tags: dict[str, str]) -> tuple[list, list, list]:
    """(metrics, params, tags) as MLflow entities for `log_batch`: metric values rounded, undefined ones left out."""
    from mlflow.entities import Metric, Param, RunTag

    now = int(time.time() * 1000)
    ms = [Metric(k, round(float(v), DIGITS), now, 0) for k, v in metrics.items() if finite_number(v)]
    return ms, [Param(k, str(v)) for k, v in params.items()], [RunTag(k, str(v)) for k, v in tags.items()]


def _ms(seconds: float | None) -> int:
    return int((time.time() if seconds is None else seconds) * 1000)


def _find(client, experiment_id: str, tag: str, value: str, storage: str) -> str | None:
    """The MLflow run tagged `tag = value` under storage root `storage`: compared in Python, after a
    LIKE search where a quote (which a filter string cannot hold) matches any one character."""
    pattern = value.replace("'", "_")
    for run in client.search_runs([experiment_id], filter_string=f"tags.`{tag}` LIKE '{pattern}'", max_results=1000):
        if run.data.tags.get(tag) == value and run.data.tags.get(STORAGE_KEY_TAG, "") == storage:
            return run.info.run_id
    return None


def log_job_run(tracking_uri: str, experiment: str, *, job_id: str, storage: str, run_name: str,
                params: dict[str, Any], started_at: float | None = None) -> str:  # fmt: skip
    """Create or reuse the parent run of job `job_id` under `storage`; its end time is now."""
    client = _client(tracking_uri)
    experiment_id = _experiment_id(client, experiment, tracking_uri)
    storage = redact_text(storage)
    found = _find(client, experiment_id, JOB_TAG, job_id, storage)
    if found is None:
        run = client.create_run(experiment_id, run_name=run_name, start_time=_ms(started_at),
                                tags={JOB_TAG: job_id, STORAGE_KEY_TAG: storage})  # fmt: skip
        found = run.info.run_id
        client.log_batch(found, *batch_entities({}, _params(params), {}))
    client.set_terminated(found, status="FINISHED", end_time=_ms(None))
    return found


def log_system_run(
    tracking_uri: str,
    experiment: str,
    *,
    run_id: str,
    run_name: str,
    params: dict[str, Any],
    metrics: dict[str, float],
    artifact_dir: Path,
    tags: dict[str, str] | None = None,
    failed: bool = False,
    storage: str = "",
    changing_params: dict[str, Any] | None = None,
    parent_run_id: str | None = None,
    started_at: float | None = None,
    report_dir: Path | None = None,
    report_key: str | None = None,
) -> str:
    """Create or reuse the MLflow system run of (`run_id`, `storage`) and log one submission to it:
    `params` once (at creation), `changing_params` as `scrutineer.param.*` tags on it and as the
    params of a new nested submission run that starts at `started_at` (epoch seconds; default now)
    and ends now. Metrics, tags and the artifact folder go to the system run; `failed` ends both
    FAILED (a system whose every output errored). Returns the system run's MLflow id.

    The run belongs to the job that created it (`parent_run_id` is set once). Its report
    (`report_dir`, the store's `report_key`) goes to `report/` when that folder holds no report or
    this one; a report over another run set (drift's one-system rerun that resumed this run) goes
    to `reports/<key>/` instead, never over it. The system run's Duration is the sum of its
    submissions' work (its end is set to start + that sum), also logged as `work_seconds`."""
    client = _client(tracking_uri)
    experiment_id = _experiment_id(client, experiment, tracking_uri)
    storage = redact_text(storage)
    tags = redact(tags or {})
    changing = _params(changing_params or {})
    tags.update({f"{PARAM_TAG_PREFIX}{k}"[:250]: v for k, v in changing.items()})
    begin = _ms(started_at)  # one instant: the submission and (when new) the system run start here
    mlflow_run_id = _find(client, experiment_id, RUN_ID_TAG, run_id, storage)
    new_params: dict[str, str] = {}
    report_in: str | None = None  # the report key already in report/, if any
    if mlflow_run_id is None:
        creation_tags = {RUN_ID_TAG: run_id, STORAGE_KEY_TAG: storage}
        if parent_run_id:  # only at creation: a later job that resumes the run does not adopt it
            creation_tags[PARENT_TAG] = parent_run_id
        run = client.create_run(experiment_id, run_name=run_name, start_time=begin, tags=creation_tags)
        mlflow_run_id = run.info.run_id
        new_params = _params(params)  # params only on a new run: MLflow refuses to change one
    else:
        run = client.get_run(mlflow_run_id)
        report_in = run.data.tags.get(REPORT_TAG)
    system_start = run.info.start_time
    report_path = REPORT_ARTIFACTS
    if report_key and report_in not in (None, report_key):
        report_path = f"{OTHER_REPORTS_ARTIFACTS}/{report_key.rsplit('/', 1)[-1]}"
    elif report_key:
        tags[REPORT_TAG] = report_key
    earlier = client.search_runs([experiment_id], filter_string=f"tags.`{PARENT_TAG}` = '{mlflow_run_id}'",
                                 max_results=1000)  # fmt: skip
    number = 1 + sum(1 for r in earlier if SUBMISSION_OF_TAG in r.data.tags)
    tags[SUBMISSION_TAG] = str(number)
    end = _ms(None)  # this submission's work ends here (uploading what it made is not the run's work)
    # MLflow's Duration is end - start and a run's start cannot move: ending the stored run at start +
    # the submissions' summed work makes its Duration that work, not the idle time between resumes.
    work_ms = end - begin + sum(max(0, (r.info.end_time or 0) - r.info.start_time)
                                for r in earlier if SUBMISSION_OF_TAG in r.data.tags)  # fmt: skip
    metrics = {**metrics, WORK_SECONDS: work_ms / 1000}
    client.log_batch(mlflow_run_id, *batch_entities(metrics, new_params, tags))  # one batch for the system run
    client.log_artifacts(mlflow_run_id, str(artifact_dir))
    if report_dir is not None and report_dir.is_dir() and any(report_dir.iterdir()):
        client.log_artifacts(mlflow_run_id, str(report_dir), artifact_path=report_path)
    status = "FAILED" if failed else "FINISHED"
    submission = client.create_run(experiment_id, run_name=short_name(run_name.split(" · ")[0], f"· submission {number}"),
                                   start_time=begin,
                                   tags={PARENT_TAG: mlflow_run_id, SUBMISSION_OF_TAG: run_id, STORAGE_KEY_TAG: storage,
                                         SUBMISSION_TAG: str(number)})  # fmt: skip
    if changing:
        client.log_batch(submission.info.run_id, *batch_entities({}, changing, {}))
    client.set_terminated(submission.info.run_id, status=status, end_time=end)
    client.set_terminated(mlflow_run_id, status=status, end_time=system_start + work_ms)
    return mlflow_run_id
