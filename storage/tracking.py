"""MLflow mirrors runs (Parquet in the store is the record): one MLflow run per
(corpus, system, snapshot), found again by its `scrutineer.run_id` tag when a run is resumed."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from storage.redaction import redact

EXPERIMENT_KIND_TAGS = {"mlflow.experimentKind": "custom_model_development"}

RUN_ID_TAG = "scrutineer.run_id"
_BAD_KEY_CHARS = re.compile(r"[^A-Za-z0-9_\-. /]")


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
        return experiment.experiment_id
    artifact_location = None
    if tracking_uri.startswith("sqlite:///"):
        # Keep local artifacts beside the local store instead of the process's cwd.
        db_path = Path(tracking_uri.removeprefix("sqlite:///"))
        artifact_location = (db_path.parent / "artifacts").resolve().as_uri()
    # MLflow 3's UI opens an experiment on its runs only with this tag (storage/mlflow_conventions.py)
    return client.create_experiment(name, artifact_location=artifact_location, tags=EXPERIMENT_KIND_TAGS)


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
) -> str:
    """Create or reuse the MLflow run of `run_id`, log params, metrics and the artifact folder;
    `failed` ends it FAILED (a system whose every output errored). Returns the MLflow run id."""
    client = _client(tracking_uri)
    experiment_id = _experiment_id(client, experiment, tracking_uri)
    tags = redact(tags or {})
    found = client.search_runs([experiment_id], filter_string=f"tags.`{RUN_ID_TAG}` = '{run_id}'", max_results=1)
    new_params: dict[str, str] = {}
    if found:
        mlflow_run_id = found[0].info.run_id
    else:
        run = client.create_run(experiment_id, run_name=run_name, tags={RUN_ID_TAG: run_id, **(tags or {})})
        mlflow_run_id = run.info.run_id
        new_params = {key[:250]: value for key, value in flatten("", redact(params)).items()}
    # params (new runs only: MLflow refuses to change one), metrics and tags in one batch
    from storage.mlflow_conventions import batch_entities

    client.log_batch(mlflow_run_id, *batch_entities(metrics, new_params, tags or {}))
    client.log_artifacts(mlflow_run_id, str(artifact_dir))
    client.set_terminated(mlflow_run_id, status="FAILED" if failed else "FINISHED")
    return mlflow_run_id
