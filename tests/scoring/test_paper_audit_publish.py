"""Issue 15: what a paper audit publishes, checked in the report and through the MLflow client on
a real sqlite store: the bootstrap count used, controls, visibility, undecided and injection-validity
counts, and the natural-error track (errata from a paper's git history) apart from the injected one.

The reviewer is scripted: it quotes the real errata (quote matching detects them) and writes a
vague review of the injected copies. The judge (a replay server on 127.0.0.1) says "detected" to
everything with evidence that is not in any review, so every judged verdict is undecided: the null
control's rate must then be computed over all its injections, not vanish as n/a.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pytest

from adjudication.papers.adjudicate import (
    PaperAdjudicationConfig,
    adjudicate_paper_controls,
    adjudicate_paper_run,
)
from audits.papers import summarize_paper_runs
from clients.llm_gateway import LLMServices
from corpora.papers.audit_corpus import build_paper_audit_corpus
from corpora.papers.errata import add_natural_track
from scoring.papers.metrics import audit_validity, paper_audit_metrics
from scoring.papers.report import _sections
from storage.records import Output
from storage.schemas import VERDICT_SCHEMA, table_from_rows
from storage.store import Store
from tests.helpers.errata_repo import CITE_WRONG, EQ_WRONG, NUM_WRONG, build_errata_repo
from tests.helpers.paths import REPO_ROOT
from tests.helpers.replay_server import replay_server

EXAMPLE = REPO_ROOT / "corpora" / "samples" / "papers" / "example-paper"
YES_JUDGE = json.dumps({"detected": True, "confidence": 0.95, "evidence": "the model selection criterion is wrong",
                        "reason": "looks like it"})


@dataclass
class StoredRun:  # what the publishing code reads of cluster.run_plan.PlannedRun
    run_id: str
    system_label: str
    manifest: dict


def _review(item_id: str, truth: dict) -> dict:
    if truth.get("track") == "natural":  # quotes the erroneous printed text of each erratum copy
        text = json.loads(truth["_payload"])["files"]["main.tex"]
        subject = truth["erratum"]["subject"]
        quote = (EQ_WRONG[-14:] if subject.startswith("Fix the sign") else
                 CITE_WRONG if subject.startswith("Fix a citation") else NUM_WRONG)  # fmt: skip
        assert quote in text
        # issue 21: a located quote detects only with a description that names the error
        named = ("sign error in this equation" if subject.startswith("Fix the sign") else
                 "wrong citation" if subject.startswith("Fix a citation") else "this number is wrong")  # fmt: skip
        return {"review_text": f'Wrong: "{quote}"', "prompt_style": "structured",
                "flags": [{"flag_id": f"{item_id}/f1", "quote": quote, "type": "mathematics",
                           "description": named, "location": None, "check": None}]}
    return {"review_text": "The paper is interesting but some parts could be clearer.", "prompt_style": "structured",
            "flags": []}


@pytest.mark.requires_shared_data
@pytest.mark.integration
def test_published_paper_audit_reports_tracks_controls_and_counts(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    repo, shas = build_errata_repo(tmp_path)
    base = build_paper_audit_corpus([EXAMPLE], seed=7, check_compile=False)
    corpus, scans = add_natural_track(base, [{"repo": str(repo), "folder": "paper", "paper_id": "lloyd"}])
    assert len(scans["lloyd"].errata) == 3
    payloads = {r["item_id"]: r["payload_json"] for r in corpus.items.to_pylist()}
    truths = {r["item_id"]: json.loads(r["extra_json"]) | {"_payload": payloads[r["item_id"]]}
              for r in corpus.truth.to_pylist()}

    store = Store(str(tmp_path / "runs"))
    run = StoredRun("rev-A__run", "rev-A", {})
    run.manifest = store.open_run(run.run_id, {
        "run_id": run.run_id, "corpus": {"name": corpus.name, "version": corpus.version, "items": corpus.num_items},
        "system": {"name": "rev-A", "label": "rev-A", "args": {}, "config_hash": "h"}, "snapshot": "2026-12-01",
        "shard_size": 100})
    outputs = table_from_rows([Output(i, detail=_review(i, t)).to_row(run.run_id, "rev-A", 0)
                               for i, t in sorted(truths.items())], _output_schema())
    store.write_shard(run.run_id, 0, outputs)
    store.write_table(run.run_id, "truth", corpus.truth)

    with replay_server("--default-content", YES_JUDGE) as judge:
        config = PaperAdjudicationConfig(panel=[{"model": "openai/judge", "api_base": f"{judge}/v1",
                                                 "family": "replay"}])
        services = LLMServices()
        verdicts = {run.run_id: adjudicate_paper_run(corpus.items, corpus.truth, outputs, config, services=services,
                                                     cache_dir=str(tmp_path / "cache")),
                    "controls": adjudicate_paper_controls(corpus.items, corpus.truth, outputs, config,
                                                          services=services, cache_dir=str(tmp_path / "cache"))}
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    work = tmp_path / "work"
    work.mkdir()
    summary = summarize_paper_runs(store, [run], verdicts, failed={}, tracking_uri=uri, experiment="scrutineer/{corpus}",
                                   bootstrap=150, work_dir=work, elapsed_s=1.0)
    [system] = summary.systems
    assert system.tracking_error is None, system.tracking_error
    # scores and the console: the natural track's rate apart from the injected one
    assert system.scores["natural_detection_rate"] == 1.0 and math.isnan(system.scores["detection_rate"])
    assert system.scores["num_natural_errata"] == 3 and system.scores["num_undecided"] == 12
    console = summary.render()
    assert "natDR" in console and "undecided" in console and "  1.000 " in console

    rows = store.read_table(run.run_id, "metrics").to_pylist()
    got = {(r["metric"], r["stratum"]): r for r in rows}
    # natural errata: each quoted, each detected, apart from the injected track
    assert got[("detection_rate", "track=natural")]["value"] == 1.0
    assert got[("detection_rate", "track=natural")]["n"] == 3
    # injected copies: the yes-judge's evidence is in no review, so every judged injection is undecided
    n_injected = got[("all_injections", "all")]["value"]
    assert n_injected == 12 and got[("undecided_injections", "all")]["value"] == 12
    assert math.isnan(got[("detection_rate", "all")]["value"]) and got[("detection_over_all", "all")]["value"] == 0.0
    # the null control: all undecided, yet its validity figure is over all its injections (0 of 12)
    assert got[("control_null_undecided_injections", "all")]["value"] == 12
    assert got[("control_null_detection_over_all", "all")]["value"] == 0.0
    assert got[("control_null_detection_over_all", "all")]["n"] == 12
    assert got[("audit_invalid", "all")]["value"] == 0.0
    assert got[("bootstrap_resamples", "all")]["value"] == 150
    assert got[("natural_errata", "all")]["value"] == 3 and got[("natural_copies", "all")]["value"] == 3
    assert got[("injections_applied", "all")]["value"] == 12
    assert got[("injection_attempts", "all")]["value"] >= 12
    assert got[("visible_injections", "all")]["value"] == 12

    from mlflow.tracking import MlflowClient  # here, not at collection: importing MLflow costs seconds

    client = MlflowClient(tracking_uri=uri)
    metrics = client.get_run(system.mlflow_run_id).data.metrics
    for key, value in {"bootstrap_resamples": 150, "control_null_detection_over_all": 0.0,
                       "control_null_undecided_injections": 12, "control_null_all_injections": 12,
                       "control_random_quote_all_injections": 12, "audit_invalid": 0.0, "detection_over_all": 0.0,
                       "undecided_injections": 12, "visible_injections": 12, "all_injections": 12,
                       "detection_rate/track/natural": 1.0, "all_injections/track/natural": 3,
                       "natural_errata": 3, "injections_applied": 12}.items():
        assert metrics[key] == value, key
    for key in ("injection_attempts", "injection_invalid_draws", "injection_redrawn", "injection_cells_skipped",
                "detection_rate/track/natural_ci_low", "paired_resamples"):
        assert key in metrics, key
    assert metrics["injection_attempts"] >= metrics["injection_invalid_draws"] >= metrics["injection_redrawn"]
    # issue 21: the new controls' rates and the audit's validity as a tag, with its reasons
    assert metrics["control_quote_everything_all_injections"] == 12
    assert metrics["control_token_quotes_detection_over_all"] == 0.0
    tags = client.get_run(system.mlflow_run_id).data.tags
    assert tags["audit_validity"] == "valid" and tags["audit_invalid_reasons"] == ""
    assert system.validity.checked and not system.validity.invalid

    report = (work / "report" / "paper_report.md").read_text()
    assert "(150 resamples)" in report and "2,000" not in report and "10,000" not in report
    assert "## Natural errors (errata from the papers' histories)" in report
    assert "## Injection validity" in report and "| natural errata | 3 |" in report
    assert "| rev-A | n/a | n/a | 0.000" in report  # injected: decided n/a, visible n/a, over all 0
    assert "0.000 [0.000, 0.000] (12/12)" in report  # the null control over all injections (undecided / all)
    assert "AUDIT INVALID" not in report.split("## Glossary")[0]  # the glossary defines it
    html = (work / "report" / "paper_report.html").read_text()
    assert "Natural errors" in html and "Injection validity" in html


def _output_schema():
    from storage.schemas import OUTPUT_SCHEMA

    return OUTPUT_SCHEMA


def _null(n: int, outcome: str, paper: str = "P1") -> dict:
    return {"run_id": "controls", "system": "control:null", "item_id": f"{paper}/copy-1", "unit_id": f"{paper}/{n}",
            "unit_kind": "injection", "outcome": outcome, "votes_json": "[]",
            "detail_json": json.dumps({"paper_id": paper, "error_type": "numerics", "severity": "S2"})}


@pytest.mark.parametrize(("detected", "undecided", "missed", "invalid", "over_all"), [
    (1, 19, 0, False, 0.05),  # decided-only: 1/1 = 100 % (would call it invalid); over all: 1/20
    (2, 18, 0, True, 0.10),   # over all 2/20 > 5 %
    (0, 20, 0, False, 0.0),   # decided-only: n/a; over all: 0/20, with n = 20 shown
    (1, 0, 9, True, 0.10),
])
def test_null_control_validity_is_over_all_its_injections(detected, undecided, missed, invalid, over_all):
    rows = ([_null(n, "detected") for n in range(detected)] + [_null(100 + n, "undecided") for n in range(undecided)]
            + [_null(200 + n, "missed") for n in range(missed)])
    metrics = paper_audit_metrics(table_from_rows(rows, VERDICT_SCHEMA), run_id="r", n_interval=40, n_paired=40,
                                  n_permutations=10).to_pylist()
    idx = {(m["system"], m["metric"], m["stratum"]): m for m in metrics}
    row = idx[("control:null", "detection_over_all", "all")]
    assert row["value"] == pytest.approx(over_all) and row["n"] == detected + undecided + missed
    assert (audit_validity(metrics) is not None) is invalid
    if invalid:
        assert "over all its injections" in audit_validity(metrics)
    controls = _sections(metrics)[0]
    assert "undecided / all" in controls[1]


def test_a_natural_null_control_above_the_tolerance_invalidates_the_audit():
    rows = [_null(1, "missed")] + [
        r | {"detail_json": json.dumps(json.loads(r["detail_json"]) | {"track": "natural"})}
        for r in [_null(2, "detected", "N1"), _null(3, "missed", "N1")]]
    metrics = paper_audit_metrics(table_from_rows(rows, VERDICT_SCHEMA), run_id="r", n_interval=40, n_paired=40,
                                  n_permutations=10).to_pylist()
    idx = {(m["system"], m["metric"], m["stratum"]): m for m in metrics}
    assert idx[("control:null", "detection_rate", "all")]["value"] == 0.0  # the injected track is untouched
    assert idx[("control:null", "detection_over_all", "track=natural")]["value"] == 0.5
    assert "natural track" in audit_validity(metrics)
