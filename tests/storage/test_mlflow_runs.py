"""MLflow that tells the truth (issue 16), checked through the MLflow client against a real local
sqlite store: a stored run is one MLflow run per (run id, storage root); a resumed run's params
and durations are those of its submissions; one job run above its system runs; line-up tags."""

from __future__ import annotations

import calendar
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from storage.run_publication import (
    Submission,
    SystemSummary,
    job_id_of,
    most_common,
    republish_runs,
    track_system_runs,
)
from storage.schemas import OUTPUT_SCHEMA
from storage.store import Store
from storage.tracking import (
    JOB_TAG,
    PARAM_TAG_PREFIX,
    PARENT_TAG,
    RUN_ID_TAG,
    STORAGE_KEY_TAG,
    SUBMISSION_OF_TAG,
    WORK_SECONDS,
)

SNAPSHOT = "2026-11-29"

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient


@dataclass
class StoredRun:  # what track_system_runs reads of cluster.run_plan.PlannedRun
    run_id: str
    system_label: str
    manifest: dict


def _manifest(run_id: str, system: str, shard_size: int, workers: int) -> dict:
    return {"run_id": run_id, "corpus": {"name": "tiny", "version": "v1", "items": 3},
            "system": {"name": system, "label": system, "args": {"model": "m"}, "config_hash": "h" + system},
            "snapshot": SNAPSHOT, "shard_size": shard_size, "code_revision": "abc123",
            "config": {"workers": workers, "api_key": "sk-live-123"}}  # fmt: skip


def _outputs(run_id: str, system: str, models: list[str | None]) -> pa.Table:
    rows = [{"run_id": run_id, "system": system, "item_id": f"i{n}", "shard_id": 0, "label": "VALID",
             "model_id": model, "prompt_hash": "p-" + (model or "none")} for n, model in enumerate(models)]  # fmt: skip
    return pa.Table.from_pylist(rows, schema=OUTPUT_SCHEMA)


def _stored(root: Path, run_id: str, system: str = "llm", *, shard_size: int = 2, workers: int = 2,
            models: tuple = ("gpt-x-0613", "gpt-x-0613", "gpt-y")) -> tuple[Store, StoredRun]:  # fmt: skip
    store = Store(str(root))
    manifest = store.open_run(run_id, _manifest(run_id, system, shard_size, workers))
    store.write_shard(run_id, 0, _outputs(run_id, system, list(models)))
    return store, StoredRun(run_id, system, manifest)


def _publish(store: Store, runs: list[StoredRun], uri: str, work: Path, submission: Submission | None = None,
             report: str | None = None) -> list:
    tracked, systems = [], []
    for run in runs:
        system = SystemSummary(run.system_label, run.run_id, "complete", {"detection_rate": 0.5}, 3, 0, 0, "x",
                               expected=3)  # fmt: skip
        rows = [{"metric": "detection_rate", "stratum": "all", "value": 0.5, "ci_low": 0.4, "ci_high": 0.6}]
        systems.append(system)
        tracked.append((system, run, pa.table({"metric": ["detection_rate"]}), rows, {}))
    work.mkdir(parents=True, exist_ok=True)
    files = []
    if report is not None:  # the report page of this publish's run set
        (work / "report").mkdir(exist_ok=True)
        files = [work / "report" / "report.html", work / "report" / "report.md"]
        for f in files:
            f.write_text(report)
    track_system_runs(store, tracked, uri, "scrutineer/{corpus}", work, work / "report", files, submission)
    assert all(s.tracking_error is None for s in systems), [s.tracking_error for s in systems]
    return systems


def _runs(client: MlflowClient, tag: str, value: str) -> list:
    ids = [e.experiment_id for e in client.search_experiments()]
    return client.search_runs(ids, filter_string=f"tags.`{tag}` = '{value}'")


