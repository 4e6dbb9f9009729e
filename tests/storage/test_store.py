"""The Store on local disk, run identity, secret redaction, and MLflow tracking of one run."""

from __future__ import annotations

import json

from storage.records import Output
from storage.redaction import REDACTED, redact
from storage.run_id import make_run_id
from storage.schemas import OUTPUT_SCHEMA, table_from_rows
from storage.store import Store
from storage.tracking import log_system_run


def shard(run_id: str, shard_id: int, ids: list[str], cost: float = 0.0):
    rows = [Output(i, label="VALID", confidence=0.7, cost_usd=cost, tokens_in=10, tokens_out=5).to_row(run_id, "s", shard_id)
            for i in ids]  # fmt: skip
    return table_from_rows(rows, OUTPUT_SCHEMA)


def test_shards_are_written_whole_and_read_back_in_shard_order(tmp_path):
    store = Store(str(tmp_path / "runs"))
    assert store.uri == str((tmp_path / "runs").resolve())  # absolute: workers run elsewhere
    store.open_run("r", {"run_id": "r"})
    store.mark_shard_failed("r", 1, "boom", 3)
    store.write_shard("r", 1, shard("r", 1, ["c", "d"], cost=0.5))
    store.write_shard("r", 0, shard("r", 0, ["a", "b"], cost=0.25))
    assert store.finished_shards("r") == {0, 1}
    assert store.failed_shards("r") == {}  # finishing a shard clears its failure record
    assert store.read_outputs("r").column("item_id").to_pylist() == ["a", "b", "c", "d"]
    assert not list((tmp_path / "runs").rglob("*.tmp-*"))  # no temp file left behind
    assert sum(store.read_outputs("r").column("cost_usd").to_pylist()) == 1.5


def test_open_run_keeps_the_first_manifest(tmp_path):
    store = Store(str(tmp_path))
    first = store.open_run("r", {"snapshot": "2026-01-01"})
    again = store.open_run("r", {"snapshot": "changed"})
    assert first == again == {"snapshot": "2026-01-01"}


def test_run_id_names_corpus_system_and_snapshot():
    run_id = make_run_id("dev public", "9b6391c236d2", "prescreen", "52bf0ff1f6a4", "2026-11-29")
    assert run_id == "dev-public@9b6391c236d2__prescreen@52bf0ff1f6a4__2026-11-29"


def test_secrets_never_reach_mlflow_params(tmp_path, mlflow_sqlite):
    params = {"system_args": {"model": "openai/x", "api_key": "sk-live-123", "nested": [{"auth_token": "t0k"}]}}
    assert redact(params)["system_args"]["api_key"] == REDACTED
    assert redact(params)["system_args"]["nested"][0]["auth_token"] == REDACTED
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    (artifacts / "scores.json").write_text(json.dumps({"mcc": 0.5}))
    uri = mlflow_sqlite
    run = log_system_run(uri, "t", run_id="r1", run_name="r1", params=params, metrics={"mcc": 0.5},
                         artifact_dir=artifacts)  # fmt: skip
    again = log_system_run(uri, "t", run_id="r1", run_name="r1", params=params, metrics={"mcc": 0.6},
                           artifact_dir=artifacts)  # fmt: skip
    assert run == again  # the same run id maps to the same MLflow run
    from mlflow.tracking import MlflowClient

    logged = MlflowClient(uri).get_run(run).data
    assert "sk-live-123" not in json.dumps(logged.params) and "t0k" not in json.dumps(logged.params)
    assert logged.params["system_args.api_key"] == REDACTED
    assert logged.metrics["mcc"] == 0.6
