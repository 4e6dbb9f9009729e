"""Issue 21: AUDIT INVALID when a control reaches a reviewer's detection rate within its interval,
said at the top of the console, in run_summary.json, in MLflow's tags and by the exit status."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

from audits.summary import PAPER_LEADERBOARD_METRICS, RunSummary
from jobs.run_corpus import EXIT_AUDIT_INVALID, EXIT_ERRORED_ITEMS, EXIT_INCOMPLETE, EXIT_OK, exit_status
from scoring.papers.metrics import audit_invalid_reasons, audit_validity, reviewer_audit_rows
from scoring.papers.rows import metric_row
from storage.run_publication import AuditValidity, SystemSummary, publish_report
from storage.store import Store


def _rows(reviewer: tuple[float, float], **controls: float) -> list[dict]:
    """A reviewer's rate with its CI, and each control's rate over all its injections."""
    value, low = reviewer
    rows = [metric_row("r", "rev-A", "detection_rate", "all", value, (low, min(1.0, value + 0.1)), 65)]
    for name, rate in ({"null": 0.0} | controls).items():
        rows.append(metric_row("r", f"control:{name}", "detection_over_all", "all", rate, n=65))
        rows.append(metric_row("r", f"control:{name}", "detection_rate", "all", rate, n=65))
    return rows


def test_a_control_reaching_the_reviewers_interval_invalidates_and_one_above_it_beats_it():
    assert audit_invalid_reasons(_rows((0.40, 0.30), random_quote=0.03, quote_everything=0.0)) == []
    [reason] = audit_invalid_reasons(_rows((0.40, 0.30), quote_everything=0.31))
    assert "quote_everything control" in reason and "reaches reviewer rev-A" in reason
    # issue 21's run: random quotes 2/65 against a reviewer's 0/65
    [reason] = audit_invalid_reasons(_rows((0.0, 0.0), random_quote=2 / 65))
    assert "random_quote control (0.031" in reason and "beats reviewer rev-A" in reason
    # a control that detects nothing cannot invalidate a reviewer that detects nothing
    assert audit_invalid_reasons(_rows((0.0, 0.0), random_quote=0.0, token_quotes=0.0)) == []
    # the reviewer's own reviews shuffled across papers count as a control too
    assert "shuffled control" in audit_invalid_reasons(_rows((0.2, 0.1), **{"shuffled:rev-A": 0.15}))[0]
    assert audit_invalid_reasons(_rows((0.2, 0.1), **{"shuffled:rev-B": 0.15})) == []  # another reviewer's


def test_the_null_tolerance_still_invalidates_every_reviewer():
    rows = _rows((0.9, 0.8), null=0.2)
    reasons = audit_invalid_reasons(rows)
    assert len(reasons) == 1 and "null control" in reasons[0] and "0.200 > 0.05" in reasons[0]
    assert audit_validity(rows) == reasons[0]
    flags = {r["metric"]: r["value"] for r in reviewer_audit_rows(rows, "rev-A", "run")}
    assert flags["audit_invalid"] == 1.0


def _summary(reasons: tuple[str, ...]) -> RunSummary:
    system = SystemSummary("rev-A", "run-a", "complete", {"detection_rate": 0.0}, 4, 0, 0, "file:///x",
                           validity=AuditValidity(True, reasons))
    return RunSummary(systems=[system], columns=PAPER_LEADERBOARD_METRICS)


def test_the_console_says_audit_invalid_above_the_leaderboard_and_the_run_exits_7():
    reason = "AUDIT INVALID: the random_quote control (0.031 over n = 65) beats reviewer rev-A's detection rate"
    console = _summary((reason,)).render()
    assert console.index("AUDIT INVALID") < console.index("Paper audit: detection rate")
    assert f"  - {reason}" in console
    assert "AUDIT INVALID" not in _summary(()).render()
    done = SimpleNamespace(stopped_by_budget=False, complete=True)
    assert exit_status(done, _summary((reason,))) == EXIT_AUDIT_INVALID == 7
    assert exit_status(done, _summary(())) == EXIT_OK
    assert exit_status(SimpleNamespace(stopped_by_budget=False, complete=False), _summary((reason,))) == EXIT_INCOMPLETE
    errored = _summary(())
    errored.systems[0].errored = 2
    assert exit_status(done, errored) == EXIT_ERRORED_ITEMS


def test_run_summary_json_carries_the_validity_with_its_reasons(tmp_path: Path):
    store = Store(str(tmp_path / "store"))
    report_dir = tmp_path / "report"
    report_dir.mkdir()
    (report_dir / "report.md").write_text("# r\n")
    run = SimpleNamespace(run_id="run-a", manifest={"corpus": {"name": "c"}, "snapshot": "2026-12-02"})
    reasons = ("AUDIT INVALID: x",)
    _, uri = publish_report(store, _summary(reasons).systems, [run], report_dir, [report_dir / "report.md"],
                            PAPER_LEADERBOARD_METRICS)
    [row] = json.loads(Path(uri.removeprefix("file://")).read_text())
    assert row["audit_validity"] == {"checked": True, "invalid": True, "reasons": ["AUDIT INVALID: x"]}
    assert not math.isnan(row["detection_rate"])