@pytest.fixture
def tracking(mlflow_sqlite) -> tuple[str, MlflowClient]:
    from mlflow.tracking import MlflowClient  # here, not at collection: importing MLflow costs seconds

    return mlflow_sqlite, MlflowClient(tracking_uri=mlflow_sqlite)


def test_two_storage_roots_are_two_mlflow_runs(tmp_path, tracking):
    uri, client = tracking
    a_store, a_run = _stored(tmp_path / "root-a", "r1", shard_size=2)
    b_store, b_run = _stored(tmp_path / "root-b", "r1", shard_size=5)
    [a] = _publish(a_store, [a_run], uri, tmp_path / "wa")
    [b] = _publish(b_store, [b_run], uri, tmp_path / "wb")
    assert a.mlflow_run_id != b.mlflow_run_id
    assert len(_runs(client, RUN_ID_TAG, "r1")) == 2
    ra, rb = client.get_run(a.mlflow_run_id).data, client.get_run(b.mlflow_run_id).data
    assert (ra.params["shard_size"], rb.params["shard_size"]) == ("2", "5")  # each run's own, not the first's
    assert ra.tags[STORAGE_KEY_TAG] == a_store.uri and rb.tags[STORAGE_KEY_TAG] == b_store.uri
    # the same root again is the same MLflow run
    [again] = _publish(a_store, [a_run], uri, tmp_path / "wa2")
    assert again.mlflow_run_id == a.mlflow_run_id and len(_runs(client, RUN_ID_TAG, "r1")) == 2


def test_resumed_run_has_truthful_params_and_durations(tmp_path, tracking):
    uri, client = tracking
    store, run = _stored(tmp_path / "root", "r1", workers=2)
    first = Submission(started_at=time.time() - 0.2, config={"workers": 2}, code_revision="abc123")
    [s1] = _publish(store, [run], uri, tmp_path / "w1", first)
    time.sleep(2.0)  # the gap between two submissions of one run: no one's work
    second = Submission(started_at=time.time() - 0.3, config={"workers": 4}, code_revision="def456")
    before_publish = time.time()
    [s2] = _publish(store, [run], uri, tmp_path / "w2", second)
    after_publish = time.time()
    assert s1.mlflow_run_id == s2.mlflow_run_id and len(_runs(client, RUN_ID_TAG, "r1")) == 1
    system = client.get_run(s2.mlflow_run_id)
    # what changed is current on the system run (as tags: MLflow params are immutable) ...
    assert system.data.tags[PARAM_TAG_PREFIX + "config.workers"] == "4"
    assert system.data.tags[PARAM_TAG_PREFIX + "code_revision"] == "def456"
    assert system.data.tags["code_revision"] == "def456"
    assert "config.workers" not in system.data.params and system.data.params["shard_size"] == "2"
    # ... and each submission is a nested run with its own params and its own duration
    subs = sorted(_runs(client, SUBMISSION_OF_TAG, "r1"), key=lambda r: r.info.start_time)
    assert [r.data.tags[PARENT_TAG] for r in subs] == [s1.mlflow_run_id] * 2
    assert [r.data.params["config.workers"] for r in subs] == ["2", "4"]
    assert [r.data.params["code_revision"] for r in subs] == ["abc123", "def456"]
    first_sub, last = subs[0].info, subs[-1].info
    assert last.start_time == int(second.started_at * 1000)
    assert last.start_time - first_sub.end_time >= 1500  # the gap between the submissions: no one's work
    assert last.end_time - last.start_time >= 250  # the work of the last submission began before its publish
    # the stored run's Duration (end - start) is its submissions' work summed, never the idle gap between them
    work = sum(r.info.end_time - r.info.start_time for r in subs)
    assert system.info.start_time == int(first.started_at * 1000)
    assert system.info.end_time - system.info.start_time == work
    assert system.info.end_time <= last.end_time - 1500
    assert system.data.metrics[WORK_SECONDS] == pytest.approx(work / 1000, abs=1e-3)
    # the last submission ends when its publish does, however slow the machine
    assert int(before_publish * 1000) <= last.end_time <= int(after_publish * 1000) + 1
    assert system.info.status == "FINISHED" and all(r.info.status == "FINISHED" for r in subs)


