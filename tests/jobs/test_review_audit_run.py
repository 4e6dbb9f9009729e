"""The review audit (issue 17) through the real entry point, `jobs/run_corpus.py`: the bundled sample
config (review_lexical + the review_null control), the hand-made judged table through the replay
server with exact metric values, S3 storage, and the shared ReviewCritique natural track."""

from __future__ import annotations

import json
import os
import uuid

import pytest

from audits.reviews import read_review_records, score_records
from corpora.reviews.corpus_io import write_jsonl
from jobs.run_corpus import EXIT_AUDIT_INVALID
from storage.store import Store
from tests.helpers.paths import REPO_ROOT, SHARED_DATA
from tests.helpers.replay_server import replay_server, server_stats
from tests.helpers.run_job import run_job, run_job_in_process
from tests.verifiers.review_detectors.review_table import EXPECTED, recording_rules, table

SNAPSHOT = "2026-12-01"
SAMPLE_CONFIG = REPO_ROOT / "configs" / "review_audit.toml"


def test_sample_corpus_is_seeded_and_the_null_control_flags_nothing():
    """Without Ray: the audit's corpus from the bundled config (same seed, same copies) and the control."""
    import asyncio

    from audits import get_audit
    from cluster.run_config import load_config
    from storage.records import Item
    from verifiers.registry import SystemSpec, build_system
    from verifiers.system import RunContext

    config = load_config(SAMPLE_CONFIG)
    audit = get_audit("reviews")
    corpus = audit.build_corpus(config, None)
    assert corpus.num_items == 11 and corpus.errors == [] and corpus.name == "reviews_sample"
    assert audit.build_corpus(config, None).version == corpus.version  # seeded: a rerun resumes the same run
    truth = [json.loads(e) for e in corpus.truth.column("extra_json").to_pylist()]
    assert sum(t["hallucinated"] for t in truth) == 3 and {t["track"] for t in truth} == {"injected"}
    assert all(i["anchor"] in ("Number", "Temporal", "Entity") for t in truth for i in t["injections"])
    items = [Item.from_row(r) for r in corpus.items.to_pylist()]
    outputs = asyncio.run(build_system(SystemSpec("review_null")).run(items, RunContext("r", SNAPSHOT)))
    assert {o.label for o in outputs} == {"VALID"}
    assert not any(any(o.detail["review"]["sentence_labels"].values()) for o in outputs)


def test_config_errors_name_the_field(tmp_path, monkeypatch):
    from audits import get_audit
    from audits.base import configure
    from cluster.run_config import ConfigError, load_config

    bad = tmp_path / "bad.toml"
    bad.write_text('audit = "reviews"\n[reviews]\ntrack = "invented"\n')
    with pytest.raises(ConfigError, match="reviews.track"):
        configure(get_audit("reviews"), load_config(bad))  # the audit validates its own section
    monkeypatch.setenv("SCRUTINEER_SHARED_DATA", "/data/shared")
    ok = tmp_path / "ok.toml"
    ok.write_text('audit = "reviews"\n[reviews]\npath = "$SCRUTINEER_SHARED_DATA/rc.jsonl"\n')
    assert configure(get_audit("reviews"), load_config(ok)).reviews.path == "/data/shared/rc.jsonl"
    empty = tmp_path / "empty.toml"
    empty.write_text('audit = "reviews"\ntracking_uri = "none"\n[[systems]]\nname = "review_lexical"\n')
    offline = {"RAY_ADDRESS": "127.0.0.1:1"}  # named before any cluster is reached
    done = run_job_in_process("run_corpus.py", "--config", str(empty), cwd=tmp_path, monkeypatch=monkeypatch,
                              env=offline)  # fmt: skip
    assert done.returncode == 2 and "[reviews] path" in done.stderr and "Traceback" not in done.stderr


def runs_by_system(store_root) -> dict[str, str]:
    return {p.name.split("__")[1].split("@")[0]: p.name for p in store_root.iterdir() if "@" in p.name}


