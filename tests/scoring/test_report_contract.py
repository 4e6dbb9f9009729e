"""The report's contract (issue 10): unlabelled corpora get a report of what the systems said with
metrics "not applicable: no labels"; a system whose every output errored is failed, never scored;
coverage sits next to DR/FPR; report.html is self-contained and states the run's facts."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from scoring import score_citation_outputs
from scoring.citations.report import glossary, leaderboard_rows, write_run_report
from scoring.citations.score import NO_LABELS
from scoring.report_context import ReportContext, SystemStatus
from storage.schemas import OUTPUT_SCHEMA, TRUTH_SCHEMA, table_from_rows


def strict_loads(text: str):
    def bad(token: str):
        raise ValueError(f"not JSON: {token}")
    return json.loads(text, parse_constant=bad)


def _outputs(system: str, rows: list[dict]):
    return table_from_rows([dict(run_id=f"run-{system}", system=system, shard_id=0, **r) for r in rows], OUTPUT_SCHEMA)


def _said(system: str):
    rows = [
        dict(item_id="a", label="VALID", confidence=0.6, subtests_json='{"doi_well_formed": true, "year_plausible": true}'),
        dict(item_id="b", label="HALLUCINATED", confidence=0.9, predicted_type="future_date",
             subtests_json='{"doi_well_formed": true, "year_plausible": false}'),
        dict(item_id="c", label="UNCERTAIN", confidence=0.5, subtests_json='{"doi_well_formed": null}'),
        dict(item_id="d", error="broken entry at line 4", error_kind="input"),
    ]
    return _outputs(system, rows)


def _failed(system: str):
    return _outputs(system, [dict(item_id=i, error=f"provider said 401 on {i}", error_kind="provider") for i in "abcd"])


@pytest.fixture(scope="module")
def unlabelled():
    truth = TRUTH_SCHEMA.empty_table()  # a .bib corpus: no truth at all
    return [score_citation_outputs(truth, _said("prescreen"), run_id="run-prescreen", system="prescreen", bootstrap=50),
            score_citation_outputs(truth, _failed("llm"), run_id="run-llm", system="llm", bootstrap=50)]


def test_unlabelled_summary_marks_metrics_not_applicable(unlabelled):
    s = unlabelled[0].summary
    assert s["labelled"] is False and s["detection_rate"] is None and s["mcc"] is None
    assert s["null_reasons"]["detection_rate"] == NO_LABELS and s["null_reasons"]["coverage"] == NO_LABELS
    strict_loads(json.dumps(s))  # no NaN left anywhere in the summary
    said = s["outputs"]
    assert said["labels"] == {"VALID": 1, "HALLUCINATED": 1, "UNCERTAIN": 1}
    assert (said["num_errors"], said["errors_by_kind"], said["num_decided"]) == (1, {"input": 1}, 2)
    assert said["decided_share"] == 0.5
    assert said["subtests"]["year_plausible"] == {"fail": 1, "pass": 1}
    assert said["subtests"]["doi_well_formed"] == {"not checked": 1, "pass": 2}


def test_unlabelled_report_says_what_systems_said(unlabelled, tmp_path):
    write_run_report(tmp_path, unlabelled)
    board = strict_loads((tmp_path / "leaderboard.json").read_text())
    by = {r["system"]: r for r in board}
    assert by["prescreen"]["state"] == "no labels" and by["prescreen"]["metrics_note"] == NO_LABELS
    assert (by["prescreen"]["said_valid"], by["prescreen"]["said_hallucinated"], by["prescreen"]["said_uncertain"]) == (1, 1, 1)
    assert by["prescreen"]["detection_rate"] is None
    md = (tmp_path / "report.md").read_text()
    assert NO_LABELS in md and "## What the systems said" in md and "## Per-field checks" in md
    assert "| prescreen | 4 | 1 | 1 | 1 | 1 | 50.0% | input: 1 | future_date: 1 |" in md
    assert "| prescreen | year_plausible | 1 | 1 | 0 |" in md
    assert (tmp_path / "said_bars.png").stat().st_size > 1000


def test_every_output_errored_is_failed_not_scored(unlabelled, tmp_path):
    failed = unlabelled[1]
    assert failed.failed and not unlabelled[0].failed
    write_run_report(tmp_path, unlabelled)
    (row,) = [r for r in strict_loads((tmp_path / "leaderboard.json").read_text()) if r["system"] == "llm"]
    assert row["state"] == "failed" and row["first_error"] == "provider said 401 on a"
    assert all(row[k] is None for k in ("detection_rate", "false_positive_rate", "mcc", "f1_hallucination"))
    md = (tmp_path / "report.md").read_text()
    assert "llm: FAILED: every output errored, not scored. First error: provider said 401 on a" in md


def test_failed_system_on_labelled_corpus_gets_no_numbers(tmp_path):
    truth = table_from_rows([dict(item_id=i, label="VALID") for i in "abcd"], TRUTH_SCHEMA)
    score = score_citation_outputs(truth, _failed("llm"), run_id="r", system="llm")
    assert score.failed
    (row,) = leaderboard_rows([score])
    # without the fix the errored items counted VALID: FPR 0.000, a row of zeros for a system that said nothing
    assert row["state"] == "failed" and row["false_positive_rate"] is None and row["decided_fraction"] == 0.0
    write_run_report(tmp_path, [score])
    assert "| llm | FAILED |" in (tmp_path / "report.md").read_text()


def _mostly_uncertain():
    truth = table_from_rows([dict(item_id=f"h{i}", label="HALLUCINATED", hallucination_type="fabricated_doi",
                                  difficulty_tier=1) for i in range(10)]
                            + [dict(item_id=f"v{i}", label="VALID") for i in range(10)], TRUTH_SCHEMA)  # fmt: skip
    rows = [dict(item_id="h0", label="HALLUCINATED", confidence=0.9)]
    rows += [dict(item_id=f"h{i}", label="UNCERTAIN", confidence=0.5) for i in range(1, 10)]
    rows += [dict(item_id=f"v{i}", label="UNCERTAIN", confidence=0.5) for i in range(10)]
    return score_citation_outputs(truth, _outputs("timid", rows), run_id="r", system="timid")


def test_coverage_sits_next_to_dr(tmp_path):
    score = _mostly_uncertain()  # DR 1.000 on the one entry it decided: coverage 5%
    (row,) = leaderboard_rows([score])
    assert row["detection_rate"] == 1.0 and row["decided_fraction"] == pytest.approx(0.05)
    write_run_report(tmp_path, [score])
    md = (tmp_path / "report.md").read_text()
    head = next(line for line in md.splitlines() if line.startswith("| system | DR"))
    assert head.startswith("| system | DR | FPR | coverage |")
    assert re.search(r"\| timid \| 1\.000 \| n/a \| 5\.0% \|", md)


def test_run_summary_leaderboard_prints_coverage():
    from audits.summary import RunSummary
    from storage.run_publication import SystemSummary

    score = _mostly_uncertain()
    system = SystemSummary("timid", "r", "complete", score.summary, 20, 0, 0, "/x")
    text = RunSummary(systems=[system]).render()
    head, row = [line for line in text.splitlines() if line.startswith(("system", "timid"))]
    assert "coverage" in head and head.index("coverage") < head.index("scored")
    assert "1.000" in row and "5.0%" in row


def test_report_html_is_self_contained_and_states_the_run(tmp_path):
    score = _mostly_uncertain()
    context = ReportContext(corpus="dev@abc", snapshot="2026-11-29", code_revision="deadbeef+dirty",
                            run_ids=("r",), systems={"timid": SystemStatus("incomplete: source outage", False)})
    write_run_report(tmp_path, [score], context=context)
    page = (tmp_path / "report.html").read_text()

    class Collect(HTMLParser):
        def __init__(self):
            super().__init__()
            self.imgs, self.texts, self.in_body = [], [], False

        def handle_starttag(self, tag, attrs):
            self.in_body = self.in_body or tag == "body"
            if tag == "img":
                self.imgs.append(dict(attrs)["src"])

        def handle_data(self, data):
            if data.strip() and self.in_body:
                self.texts.append(data.strip())

    parsed = Collect()
    parsed.feed(page)
    assert parsed.imgs and all(src.startswith("data:image/png;base64,") for src in parsed.imgs)
    assert parsed.texts[1].startswith("INCOMPLETE: scores withheld: source outage")  # right under the title
    for fact in ("snapshot: 2026-11-29", "code revision: deadbeef+dirty", "corpus: dev@abc"):
        assert fact in parsed.texts
    for term, _ in glossary():
        assert term in parsed.texts
    assert {"DR", "FPR", "F1", "TW-F1", "MCC", "ECE", "AUROC", "UNCERTAIN", "coverage"} <= {t for t, _ in glossary()}
    # withheld: no numbers for that system anywhere in the leaderboard
    (row,) = strict_loads((tmp_path / "leaderboard.json").read_text())
    assert row["state"] == "withheld" and row["detection_rate"] is None
    assert (tmp_path / "report.md").read_text().splitlines()[2] == "**INCOMPLETE: scores withheld: source outage (timid)**"