def test_one_job_run_above_its_system_runs_and_republish_reuses_them(tmp_path, tracking):
    uri, client = tracking
    store, llm = _stored(tmp_path / "root", "r-llm", "llm")
    _, rules = _stored(tmp_path / "root", "r-rules", "rules", models=(None, None, None))
    systems = _publish(store, [llm, rules], uri, tmp_path / "w1")
    [job] = _runs(client, JOB_TAG, job_id_of(["r-llm", "r-rules"]))
    assert job.data.params == {"corpus": "tiny", "snapshot": SNAPSHOT, "systems": "llm,rules"}
    assert job.data.tags[STORAGE_KEY_TAG] == store.uri and job.info.status == "FINISHED"
    for s in systems:
        assert client.get_run(s.mlflow_run_id).data.tags[PARENT_TAG] == job.info.run_id
    assert client.get_experiment(job.info.experiment_id).name == "scrutineer/tiny"
    # re-publishing the stored runs (jobs/publish_run.py) finds the same job and system runs
    store.write_table("r-llm", "metrics", pa.table({"metric": ["detection_rate"], "stratum": ["all"], "value": [0.5]}))
    for r in ("r-llm", "r-rules"):
        store.write_json(r, "scores.json", {"detection_rate": 0.5, "published": True, "status": "complete"})
        store.close_run(r, "complete", items=3, expected=3)
    again = republish_runs(store, ["r-llm", "r-rules"], uri, "scrutineer/{corpus}", tmp_path / "w2")
    assert [s.mlflow_run_id for s in again] == [s.mlflow_run_id for s in systems]
    assert len(_runs(client, JOB_TAG, job_id_of(["r-llm", "r-rules"]))) == 1
    assert len(_runs(client, SUBMISSION_OF_TAG, "r-llm")) == 2
    # a re-publish knows only the stored config: secrets in it never reach MLflow
    republished = client.get_run(again[0].mlflow_run_id).data.tags
    assert republished[PARAM_TAG_PREFIX + "config.workers"] == "2"
    assert "sk-live-123" not in str(republished) and "sk-live-123" not in str(
        [r.data.params for r in _runs(client, SUBMISSION_OF_TAG, "r-llm")])


def test_line_up_tags(tmp_path, tracking):
    uri, client = tracking
    store, llm = _stored(tmp_path / "root", "r-llm", "llm", models=("gpt-y", "gpt-x-0613", "gpt-x-0613", None))
    _, rules = _stored(tmp_path / "root", "r-rules", "rules", models=(None, None))
    s_llm, s_rules = _publish(store, [llm, rules], uri, tmp_path / "w")
    tags = client.get_run(s_llm.mlflow_run_id).data.tags
    assert tags["model_id"] == "gpt-x-0613" and tags["prompt_hash"] == "p-gpt-x-0613"
    assert tags["code_revision"] == "abc123" and tags["corpus_version"] == "v1"
    rules_tags = client.get_run(s_rules.mlflow_run_id).data.tags
    assert "model_id" not in rules_tags and rules_tags["prompt_hash"] == "p-none"  # no model: no tag, not "None"


def test_most_common():
    assert most_common(["a", None, "b", "b", ""]) == "b"
    assert most_common([None, ""]) is None


