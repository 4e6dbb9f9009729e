"""Adding a citation metric is one catalogue entry plus its computation (issue 25 item 3): the
toy entry below reaches the metric rows (the stored table), scores.json with its CI key and null
reason, the MLflow metrics of the run and the report's leaderboard and glossary."""

from __future__ import annotations

import numpy as np
import pytest

from scoring import score_citation_outputs
from scoring.citations.hallmark_result import run_scores
from scoring.citations.metric_catalogue import CITATION_METRICS, row_metrics, summary_metrics
from scoring.citations.report import glossary, leader_metrics, write_run_report
from scoring.metric_catalogue import MetricDef
from storage.mlflow_conventions import row_metrics as mlflow_metrics
from storage.schemas import OUTPUT_SCHEMA, TRUTH_SCHEMA, table_from_rows


def _flag_share(inputs) -> np.ndarray:
    """Share of entries in the matrix flagged HALLUCINATED, per resample."""
    flagged = inputs.W @ (inputs.view.in_matrix & inputs.view.flagged).astype(np.float64)
    total = inputs.W @ inputs.view.in_matrix.astype(np.float64)
    return np.where(total > 0, flagged / np.where(total > 0, total, 1.0), np.nan)


TOY = MetricDef("flag_share", "FS", False, ci_key="flag_share_ci", leaderboard=True, compute=_flag_share,
                glossary="flag share: share of entries flagged HALLUCINATED.",
                undefined="undefined: nothing in the confusion matrix")


@pytest.fixture
def toy_metric():
    CITATION_METRICS.add(TOY.name, TOY)
    yield TOY
    CITATION_METRICS.remove(TOY.name)


def _tables():
    truth = table_from_rows([dict(item_id=f"h{i}", label="HALLUCINATED", hallucination_type="fabricated_doi",
                                  difficulty_tier=1) for i in range(4)]
                            + [dict(item_id=f"v{i}", label="VALID") for i in range(6)], TRUTH_SCHEMA)  # fmt: skip
    labels = ["HALLUCINATED"] * 3 + ["VALID"] + ["HALLUCINATED"] + ["VALID"] * 5
    rows = [dict(run_id="r", system="s", shard_id=0, item_id=t, label=lab, confidence=0.5 + i / 40)
            for i, (t, lab) in enumerate(zip([f"h{i}" for i in range(4)] + [f"v{i}" for i in range(6)], labels, strict=True))]
    return truth, table_from_rows(rows, OUTPUT_SCHEMA)


def test_a_toy_metric_is_one_entry(toy_metric, tmp_path):
    truth, outputs = _tables()
    score = score_citation_outputs(truth, outputs, run_id="r", system="s", bootstrap=40)
    # 4 of 10 entries flagged (3 hallucinated + 1 valid)
    rows = [r for r in score.metric_rows().to_pylist() if r["metric"] == "flag_share"]
    assert [(r["stratum"], r["value"], r["n"]) for r in rows] == [("all", 0.4, 10)]
    assert rows[0]["ci_low"] <= 0.4 <= rows[0]["ci_high"]
    assert row_metrics()[-1] == "flag_share" and summary_metrics()[-1] == "flag_share"

    scores = run_scores(score, truth, outputs)
    assert scores["flag_share"] == 0.4 and len(scores["flag_share_ci"]) == 2

    logged = mlflow_metrics(score.metric_rows().to_pylist())
    assert logged["flag_share"] == 0.4 and "flag_share_ci_low" in logged

    assert "flag_share" in leader_metrics() and ("FS", TOY.glossary) in glossary()
    write_run_report(tmp_path, [score])
    md = (tmp_path / "report.md").read_text()
    assert "| FS |" in md and "0.400" in md and "**FS**: flag share" in md


def test_toy_metric_null_has_a_reason(toy_metric):
    truth, _ = _tables()
    undecided = table_from_rows([dict(run_id="r", system="s", shard_id=0, item_id=t, label="UNCERTAIN")
                                 for t in truth.column("item_id").to_pylist()], OUTPUT_SCHEMA)  # fmt: skip
    summary = score_citation_outputs(truth, undecided, run_id="r", system="s").summary
    assert summary["flag_share"] is None  # conservative mode: every entry outside the matrix
    assert summary["null_reasons"]["flag_share"].startswith("undefined: no entry in its denominator")


def test_catalogue_is_the_hallmark_key_map():
    """Every metric HALLMARK writes is a catalogue entry marked `hallmark`, and vice versa."""
    from scoring.citations.hallmark_result import HALLMARK_KEYS

    assert {d.name for d in CITATION_METRICS.values() if d.hallmark} == {
        k for k in HALLMARK_KEYS if k in CITATION_METRICS}
    ci = {d.ci_key for d in CITATION_METRICS.values() if d.hallmark and d.ci_key}
    assert {k for k in HALLMARK_KEYS if k.endswith("_ci")} <= ci
