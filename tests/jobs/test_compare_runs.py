"""compare_runs.py: two stored runs that differ in one answer-changing argument give exactly the
expected flips, their attribution, McNemar's p, and a report in the store and in both MLflow runs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from jobs.compare_runs import main
from storage.run_record import RECORD_VERSION, RunRecord, RunRecordError, differences
from storage.schemas import OUTPUT_SCHEMA, TRUTH_SCHEMA, table_from_rows
from storage.store import Store
from storage.tracking import log_system_run

CORPUS = {"name": "tiny", "version": "v1", "split": "dev", "path": "tiny.jsonl", "items": 12, "unreadable": 0}
# h0-h3 fabricated_doi (tier 1), h4-h7 wrong_venue (tier 2), v0-v3 valid
TRUTH = ([(f"h{i}", "HALLUCINATED", "fabricated_doi", 1) for i in range(4)]
         + [(f"h{i}", "HALLUCINATED", "wrong_venue", 2) for i in range(4, 8)]
         + [(f"v{i}", "VALID", None, None) for i in range(4)])  # fmt: skip
BEFORE = {**{f"h{i}": ("VALID", 0.8) for i in range(4)}, **{f"h{i}": ("HALLUCINATED", 0.9) for i in range(4, 8)},
          "v0": ("VALID", 0.9), "v1": ("HALLUCINATED", 0.7), "v2": ("VALID", 0.9), "v3": ("VALID", 0.9)}
AFTER = {**BEFORE, **{f"h{i}": ("HALLUCINATED", 0.85) for i in range(4)},  # 4 fixed
         "v0": ("HALLUCINATED", 0.6),  # 1 broken
         "v1": ("UNCERTAIN", 0.5),  # wrong -> wrong: label changed
         "h6": ("HALLUCINATED", 0.6)}  # confidence only


def write_run(store: Store, title_threshold: float, max_concurrency: int, answers: dict, snapshot: str,
              model_of: dict[str, str], corpus: dict | None = None) -> str:  # fmt: skip
    args = {"sources": ["offline_index"], "title_threshold": title_threshold, "max_concurrency": max_concurrency}
    corpus = corpus or CORPUS
    run_id = f"{corpus['name']}@{corpus['version']}__field_match@t{title_threshold}__{snapshot}"
    store.open_run(run_id, {"run_id": run_id, "schema_version": "1", "record_version": RECORD_VERSION,
                            "corpus": corpus, "snapshot": snapshot, "code_revision": "a" * 40,
                            "code": {"commit": "a" * 40, "dirty": False, "source_hash": None, "label": "a" * 40},
                            "packages": {"rapidfuzz": "3.0.0"},
                            "system": {"name": "field_match", "args": args, "label": "field_match",
                                       "config_hash": f"t{title_threshold}"}})  # fmt: skip
    truth = table_from_rows([dict(item_id=i, label=lab, hallucination_type=t, difficulty_tier=tier)
                             for i, lab, t, tier in TRUTH], TRUTH_SCHEMA)  # fmt: skip
    store.write_table(run_id, "truth", truth)
    store.write_shard(run_id, 0, table_from_rows(
        [dict(run_id=run_id, system="field_match", item_id=i, shard_id=0, label=lab, confidence=c,
              model_id=model_of.get(i, "index-1"), cost_usd=0.001) for i, (lab, c) in answers.items()],
        OUTPUT_SCHEMA))  # fmt: skip
    store.close_run(run_id, "complete", items=12, expected=12, errored=0, failed_shards=0)
    return run_id


@pytest.fixture
def runs(tmp_path):
    store = Store(str(tmp_path / "runs"))
    a = write_run(store, 0.9, 8, BEFORE, "2026-11-01", {})
    b = write_run(store, 0.5, 16, AFTER, "2026-11-01", {"h0": "index-2"})
    return store, a, b


def test_flips_attribution_and_mcnemar(runs, tmp_path, capsys):
    store, a, b = runs
    assert main([a, b, "--storage", store.uri, "--tracking-uri", "none", "--bootstrap", "300"]) == 0
    out = json.loads((tmp_path / "runs" / "comparisons" / f"{a}__vs__{b}" / "comparison.json").read_text())
    # max_concurrency is a runtime argument of field_match: only the threshold differs
    assert out["differences"] == [["system.args.title_threshold", 0.9, 0.5]]
    changes = {c["item_id"]: c for c in out["changes"]}
    assert {k: c["change"] for k, c in changes.items()} == {
        "h0": "fixed", "h1": "fixed", "h2": "fixed", "h3": "fixed", "v0": "broken", "v1": "label changed",
        "h6": "confidence only"}
    assert changes["h0"]["attributed_to"] == "model_id: index-1 -> index-2"  # per-item provenance wins
    assert changes["h1"]["attributed_to"] == "system.args.title_threshold: 0.9 -> 0.5"
    assert changes["v1"]["label_before"] == "HALLUCINATED" and changes["v1"]["label_after"] == "UNCERTAIN"
    # McNemar exact: 4 fixed vs 1 broken -> 2 * P(X <= 1 | n=5, 1/2) = 2 * 6/32
    assert out["mcnemar"] == {"fixed": 4, "broken": 1, "p_value": pytest.approx(0.375)}
    counts = {r["stratum"]: r for r in out["counts"]}
    assert counts["all"]["n"] == 12 and counts["all"]["fixed"] == 4 and counts["all"]["broken"] == 1
    assert counts["type=fabricated_doi"]["fixed"] == 4 and counts["tier=1"]["fixed"] == 4
    assert counts["type=wrong_venue"]["confidence only"] == 1 and counts["tier=2"]["fixed"] == 0
    assert counts["valid"]["broken"] == 1 and counts["valid"]["label changed"] == 1
    # DR went from 4/8 to 8/8: the paired bootstrap sees after - before = +0.5
    dr = next(p for p in out["paired"] if p["metric"] == "detection_rate")
    assert dr["diff"] == pytest.approx(0.5) and dr["diff_ci"][0] > 0
    assert out["after"]["outcome"]["cost_usd"] == pytest.approx(0.012)
    md = (tmp_path / "runs" / "comparisons" / f"{a}__vs__{b}" / "comparison.md").read_text()
    assert "| h0 | HALLUCINATED | fabricated_doi | 1 | VALID | HALLUCINATED |" in md
    html = (tmp_path / "runs" / "comparisons" / f"{a}__vs__{b}" / "comparison.html").read_text()
    assert html.startswith("<!doctype html>") and "<script" not in html and "title_threshold" in html
    # the one page writer: both runs' provenance, completeness and a glossary
    for fact in ("snapshot: 2026-11-01", f"code revision: {'a' * 40}", f"runs: {a}, {b}",
                 "complete: every system answered every item", "Glossary", "McNemar exact test"):
        assert fact in html, fact
    assert "4 fixed, 1 broken" in capsys.readouterr().out


def test_runs_on_different_corpora_are_refused_unless_the_shared_items_are_asked_for(runs, tmp_path, capsys):
    store, a, _ = runs
    other = write_run(store, 0.5, 8, AFTER, "2026-11-01", {}, corpus={**CORPUS, "version": "v2"})
    # before: compared silently, with a note, and exit 0
    assert main([a, other, "--storage", store.uri, "--tracking-uri", "none", "--bootstrap", "0"]) == 2
    err = capsys.readouterr().err
    assert "different corpora (tiny@v1 vs tiny@v2)" in err and "--shared-items" in err
    assert not (tmp_path / "runs" / "comparisons").exists()
    assert main([a, other, "--storage", store.uri, "--tracking-uri", "none", "--bootstrap", "0", "--shared-items"]) == 0
    out = json.loads((tmp_path / "runs" / "comparisons" / f"{a}__vs__{other}" / "comparison.json").read_text())
    assert out["shared"] == 12 and any("only items with the same id are compared" in n for n in out["notes"])


def test_identical_runs_have_no_changes_and_say_so(runs, tmp_path):
    store, a, _ = runs
    assert main([a, a, "--storage", store.uri, "--tracking-uri", "none", "--bootstrap", "0"]) == 0
    out = json.loads((tmp_path / "runs" / "comparisons" / f"{a}__vs__{a}" / "comparison.json").read_text())
    assert out["changes"] == [] and out["differences"] == [] and out["mcnemar"]["p_value"] == 1.0


def test_mlflow_run_ids_resolve_and_receive_the_report(runs, tmp_path, capsys, mlflow_sqlite):
    from mlflow.tracking import MlflowClient

    store, a, b = runs
    uri = mlflow_sqlite
    art, report = tmp_path / "art", tmp_path / "report"
    art.mkdir()
    report.mkdir()
    (art / "x.txt").write_text("x")
    for name in ("report.md", "report.html"):
        (report / name).write_text(f"the run's own {name}")
    ml = {r: log_system_run(uri, "scrutineer", run_id=r, run_name=r, params={}, metrics={}, artifact_dir=art,
                            tags={"storage": store.uri_of(r)}, report_dir=report, report_key=f"reports/{r}")
          for r in (a, b)}  # fmt: skip
    elsewhere = log_system_run(uri, "scrutineer", run_id=b, run_name=b, params={}, metrics={}, artifact_dir=art,
                               tags={"storage": f"/elsewhere/{b}"}, storage="/elsewhere")  # fmt: skip
    assert elsewhere != ml[b]  # the same run id under another storage root: another MLflow run
    # BEFORE by its MLflow run id (no --storage: the storage tag says where), AFTER by its folder
    assert main([ml[a], store.uri_of(b), "--tracking-uri", uri, "--bootstrap", "0"]) == 0
    client = MlflowClient(tracking_uri=uri)
    key = f"comparisons/{a}__vs__{b}"
    for r in (a, b):
        names = sorted(f.path.rsplit("/", 1)[-1] for f in client.list_artifacts(ml[r], key))
        assert names == ["changes.csv", "comparison.html", "comparison.json", "comparison.md"]
    assert client.list_artifacts(elsewhere, key) == []  # not the report of a run it is not
    local = client.download_artifacts(ml[b], f"{key}/changes.csv", str(tmp_path / "dl"))
    assert "h0,HALLUCINATED,fabricated_doi,1,VALID,HALLUCINATED" in Path(local).read_text()
    for r in (a, b):  # each run's own report is untouched
        for name in ("report.md", "report.html"):
            got = client.download_artifacts(ml[r], f"report/{name}", str(tmp_path / f"own-{r}"))
            assert Path(got).read_text() == f"the run's own {name}"
    assert f"MLflow: logged under {key}/ to before {ml[a]}, after {ml[b]}" in capsys.readouterr().out


def test_says_why_it_did_not_log_to_mlflow(runs, tmp_path, monkeypatch, capsys):
    store, a, b = runs
    monkeypatch.chdir(tmp_path)  # no ./mlruns here
    for var in ("SCRUTINEER_TRACKING_URI", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(var, raising=False)
    assert main([a, b, "--storage", store.uri, "--bootstrap", "0"]) == 0
    assert "MLflow: not logged: no tracking URI" in capsys.readouterr().out
    # run_corpus.py's default local store exists: used, and it says the runs are not in it
    uri = f"sqlite:///{tmp_path}/mlruns/mlflow.db"
    (tmp_path / "mlruns").mkdir()
    art = tmp_path / "art"
    art.mkdir()
    (art / "x.txt").write_text("x")
    log_system_run(uri, "scrutineer", run_id=b, run_name=b, params={}, metrics={}, artifact_dir=art,
                   tags={"storage": store.uri_of(b)})  # fmt: skip
    assert main([a, b, "--storage", store.uri, "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    assert "MLflow: logged under comparisons/" in out and "no MLflow run of the before run at sqlite:///" in out


def test_unknown_run_and_old_manifest_exit_2(runs, tmp_path, capsys):
    store, a, _ = runs
    assert main([a, "nope", "--storage", store.uri, "--tracking-uri", "none"]) == 2
    assert "nope: no such run" in capsys.readouterr().err
    store.write_json("old", "manifest.json", {"corpus": CORPUS, "snapshot": "2025-01-01"})
    assert main([a, "old", "--storage", store.uri, "--tracking-uri", "none"]) == 2
    err = capsys.readouterr().err
    assert "old/manifest.json: no 'run_id' field" in err and "Traceback" not in err


def test_record_reads_old_manifests_and_refuses_newer_ones():
    base = {"run_id": "r", "corpus": CORPUS, "snapshot": "2026-01-01", "code_revision": "b" * 40 + "+dirty",
            "system": {"name": "field_match", "args": {"title_threshold": 0.9, "max_concurrency": 4}}}
    old = RunRecord.from_stored(base, None, storage_uri="/x/r", runtime_arg_names=("max_concurrency",))
    assert old.code.commit == "b" * 40 and old.code.packages is None and old.outcome.status == "running"
    assert old.system.answer_args == {"title_threshold": 0.9} and old.system.runtime_args == {"max_concurrency": 4}
    newer = RunRecord.from_stored({**base, "packages": {"rapidfuzz": "3.1"}}, {"status": "complete", "items": 12,
                                  "expected": 12}, storage_uri="/x/r")  # fmt: skip
    assert newer.outcome.complete
    # package versions are compared only when both records state them
    assert differences(old, newer) == [("system.args.max_concurrency", None, 4)]  # runtime only in `old`
    with pytest.raises(RunRecordError, match=r"m.json: record_version 99 is newer"):
        RunRecord.from_stored({**base, "record_version": 99}, None, storage_uri="/x", source="m.json")


@pytest.mark.heavy
def test_two_real_runs_differing_in_closed_world(ray_head, tmp_path):
    """run_corpus.py twice on the bundled sample (offline index), field_match open vs closed world:
    the only difference is `closed_world`, and every flip is an UNCERTAIN that became a verdict."""
    from mlflow.tracking import MlflowClient

    from tests.helpers.run_job import run_job

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    common = ["--snapshot", "2026-11-01", "--bootstrap", "0", "--tracking-uri", uri, "--workers", "1"]
    fm = "field_match:index_path=corpora/samples/real_references.jsonl"
    for systems in (fm, fm + ",closed_world=true"):
        done = run_job("run_corpus.py", "--systems", systems, *common, cwd=tmp_path, env=ray_head.env())
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    store = Store(str(tmp_path / "runs"))
    open_run, closed_run = sorted((p.name for p in (tmp_path / "runs").iterdir() if (p / "manifest.json").exists()),
                                  key=lambda r: "closed_world" in json.dumps(store.read_json(r, "manifest.json")))
    manifest = store.read_json(closed_run, "manifest.json")
    assert manifest["record_version"] == RECORD_VERSION and "rapidfuzz" in manifest["packages"]
    done = run_job("compare_runs.py", open_run, closed_run, "--storage", store.uri, "--tracking-uri", uri,
                   "--bootstrap", "200", cwd=tmp_path, env=ray_head.env())  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = json.loads((tmp_path / "runs" / "comparisons" / f"{open_run}__vs__{closed_run}" / "comparison.json")
                     .read_text())  # fmt: skip
    assert out["differences"] == [["system.args.closed_world", False, True]]
    before = {r["item_id"]: r["label"] for r in store.read_outputs(open_run).to_pylist()}
    after = {r["item_id"]: r["label"] for r in store.read_outputs(closed_run).to_pylist()}
    expected = {i for i in before if before[i] != after[i]}
    assert expected and {c["item_id"] for c in out["changes"] if c["change"] != "confidence only"} == expected
    assert all(c["attributed_to"] == "system.args.closed_world: False -> True" for c in out["changes"])
    # measured on the bundled sample: closed world turns 10 UNCERTAIN fabrications into HALLUCINATED, all
    # correct: 10 fixed, 0 broken, McNemar p = 2 * 0.5**10 (open world leaves absent works and DOIs that nothing
    # can check UNCERTAIN; before the issue-23 fixes it was 5 UNCERTAIN and one wrongly VALID)
    assert Counter((before[i], after[i]) for i in expected) == {("UNCERTAIN", "HALLUCINATED"): 10}
    assert out["mcnemar"] == {"fixed": 10, "broken": 0, "p_value": pytest.approx(2 * 0.5**10)}
    assert out["counts"][0] == {"stratum": "all", "n": 100, "fixed": 10, "broken": 0, "label changed": 0,
                                "confidence only": 0}
    client = MlflowClient(tracking_uri=uri)
    for run_id in (open_run, closed_run):
        (ml,) = client.search_runs([e.experiment_id for e in client.search_experiments()],
                                   filter_string=f"tags.`scrutineer.run_id` = '{run_id}'")  # fmt: skip
        key = f"comparisons/{open_run}__vs__{closed_run}"
        names = {a.path.rsplit("/", 1)[-1] for a in client.list_artifacts(ml.info.run_id, key)}
        assert {"comparison.html", "comparison.md"} <= names
    assert "10 fixed, 0 broken" in done.stdout


@pytest.mark.heavy
def test_drift_reruns_on_a_new_snapshot_and_compares(ray_head, tmp_path):
    """drift.py reruns the stored config on another snapshot: against the offline index nothing
    changes, and the snapshot is the only recorded difference."""
    from tests.helpers.run_job import run_job

    fm = "field_match:index_path=corpora/samples/real_references.jsonl"
    done = run_job("run_corpus.py", "--systems", fm, "--snapshot", "2026-11-01", "--bootstrap", "0",
                   "--tracking-uri", "none", "--workers", "1", cwd=tmp_path, env=ray_head.env())  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (old,) = [p.name for p in (tmp_path / "runs").iterdir() if (p / "manifest.json").exists()]
    same = run_job("drift.py", old, "--storage", "runs", "--snapshot", "2026-11-01", "--tracking-uri", "none",
                   cwd=tmp_path, env=ray_head.env())  # fmt: skip
    assert same.returncode == 2 and "already on snapshot 2026-11-01" in same.stderr
    done = run_job("drift.py", old, "--storage", "runs", "--snapshot", "2026-11-02", "--tracking-uri", "none",
                   "--bootstrap", "0", cwd=tmp_path, env=ray_head.env())  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    new = old.replace("2026-11-01", "2026-11-02")
    out = json.loads((tmp_path / "runs" / "comparisons" / f"{old}__vs__{new}" / "comparison.json").read_text())
    assert out["differences"] == [["snapshot", "2026-11-01", "2026-11-02"]]
    assert out["changes"] == [] and out["shared"] == 100
    assert "differs: snapshot: 2026-11-01 -> 2026-11-02" in done.stdout