def test_through_a_tracking_server(tmp_path, mlflow_server):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_server)
    a_store, a_run = _stored(tmp_path / "root-a", "r1", shard_size=2)
    b_store, b_run = _stored(tmp_path / "root-b", "r1", shard_size=5)
    [a1] = _publish(a_store, [a_run], mlflow_server, tmp_path / "w1", Submission(time.time(), {"workers": 2}))
    time.sleep(1.5)
    resumed = Submission(time.time() - 0.2, {"workers": 3})
    [a2] = _publish(a_store, [a_run], mlflow_server, tmp_path / "w2", resumed)
    [b] = _publish(b_store, [b_run], mlflow_server, tmp_path / "w3")
    assert a1.mlflow_run_id == a2.mlflow_run_id != b.mlflow_run_id
    system = client.get_run(a2.mlflow_run_id)
    assert system.data.params["shard_size"] == "2" and client.get_run(b.mlflow_run_id).data.params["shard_size"] == "5"
    assert system.data.tags[PARAM_TAG_PREFIX + "config.workers"] == "3"
    jobs = {r.data.tags[STORAGE_KEY_TAG]: r.info.run_id for r in _runs(client, JOB_TAG, job_id_of(["r1"]))}
    assert len(jobs) == 2 and system.data.tags[PARENT_TAG] == jobs[a_store.uri]  # one job per storage root
    last = max((r for r in _runs(client, SUBMISSION_OF_TAG, "r1") if r.data.tags[PARENT_TAG] == a2.mlflow_run_id),
               key=lambda r: r.info.start_time).info  # fmt: skip
    assert last.start_time == int(resumed.started_at * 1000)
    assert system.info.end_time - system.info.start_time == sum(  # Duration: the submissions' work
        r.info.end_time - r.info.start_time for r in _runs(client, SUBMISSION_OF_TAG, "r1")
        if r.data.tags[PARENT_TAG] == a2.mlflow_run_id)
    assert client.list_artifacts(a2.mlflow_run_id, "") and "outputs.parquet" in {
        f.path for f in client.list_artifacts(a2.mlflow_run_id)}


def test_a_quote_in_a_key_still_finds_its_run(tmp_path, tracking):
    from storage.tracking import log_system_run

    uri, _ = tracking
    art = tmp_path / "art"
    art.mkdir()
    (art / "scores.json").write_text("{}")
    first, again, other = (log_system_run(uri, "t", run_id=r, run_name=r, params={}, metrics={}, artifact_dir=art,
                                          storage="/data/o'brien/runs") for r in ("it's", "it's", "itXs"))  # fmt: skip
    assert first == again != other


def _read_artifact(client: MlflowClient, mlflow_run_id: str, path: str, into: Path) -> str:
    return Path(client.download_artifacts(mlflow_run_id, path, str(into))).read_text()


def _store_scores(store: Store, run_id: str) -> None:
    store.write_table(run_id, "metrics", pa.table({"metric": ["detection_rate"], "stratum": ["all"], "value": [0.5]}))
    store.write_json(run_id, "scores.json", {"detection_rate": 0.5, "published": True, "status": "complete"})
    store.close_run(run_id, "complete", items=3, expected=3)


def test_a_report_over_another_run_set_never_replaces_the_runs_report(tmp_path, tracking):
    """drift.py resumes today's field_match run alone: its one-system report goes beside the job's, not over it."""
    uri, client = tracking
    store, llm = _stored(tmp_path / "root", "r-llm", "llm")
    _, rules = _stored(tmp_path / "root", "r-rules", "rules")
    [s_llm, _] = _publish(store, [llm, rules], uri, tmp_path / "w1", report="job report: llm and rules")
    parent = client.get_run(s_llm.mlflow_run_id).data.tags[PARENT_TAG]
    [again] = _publish(store, [llm], uri, tmp_path / "w2", report="one-system report")
    assert again.mlflow_run_id == s_llm.mlflow_run_id
    for name in ("report.html", "report.md"):
        assert _read_artifact(client, again.mlflow_run_id, f"report/{name}", tmp_path / "a") == "job report: llm and rules"
    [other] = [f.path for f in client.list_artifacts(again.mlflow_run_id, "reports")]
    assert other.startswith("reports/tiny__2026-11-29__")
    assert _read_artifact(client, again.mlflow_run_id, f"{other}/report.html", tmp_path / "b") == "one-system report"
    assert client.get_run(again.mlflow_run_id).data.tags[PARENT_TAG] == parent  # still under the job that made it
    # the same run set again (a resume, a re-publish) renews its report in place
    _publish(store, [llm, rules], uri, tmp_path / "w3", report="job report, resumed")
    assert _read_artifact(client, again.mlflow_run_id, "report/report.html", tmp_path / "c") == "job report, resumed"


