"""How scrutineer names and finds things in MLflow, beside `storage.tracking` (which logs a run).

- A stored run's MLflow runs are found by the `scrutineer.run_id` tag (`RUN_ID_TAG`), in any
  experiment; the `storage` tag says where the run's records are.
- Artifacts that concern a stored run after it finished (a comparison with another run) are
  logged to its MLflow run under a folder of their own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from storage.tracking import RUN_ID_TAG

STORAGE_TAG = "storage"


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
