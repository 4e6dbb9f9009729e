"""MLflow conventions, checked through the MLflow client against a local sqlite store: the
experiment kind tag, CI bounds beside metrics, rounding, undefined values absent, one batch."""

from __future__ import annotations

import math

from storage.mlflow_conventions import ci_metrics
from storage.tracking import log_system_run


def test_log_system_run_follows_the_conventions(tmp_path, monkeypatch, mlflow_sqlite):
    from mlflow.tracking import MlflowClient  # here, not at collection: importing MLflow costs seconds

    uri = mlflow_sqlite
    art = tmp_path / "art"
    art.mkdir()
    (art / "scores.json").write_text("{}")
    rows = [{"metric": "detection_rate", "stratum": "all", "value": 0.123456789, "ci_low": 0.1, "ci_high": 0.15},
            {"metric": "ece", "stratum": "tier=2", "value": math.nan, "ci_low": math.nan, "ci_high": math.nan}]
    metrics = {"detection_rate": 0.123456789, "ece/tier/2": math.nan, "num_errored": None, **ci_metrics(rows)}
    assert set(ci_metrics(rows)) == {"detection_rate_ci_low", "detection_rate_ci_high"}
    batches = []
    original = MlflowClient.log_batch
    monkeypatch.setattr(MlflowClient, "log_batch", lambda self, *a, **k: (batches.append(a), original(self, *a, **k)))
    ml = log_system_run(uri, "scrutineer", run_id="r1", run_name="r1", params={"corpus": "tiny", "config": {"x": 1}},
                        metrics=metrics, artifact_dir=art, tags={"status": "complete"})  # fmt: skip
    assert len(batches) == 1  # params, metrics and tags in one call
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(ml)
    work = run.data.metrics.pop("work_seconds")  # the submission's work: its Duration, in the same batch
    assert work >= 0 and (run.info.end_time - run.info.start_time) == round(work * 1000)
    assert run.data.metrics == {"detection_rate": 0.123457, "detection_rate_ci_low": 0.1, "detection_rate_ci_high": 0.15}
    assert run.data.params == {"corpus": "tiny", "config.x": "1"}
    assert run.data.tags["status"] == "complete" and run.data.tags["scrutineer.run_id"] == "r1"
    experiment = client.get_experiment(run.info.experiment_id)
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    # resuming the same run logs again without re-sending params (MLflow refuses to change one)
    again = log_system_run(uri, "scrutineer", run_id="r1", run_name="r1", params={"corpus": "other"},
                           metrics={"detection_rate": 0.2}, artifact_dir=art)  # fmt: skip
    assert again == ml and client.get_run(ml).data.params["corpus"] == "tiny"
    assert client.get_run(ml).data.metrics["detection_rate"] == 0.2
