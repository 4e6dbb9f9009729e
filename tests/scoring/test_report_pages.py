"""Every report page (citations, papers, reviews, run comparisons) comes from one writer: one
self-contained HTML file (figures as data: URIs, so MLflow's artifact viewer shows them), with the
run's provenance, completeness and a glossary; intervals over too few units are marked."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pyarrow.compute as pc

from audits.papers import publish_paper_runs, score_paper_runs
from scoring.report_context import ReportContext, SystemStatus
from scoring.report_pages import SMALL_N_MARK, with_interval
from scoring.reviews.report import write_review_report
from storage.records import Output
from storage.schemas import OUTPUT_SCHEMA, table_from_rows
from storage.store import Store
from tests.scoring.test_paper_metrics import small_verdicts

SNAPSHOT, REVISION = "2026-11-29", "c0ffee1+dirty"


class Page(HTMLParser):
    """Every src/href target and the text of an HTML page."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.sources: list[str] = []
        self.texts: list[str] = []
        self.in_body = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.in_body = self.in_body or tag == "body"
        self.sources += [v for k, v in attrs if k == "src" and v is not None]

    def handle_data(self, data):
        if data.strip() and self.in_body:
            self.texts.append(data.strip())


def assert_self_contained_and_stated(text: str, *, completeness: str) -> Page:
    page = Page(text)
    assert page.sources, "a report without figures"
    assert all(src.startswith("data:image/png;base64,") for src in page.sources), page.sources
    assert f"snapshot: {SNAPSHOT}" in page.texts and f"code revision: {REVISION}" in page.texts
    assert completeness in page.texts
    assert "Glossary" in page.texts
    return page


@dataclass
class StoredRun:  # what publishing reads of cluster.run_plan.PlannedRun
    run_id: str
    system_label: str
    manifest: dict


def test_published_paper_report_in_mlflow_is_self_contained_and_states_the_run(tmp_path):
    store = Store(str(tmp_path / "runs"))
    verdicts_all = small_verdicts()
    runs, verdicts = [], {}
    for system in ("claude-rev", "gpt-rev"):
        run_id = f"papers@v1__{system}__{SNAPSHOT}"
        manifest = store.open_run(run_id, {
            "run_id": run_id, "corpus": {"name": "papers", "version": "v1", "items": 1}, "snapshot": SNAPSHOT,
            "code_revision": REVISION, "system": {"name": system, "label": system, "args": {}, "config_hash": "h"},
            "shard_size": 10})  # fmt: skip
        store.write_shard(run_id, 0, table_from_rows([Output("P1/copy-1", detail={"flags": []}).to_row(run_id, system, 0)], OUTPUT_SCHEMA))
        runs.append(StoredRun(run_id, system, manifest))
        verdicts[run_id] = verdicts_all.filter(pc.equal(verdicts_all.column("system"), system))
    scored = score_paper_runs(store, runs, verdicts, bootstrap=50)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    summary = publish_paper_runs(store, runs, verdicts, scored, failed={}, tracking_uri=uri,
                                 experiment="scrutineer/{corpus}", work_dir=tmp_path / "work", elapsed_s=1.0)
    from mlflow.tracking import MlflowClient  # here, not at collection: importing MLflow costs seconds

    client = MlflowClient(tracking_uri=uri)
    for system in summary.systems:
        assert system.tracking_error is None, system.tracking_error
        pages = [f.path for f in client.list_artifacts(system.mlflow_run_id, "report") if f.path.endswith(".html")]
        assert pages == ["report/paper_report.html"]
        local = Path(client.download_artifacts(system.mlflow_run_id, pages[0], str(tmp_path / system.system)))
        page = assert_self_contained_and_stated(local.read_text(), completeness="complete: every system answered "
                                                                                "every item")  # fmt: skip
        assert len(page.sources) == 5 and f"runs: {', '.join(sorted(r.run_id for r in runs))}" in page.texts
        assert "FP rate" in page.texts and "null control" in page.texts  # glossary terms
        # 4 flags, 4 injections: the intervals are marked and the page says why
        assert any(SMALL_N_MARK in t for t in page.texts) and any(t.startswith("† n < 10") or "† n < 10" in t
                                                                  for t in page.texts)  # fmt: skip
        md = (tmp_path / "work" / "report" / "paper_report.md").read_text()
        assert "![Detection by severity (dose-response)](dose_response.png)" in md  # the Markdown links its files


