"""How scrutineer names and finds things in MLflow, beside `storage.tracking` (which logs a run).

- A stored run is one MLflow *system run*, keyed by (`scrutineer.run_id`, `scrutineer.storage`:
  the redacted storage root), nested under its job's run (`scrutineer.job`); each publish adds a
  nested *submission run* with that submission's params and duration (storage/tracking.py says
  why). A run id's MLflow runs are found by `RUN_ID_TAG` in any experiment (one per storage
  root); the `storage` tag says where the run's records are.
- Tags the compare view lines runs up by: `model_id` and `prompt_hash` (the most common value in
  the outputs), `code_revision`, `corpus_version`; what may change between submissions is current
  in `scrutineer.param.<name>` tags (MLflow params are immutable).
- One experiment per corpus: the configured name's `{corpus}` (default `scrutineer/{corpus}`)
  becomes the corpus name, so a corpus's runs over time sit side by side.
- The experiment carries `mlflow.experimentKind = custom_model_development` (MLflow 3's UI
  opens an experiment on its runs only with it; without it, it opens on traces).
- A metric's 95% interval is logged beside it as `<metric>_ci_low` / `<metric>_ci_high`; values
  are rounded to `DIGITS` decimals (a stored float's last bits are noise in the UI); NaN and None
  are not logged at all (an undefined number is absent, not 0).
- Params, metrics and tags go in one `MlflowClient.log_batch` call (the client chunks it).
- Artifacts that concern a stored run after it finished (a comparison with another run) are
  logged to its MLflow run under a folder of their own.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# One direction only: the logging (storage.tracking) never imports this module.
from storage.tracking import (
    DIGITS,
    EXPERIMENT_KIND_TAGS,
    RUN_ID_TAG,
    SYSTEM_RUNS,
    batch_entities,
    finite_number,
    metric_key,
)

__all__ = ["EXPERIMENT_KIND_TAGS", "RUN_ID_TAG", "STORAGE_TAG", "SYSTEM_RUNS", "DIGITS", "batch_entities", "ci_metrics",
           "experiment_name"]

STORAGE_TAG = "storage"


def experiment_name(configured: str, corpus: str) -> str:
    """The MLflow experiment of a corpus's runs: `configured` with `{corpus}` filled in."""
    return configured.replace("{corpus}", corpus)


def ci_metrics(metric_rows: Iterable[dict[str, Any]]) -> dict[str, float]:
    """`<key>_ci_low` / `<key>_ci_high` for every METRIC_SCHEMA row with a finite interval."""
    out: dict[str, float] = {}
    for r in metric_rows:
        key = metric_key(r["metric"], r["stratum"])
        for bound in ("ci_low", "ci_high"):
            if finite_number(r.get(bound)):
                out[f"{key}_{bound}"] = float(r[bound])
    return out


def row_metrics(metric_rows: list[dict[str, Any]]) -> dict[str, float]:
    """What a published system run logs to MLflow from its METRIC_SCHEMA rows: each finite value
    under `metric_key` (`<metric>` or `<metric>/<stratum>`), then its `_ci_low` / `_ci_high`."""
    metrics = {metric_key(r["metric"], r["stratum"]): r["value"] for r in metric_rows if finite_number(r["value"])}
    return {**metrics, **ci_metrics(metric_rows)}


@dataclass(frozen=True)
class TrackedRun:
    mlflow_run_id: str
    run_id: str  # the scrutineer run id
    storage: str | None  # the run's folder in the store (the `storage` tag), when logged


def _client(tracking_uri: str):
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=tracking_uri)


def _all_experiment_ids(client) -> list[str]:
    return [e.experiment_id for e in client.search_experiments()]


def tracked_runs_of(tracking_uri: str, run_id: str) -> list[TrackedRun]:
    """Every MLflow run tagged with scrutineer run `run_id` (usually one)."""
    client = _client(tracking_uri)
    ids = _all_experiment_ids(client)
    if not ids:
        return []
    found = client.search_runs(ids, filter_string=f"tags.`{RUN_ID_TAG}` = '{run_id}'")
    return [TrackedRun(r.info.run_id, run_id, r.data.tags.get(STORAGE_TAG)) for r in found]


def tracked_run(tracking_uri: str, mlflow_run_id: str) -> TrackedRun | None:
    """The scrutineer run behind MLflow run `mlflow_run_id`; None when it has no such tag or does not exist."""
    from mlflow.exceptions import MlflowException

    try:
        run = _client(tracking_uri).get_run(mlflow_run_id)
    except MlflowException:
        return None
    run_id = run.data.tags.get(RUN_ID_TAG)
    return TrackedRun(mlflow_run_id, run_id, run.data.tags.get(STORAGE_TAG)) if run_id else None


def log_files(tracking_uri: str, mlflow_run_id: str, files: list[Path], artifact_path: str) -> None:
    """Log `files` as artifacts of a (possibly finished) MLflow run under `artifact_path`."""
    client = _client(tracking_uri)
    for f in files:
        client.log_artifact(mlflow_run_id, str(f), artifact_path=artifact_path)
