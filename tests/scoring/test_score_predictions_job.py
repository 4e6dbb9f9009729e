"""The command rejects malformed prediction files with file and line, and writes reports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from scoring.citations.report import write_run_report
from scoring.citations.result_file import score_prediction_file
from tests.helpers.paths import HALLMARK_DATA, REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.requires_shared_data]  # every test scores dev_public

JOB = REPO_ROOT / "jobs" / "score_predictions.py"
ENTRIES = HALLMARK_DATA / "dev_public.jsonl"


def _run(tmp_path, lines, *extra):
    preds = tmp_path / "p.jsonl"
    preds.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return subprocess.run([sys.executable, str(JOB), "--entries", str(ENTRIES), "--predictions", str(preds),
                           "--out", str(tmp_path / "r.json"), *extra], capture_output=True, text=True, timeout=120)


def test_unknown_key_is_rejected_with_file_and_line(tmp_path):
    p = _run(tmp_path, [{"bibtex_key": "a1a52be81664", "label": "VALID", "confidence": 0.9},
                        {"bibtex_key": "caef38397355", "lable": "VALID", "confidence": 0.9}])
    assert p.returncode == 2
    assert "p.jsonl:2" in p.stderr and "lable" in p.stderr


def test_bad_label_is_rejected(tmp_path):
    p = _run(tmp_path, [{"bibtex_key": "a1a52be81664", "label": "FAKE", "confidence": 0.9}])
    assert p.returncode == 2 and "p.jsonl:1" in p.stderr and "FAKE" in p.stderr


def test_missing_predictions_count_valid_and_both_modes(tmp_path):
    p = _run(tmp_path, [{"bibtex_key": "a1a52be81664", "label": "HALLUCINATED", "confidence": 0.9}],
             "--eval-mode", "both", "--bootstrap", "50")
    assert p.returncode == 0, p.stderr
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["detection_rate"] == 1 / 606 and r["num_missing"] == 1118
    assert r["coverage"] == 1 / 1119
    agg = r["eval_modes"]["aggressive"]
    assert agg["detection_rate"] == 1.0 and agg["false_positive_rate"] == 1.0
    assert len(r["detection_rate_ci"]) == 2


def test_run_report_renders(tmp_path):
    scores = [score_prediction_file(ENTRIES, f, bootstrap=100)[0]
              for f in sorted((HALLMARK_DATA / "per_entry_predictions").glob("llm_*.jsonl"))]
    paths = write_run_report(tmp_path / "rep", scores)
    names = {p.name for p in paths}
    assert {"report.md", "report.html", "leaderboard.csv", "fold_ablation.csv", "type_heatmap.png",
            "tier_bars.png", "ppv_prevalence.png", "risk_coverage.png"} <= names
    for p in paths:
        assert p.stat().st_size > 0
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "0.476 [" in md and "llm_openrouter_gemini_pro" in md and "Kendall tau" in md