def test_review_report_states_the_run_and_reads_as_words(tmp_path):
    rows = [{"run_id": "r", "system": "lexical", "metric": m, "stratum": "all", "eval_mode": None, "value": v,
             "ci_low": v - 0.1, "ci_high": v + 0.1, "n": n}
            for m, v, n in (("review_f1", 0.6, 40), ("review_mcc", 0.2, 40), ("sentence_f1", 0.5, 5),
                            ("sentence_mcc", 0.1, 5))]  # fmt: skip
    context = ReportContext("reviews@v2", SNAPSHOT, REVISION, ("r",),
                            {"lexical": SystemStatus("incomplete: source outage", published=False)})
    write_review_report(tmp_path, rows, track="injected", context=context)
    page = Page((tmp_path / "review_report.html").read_text())
    assert all(src.startswith("data:image/png;base64,") for src in page.sources) and len(page.sources) == 2
    assert page.texts[1] == "INCOMPLETE: scores withheld: source outage (lexical)"  # first, under the title
    assert f"snapshot: {SNAPSHOT}" in page.texts and f"code revision: {REVISION}" in page.texts
    assert {"review-level F1", "sentence-level MCC"} <= set(page.texts)  # readable column names
    assert "review_f1" not in page.texts
    assert "0.600 [0.50, 0.70]" in page.texts and f"0.500 [0.40, 0.60] {SMALL_N_MARK}" in page.texts
    assert "Glossary" in page.texts and "review-level F1 / MCC" in page.texts


def test_an_interval_is_marked_only_when_n_is_small():
    assert with_interval(0.5, 0.4, 0.6, 9) == f"0.500 [0.400, 0.600] {SMALL_N_MARK}"
    assert with_interval(0.5, 0.4, 0.6, 10) == "0.500 [0.400, 0.600]"
    assert with_interval(0.5, None, None, 3) == "0.500"  # no interval, nothing to warn about
    assert with_interval(float("nan"), 0.1, 0.2, 50) == "n/a"


def test_published_review_report_in_mlflow_is_self_contained_and_names_both_task_settings(tmp_path):
    """The review audit's page as MLflow serves it: figures embedded (no sibling file needed),
    snapshot, code revision, completeness, glossary, and Task 2's oracle and end-to-end settings,
    Task 3's label-conditioned setting and the unanswered-as-miss figures under their own names."""
    import asyncio

    from audits.reviews import publish_review_runs, score_review_runs
    from corpora.reviews.corpus_io import corpus_tables
    from tests.verifiers.review_detectors.review_table import items_of, table
    from verifiers.registry import SystemSpec, build_system
    from verifiers.system import RunContext

    store = Store(str(tmp_path / "runs"))
    copies, truths = table()
    items, truth = corpus_tables(copies, truths, "reviews")
    outputs = asyncio.run(build_system(SystemSpec("review_lexical")).run(items_of(copies), RunContext("r", SNAPSHOT)))
    run_id = f"reviews@v1__review_lexical__{SNAPSHOT}"
    manifest = store.open_run(run_id, {
        "run_id": run_id, "corpus": {"name": "reviews", "version": "v1", "items": len(copies)}, "snapshot": SNAPSHOT,
        "code_revision": REVISION, "system": {"name": "review_lexical", "label": "review_lexical", "args": {},
                                              "config_hash": "h"}, "shard_size": 10})  # fmt: skip
    store.write_table(run_id, "items", items)
    store.write_table(run_id, "truth", truth)
    store.write_shard(run_id, 0, table_from_rows([o.to_row(run_id, "review_lexical", 0) for o in outputs], OUTPUT_SCHEMA))
    runs = [StoredRun(run_id, "review_lexical", manifest)]
    scored = score_review_runs(store, runs, failed={}, bootstrap=50)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    summary = publish_review_runs(store, runs, scored, failed={}, tracking_uri=uri, experiment="scrutineer/{corpus}",
                                  work_dir=tmp_path / "work", elapsed_s=1.0)  # fmt: skip
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    (system,) = summary.systems
    assert system.tracking_error is None, system.tracking_error
    pages = [f.path for f in client.list_artifacts(system.mlflow_run_id, "report") if f.path.endswith(".html")]
    assert pages == ["report/review_report.html"]
    local = Path(client.download_artifacts(system.mlflow_run_id, pages[0], str(tmp_path / "dl")))
    page = assert_self_contained_and_stated(local.read_text(), completeness="complete: every system answered every item")
    assert len(page.sources) == 2
    assert {"oracle type macro-F1", "type macro-F1", "label-conditioned token F1",
            "review-level F1, unanswered as miss"} <= set(page.texts)  # fmt: skip
    assert "Task 2: type classification, oracle setting (the paper's)" in page.texts
    assert "oracle type macro-F1 / micro-F1" in page.texts  # in the glossary
    # the MLflow run carries both Task 2 figures as metrics, under their own names
    logged = client.get_run(system.mlflow_run_id).data.metrics
    assert {"type_oracle_micro_f1", "type_micro_f1", "review_f1_unanswered_as_miss"} <= set(logged)
