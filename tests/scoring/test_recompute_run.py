"""A real run's stored scores, metrics and report numbers are rebuilt from its stored records alone."""

from __future__ import annotations

import json
import math

import pytest

from scoring import recompute_run, stored_scores
from scoring.citations.report import write_run_report
from scoring.citations.stored_run import report_context
from storage.store import Store
from tests.helpers.run_job import run_job

SNAPSHOT = "2026-11-29"
#: Keys the run summary adds to scores.json about the run, not the scores (audits/summary.py).
RUN_STATUS_KEYS = {"published", "status"}
#: HALLMARK result keys a run's scores.json adds from its outputs (scoring.citations.hallmark_result.run_scores)
HALLMARK_OUTPUT_KEYS = {"split_name", "union_recall_at_k", "temporal_robustness", "cost_efficiency", "mean_api_calls",
                        "type_accuracy", "type_confusion", "cascade_breakdown_stats", "eval_modes"}


def _same_rows(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.keys() == w.keys()
        for k, v in w.items():
            if isinstance(v, float) and math.isnan(v):
                assert isinstance(g[k], float) and math.isnan(g[k]), (w, k)
            else:
                assert g[k] == v, (w, k, g[k])


@pytest.fixture(scope="module")
def stored_run(ray_head, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("recompute")
    result = run_job("run_corpus.py", "--systems", "prescreen,always_valid", "--snapshot", SNAPSHOT,
                     "--eval-mode", "both", "--bootstrap", "100", "--tracking-uri", "none",
                     "--storage", str(tmp / "runs"), cwd=tmp, env=ray_head.env())  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    root = tmp / "runs"
    run_ids = sorted(p.name for p in root.iterdir() if (p / "manifest.json").exists())
    assert len(run_ids) == 2
    return root, run_ids


@pytest.mark.heavy
def test_recomputed_scores_equal_what_the_run_stored(stored_run):
    root, run_ids = stored_run
    for run_id in run_ids:
        score = recompute_run(str(root), run_id)
        stored = stored_scores(str(root), run_id)
        assert score.n_bootstrap == 100 and list(score.modes) == ["conservative", "aggressive"]
        _same_rows(score.metric_rows().to_pylist(), stored.metrics.to_pylist())
        summary = json.loads(json.dumps(score.summary, default=str))
        assert summary == {k: stored.summary[k] for k in summary}
        assert set(stored.summary) - set(summary) <= RUN_STATUS_KEYS | HALLMARK_OUTPUT_KEYS
    prescreen = recompute_run(Store(str(root)), next(r for r in run_ids if "prescreen" in r))
    assert prescreen.system == "prescreen" and prescreen.summary["detection_rate"] > 0


@pytest.mark.heavy
def test_recomputed_report_prints_the_stored_numbers(stored_run, tmp_path):
    root, run_ids = stored_run
    scores = [recompute_run(str(root), r) for r in run_ids]
    write_run_report(tmp_path, sorted(scores, key=lambda s: s.system != "prescreen"),
                     context=report_context(str(root), run_ids))  # corpus, snapshot, revision, status: stored too
    (report_dir,) = [p for p in (root / "reports").iterdir() if p.is_dir()]
    for name in ("leaderboard.json", "fold_ablation.json", "per_type.csv", "ppv_sweep.csv", "report.md", "said.csv"):
        assert (tmp_path / name).read_text() == (report_dir / name).read_text(), name


def test_missing_run_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no manifest"):
        recompute_run(str(tmp_path), "nope")