@pytest.mark.heavy  # run_corpus.py on Ray: 30-60 s
def test_sample_config_runs_scores_reports_and_resumes(ray_head, tmp_path):
    args = ("--config", str(SAMPLE_CONFIG), "--snapshot", SNAPSHOT,
            "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db")  # fmt: skip
    result = run_job("run_corpus.py", *args, cwd=tmp_path, env=ray_head.env())
    # 3 injections: review_lexical types like the flag_all control ("Number"), so its Task 2 figures are
    # refuted by it; everything is stored and scored, the banner says which figures and the exit is 7
    assert result.returncode == EXIT_AUDIT_INVALID, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Review audit (HalluPeer Tasks 1-3)" in result.stdout
    banner = result.stdout[: result.stdout.index("Review audit (HalluPeer Tasks 1-3)")]
    assert "reaches detector review_lexical's type_macro_f1 0.400" in banner
    assert "sentence_f1" not in banner and "token_f1" not in banner  # where it detects, it beats the control
    [board_path] = (tmp_path / "runs" / "reports").glob("*/run_summary.json")
    board = {r["system"]: r for r in json.loads(board_path.read_text())}
    assert board["review_lexical"]["audit_validity"]["invalid"] is True
    assert board["review_null"]["audit_validity"] == {"checked": True, "invalid": False, "reasons": []}
    store = Store(str(tmp_path / "runs"))
    runs = runs_by_system(tmp_path / "runs")
    assert set(runs) == {"review_lexical", "review_null", "review_flag_all"}
    scores = {}
    for system, run_id in runs.items():
        stored = json.loads((tmp_path / "runs" / run_id / "scores.json").read_text())
        records = read_review_records(store, run_id)
        # 8 clean + 3 injected: rules 13 edit only sentences that name the paper and report what it did or
        # found (summary, novelty, significance, experiments, results), which five of the eight lack
        assert len(records.outputs) == len(records.truths) == 11
        again = score_records(records, n_resamples=200)
        for m in again.metrics:
            if m.stratum == "all":
                assert stored[m.metric] == m.value, (system, m.metric)
        metrics = store.read_table(run_id, "metrics").to_pylist()
        assert {r["metric"] for r in metrics} >= set(EXPECTED)
        scores[system] = stored
    lexical, null = scores["review_lexical"], scores["review_null"]
    assert lexical["track"] == "injected" and lexical["num_hallucinated"] == 3 and lexical["num_errors"] == 0
    assert lexical["review_f1"] > 0.8 and lexical["token_f1"] > 0.5  # the Number injections it exists for
    # the control flags nothing: no detection at any level (F1 0, precision undefined, never 0)
    for metric in ("review_recall", "review_f1", "sentence_recall", "sentence_f1", "token_f1", "type_micro_f1"):
        assert null[metric] == 0.0, metric
    assert null["review_precision"] is None and "review_precision" in null["undefined"]
    # the adversary flags everything: perfect recall, and the detector must beat it where it counts
    flag_all = scores["review_flag_all"]
    assert flag_all["review_recall"] == flag_all["sentence_recall"] == 1.0
    assert flag_all["review_precision"] == pytest.approx(3 / 11)  # the share of injected copies, nothing more
    for metric in ("review_f1", "sentence_f1", "token_f1", "sentence_precision"):
        assert lexical[metric] > flag_all[metric], metric
    report = next((tmp_path / "runs" / "reports").glob("*/review_report.md"))
    assert {"review_report.html", "type_f1_heatmap.png", "level_f1_bars.png", "review_metrics.csv"} <= {
        p.name for p in report.parent.iterdir()}
    assert "## Task 2 per anchor" in report.read_text() and "review_null" in report.read_text()
    assert report.read_text().split("## Glossary")[0].count("AUDIT INVALID") == 2  # the warning, both figures

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    experiment = client.get_experiment_by_name("scrutineer/reviews_sample")
    tracked = [r for r in client.search_runs([experiment.experiment_id]) if "system" in r.data.params]
    assert sorted(r.data.params["system"] for r in tracked) == ["review_flag_all", "review_lexical", "review_null"]
    lex = next(r for r in tracked if r.data.params["system"] == "review_lexical")
    assert lex.data.metrics["review_f1"] == pytest.approx(lexical["review_f1"])

    again = run_job("run_corpus.py", *args, cwd=tmp_path, env=ray_head.env())
    assert again.returncode == EXIT_AUDIT_INVALID, again.stdout[-3000:] + again.stderr[-3000:]
    shards = sum(len(store.finished_shards(r)) for r in runs.values())
    assert f"all {shards} shards already done (resumed)" in again.stdout
    assert json.loads((tmp_path / "runs" / runs["review_lexical"] / "scores.json").read_text())["review_f1"] == lexical["review_f1"]