def test_publish_run_lands_in_the_runs_own_mlflow_run_and_experiment(tmp_path, tracking, capsys):
    from jobs.publish_run import main as publish_main

    uri, client = tracking
    store, llm = _stored(tmp_path / "root", "r-llm", "llm")
    [first] = _publish(store, [llm], uri, tmp_path / "w1")
    _store_scores(store, "r-llm")
    for _ in range(2):  # no --experiment: the run's own, not a new "scrutineer" experiment
        assert publish_main(["--storage", store.uri, "--run-ids", "r-llm", "--tracking-uri", uri]) == 0
    [run] = _runs(client, RUN_ID_TAG, "r-llm")
    assert run.info.run_id == first.mlflow_run_id
    assert client.get_experiment(run.info.experiment_id).name == "scrutineer/tiny"
    assert client.get_experiment_by_name("scrutineer") is None
    assert len(_runs(client, SUBMISSION_OF_TAG, "r-llm")) == 3
    assert f"MLflow run {first.mlflow_run_id}" in capsys.readouterr().out
    # a run logged under another experiment name (a config's `experiment`) is found there, not duplicated
    _, rules = _stored(tmp_path / "root", "r-rules", "rules")
    from storage.run_publication import track_system_runs as track

    system = SystemSummary("rules", "r-rules", "complete", {}, 3, 0, 0, "x", expected=3)
    (tmp_path / "w2").mkdir()
    track(store, [(system, rules, pa.table({}), [], {})], uri, "team/{corpus}", tmp_path / "w2", tmp_path / "w2", [])
    _store_scores(store, "r-rules")
    assert publish_main(["--storage", store.uri, "--run-ids", "r-rules", "--tracking-uri", uri]) == 0
    [rules_run] = _runs(client, RUN_ID_TAG, "r-rules")
    assert client.get_experiment(rules_run.info.experiment_id).name == "team/tiny"


def test_run_names_are_short_and_whole_words_and_the_experiment_opens_on_runs(tmp_path, tracking):
    from storage.tracking import EXPERIMENT_KIND_TAGS, short_name

    uri, client = tracking
    client.create_experiment("scrutineer/tiny")  # made before, without the kind tag
    store, llm = _stored(tmp_path / "root", "r-llm", "llm")
    started = calendar.timegm((2026, 11, 29, 14, 5, 0))
    [s] = _publish(store, [llm], uri, tmp_path / "w", Submission(started_at=started))
    assert client.get_run(s.mlflow_run_id).info.run_name == f"llm · {SNAPSHOT}"
    [job] = _runs(client, JOB_TAG, job_id_of(["r-llm"]))
    assert job.info.run_name == "job tiny 2026-11-29 14:05"
    [sub] = _runs(client, SUBMISSION_OF_TAG, "r-llm")
    assert sub.info.run_name == "llm · submission 1"
    experiment = client.get_experiment_by_name("scrutineer/tiny")
    assert experiment.tags["mlflow.experimentKind"] == EXPERIMENT_KIND_TAGS["mlflow.experimentKind"]
    assert EXPERIMENT_KIND_TAGS == {"mlflow.experimentKind": "custom_model_development"}  # MLflow 3's "Machine learning"
    name = short_name("llm_zero_shot_with_a_long_label", "·", "2026-11-29", limit=40)
    assert name == "llm_zero_shot_with_a_long_label…" and len(name) <= 40
