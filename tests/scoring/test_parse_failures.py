"""A parse failure is scored as UNCERTAIN@0.5 (never VALID) and counted apart; other errors are
missing predictions counted by kind (issue 5)."""

from __future__ import annotations

import math

import pytest

from scoring import score_citation_outputs
from scoring.citations.report import leaderboard_rows, write_run_report
from storage.schemas import OUTPUT_SCHEMA, TRUTH_SCHEMA, table_from_rows


def _truth():
    rows = [dict(item_id=f"h{i}", label="HALLUCINATED", hallucination_type="fabricated_doi", difficulty_tier=1)
            for i in range(4)]
    rows += [dict(item_id=f"v{i}", label="VALID") for i in range(4)]
    return table_from_rows(rows, TRUTH_SCHEMA)


def _outputs():
    rows = [
        dict(item_id="h0", label="HALLUCINATED", confidence=0.9),
        dict(item_id="h1", error="unparseable answer: 'Sure! ...'", error_kind="parse"),
        dict(item_id="h2", error="unparseable answer: '{\"label\": '", error_kind="parse"),
        dict(item_id="h3", error="provider timeout", error_kind="provider"),
        dict(item_id="v0", label="VALID", confidence=0.8),
        dict(item_id="v1", label="VALID", confidence=0.7),
        dict(item_id="v2", error="unparseable answer", error_kind="parse"),
        dict(item_id="v3", error="budget reached", error_kind="budget"),
    ]
    return table_from_rows([dict(run_id="r", system="s", shard_id=0, **r) for r in rows], OUTPUT_SCHEMA)


@pytest.fixture(scope="module")
def score():
    return score_citation_outputs(_truth(), _outputs(), run_id="r", system="s", eval_mode="both")


def test_parse_failure_is_uncertain_not_valid(score):
    c, a = score.summaries["conservative"], score.summaries["aggressive"]
    # conservative: the three parse failures leave the matrix; the provider/budget errors count VALID
    assert c["num_scored"] == 5
    assert c["detection_rate"] == 1 / 2  # h0 detected, h3 (provider error) missed; h1, h2 not scored
    assert c["false_positive_rate"] == 0.0 and c["num_uncertain"] == 3
    # aggressive: parse failures, like UNCERTAIN and missing, become HALLUCINATED
    assert a["detection_rate"] == 1.0 and a["false_positive_rate"] == 2 / 4
    view = score.entries.view("aggressive")
    parse = score.entries.parse_failed
    assert parse.tolist() == [False, True, True, False, False, False, True, False]
    assert view.confidence[parse].tolist() == [0.55] * 3


def test_parse_failures_and_errors_are_counted_apart(score):
    s = score.summary
    assert s["num_parse_failures"] == 3 and s["parse_failure_rate"] == 3 / 8
    assert s["num_errors"] == 2 and s["errors_by_kind"] == {"budget": 1, "parse": 3, "provider": 1}
    assert s["num_missing"] == 0
    assert s["coverage"] == 6 / 8  # a parse failure is an answer; provider and budget errors are not
    assert s["decided_fraction"] == 3 / 8
    rows = [r for r in score.metric_rows().to_pylist() if r["eval_mode"] == "conservative"]
    by = {(r["metric"], r["stratum"]): r for r in rows}
    assert by[("num_parse_failures", "all")]["value"] == 3
    assert by[("parse_failure_rate", "all")]["value"] == 3 / 8 and by[("parse_failure_rate", "all")]["n"] == 8
    assert by[("num_errors", "all")]["value"] == 2
    assert by[("num_errors", "error_kind=provider")]["value"] == 1
    assert by[("num_errors", "error_kind=parse")]["value"] == 3


def test_report_leaderboard_shows_parse_failures(score, tmp_path):
    (row,) = leaderboard_rows([score])
    assert (row["num_parse_failures"], row["parse_failure_rate"], row["num_errors"]) == (3, 3 / 8, 2)
    write_run_report(tmp_path, [score])
    md = (tmp_path / "report.md").read_text()
    assert "parse failures" in md and "| 3 (0.375) |" in md
    assert "parse failures" in (tmp_path / "report.html").read_text()


def test_error_without_kind_stays_missing():
    truth = table_from_rows([dict(item_id="h", label="HALLUCINATED", hallucination_type="x")], TRUTH_SCHEMA)
    outs = table_from_rows([dict(run_id="r", system="s", shard_id=0, item_id="h", error="boom")], OUTPUT_SCHEMA)
    s = score_citation_outputs(truth, outs, run_id="r", system="s").summary
    assert (s["num_errors"], s["num_parse_failures"], s["errors_by_kind"]) == (1, 0, {"unknown": 1})
    assert s["detection_rate"] == 0.0 and not math.isnan(s["parse_failure_rate"])