@pytest.mark.heavy  # run_corpus.py on Ray: 30-60 s
def test_replayed_judge_table_gives_the_hand_computed_metrics_through_the_pipeline(ray_head, tmp_path):
    copies, truths = table()
    write_jsonl(copies, truths, tmp_path / "items.jsonl", tmp_path / "truth.jsonl", "hand_table")
    with replay_server(recordings=recording_rules(), tmp=tmp_path) as url:
        config = tmp_path / "judge.toml"
        config.write_text(
            f'audit = "reviews"\nsnapshot = "{SNAPSHOT}"\nshard_size = 2\nworkers = 2\nbootstrap = 100\n'
            'tracking_uri = "none"\n[corpus]\nname = "hand_table"\n[llm]\ncache_dir = "cache"\n'
            '[reviews]\npath = "items.jsonl"\ntruth = "truth.jsonl"\ntrack = "injected"\n'
            '[[systems]]\nname = "review_llm_judge"\n'
            f'args = {{ model = "openai/recorded-judge", api_base = "{url}/v1", prompt_style = "cot", classify_types = true }}\n'
            '[[systems]]\nname = "review_null"\n'
        )
        result = run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=ray_head.env())
        assert server_stats(url).get("unmatched", 0) == 0
    assert result.returncode == 3, result.stdout[-3000:] + result.stderr[-3000:]  # R5's answer broke its contract
    runs = runs_by_system(tmp_path / "runs")
    judge = json.loads((tmp_path / "runs" / runs["review_llm_judge"] / "scores.json").read_text())
    for metric, want in EXPECTED.items():
        assert judge[metric] == pytest.approx(want, abs=1e-12), metric
    assert judge["num_errors"] == 1 and judge["coverage"]["errored"] == {"parse": 1} and judge["num_scored"] == 4
    null = json.loads((tmp_path / "runs" / runs["review_null"] / "scores.json").read_text())
    assert null["review_f1"] == 0.0 and null["sentence_recall"] == 0.0 and null["num_scored"] == 5


@pytest.mark.heavy  # run_corpus.py on Ray: 30-60 s
def test_sample_run_on_s3(ray_head, moto_s3, tmp_path):
    bucket = f"reviews-{uuid.uuid4().hex[:8]}"
    moto_s3.client().create_bucket(Bucket=bucket)
    env = {**ray_head.env(), **moto_s3.env()}
    result = run_job("run_corpus.py", "--config", str(SAMPLE_CONFIG), "--snapshot", SNAPSHOT, "--tracking-uri", "none",
                     "--storage", f"s3://{bucket}/reviews", cwd=tmp_path, env=env)  # fmt: skip
    assert result.returncode == EXIT_AUDIT_INVALID, result.stdout[-3000:] + result.stderr[-3000:]
    keys = [o["Key"] for o in moto_s3.client().list_objects_v2(Bucket=bucket, Prefix="reviews/")["Contents"]]
    assert any(k.endswith("scores.json") and "review_lexical" in k for k in keys)
    assert any(k.endswith("review_report.html") for k in keys) and any(k.endswith("type_f1_heatmap.png") for k in keys)
    old = {k: os.environ.get(k) for k in moto_s3.env()}
    os.environ.update(moto_s3.env())
    try:
        store = Store(f"s3://{bucket}/reviews")
        run_id = next(k.split("/")[1] for k in keys if k.endswith("scores.json") and "review_lexical" in k)
        stored = json.loads(moto_s3.client().get_object(Bucket=bucket, Key=f"reviews/{run_id}/scores.json")["Body"].read())
        assert stored["review_f1"] == score_records(read_review_records(store, run_id), n_resamples=200).value("review_f1")
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.mark.heavy
@pytest.mark.requires_shared_data
def test_reviewcritique_natural_track_with_the_lexical_detector(ray_head, tmp_path):
    data = SHARED_DATA / "hallupeer" / "reviewcritique" / "ReviewCritique_LLM.jsonl"
    if not data.exists():
        pytest.skip(f"ReviewCritique absent: {data}")
    config = tmp_path / "rc.toml"
    config.write_text(
        f'audit = "reviews"\nsnapshot = "{SNAPSHOT}"\nshard_size = 20\nworkers = 2\nbootstrap = 100\n'
        'tracking_uri = "none"\n[corpus]\nname = "reviewcritique_llm"\n'
        f'[reviews]\npath = "{data}"\nformat = "reviewcritique"\ntrack = "natural"\n'
        '[[systems]]\nname = "review_lexical"\n'
    )
    result = run_job("run_corpus.py", "--config", str(config), cwd=tmp_path, env=ray_head.env())
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "ReviewCritique segment track" in result.stdout
    run_id = runs_by_system(tmp_path / "runs")["review_lexical"]
    scores = json.loads((tmp_path / "runs" / run_id / "scores.json").read_text())
    assert scores["track"] == "natural" and scores["num_reviews"] == 60 and scores["num_scored"] == 60
    assert set(scores["per_reviewer"]) == {"claude_opus", "gpt4", "gemini_pro_1.5"}
    metrics = Store(str(tmp_path / "runs")).read_table(run_id, "metrics").to_pylist()
    support = {r["stratum"]: r["n"] for r in metrics if r["metric"] == "segment_accuracy"}  # always defined
    assert support["all"] == 1610 and support["reviewer=claude_opus"] == 621 and support["reviewer=gpt4"] == 457
    report = next((tmp_path / "runs" / "reports").glob("*/review_report.md")).read_text()
    assert "## Per LLM reviewer" in report and "segment recall (Neglect)" in report  # readable column names
