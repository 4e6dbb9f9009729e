"""The leaderboard's paired comparisons (Holm/BH over the pairs) and Plackett–Luce ranking with CIs."""

from __future__ import annotations

import numpy as np
import pytest

from scoring import score_citation_outputs
from scoring.citations.report import write_run_report
from scoring.citations.system_comparisons import correctness_matrix, pairwise_rows, ranking_rows
from scoring.multiple_testing import benjamini_hochberg, holm
from scoring.plackett_luce import plackett_luce_with_ci
from storage.schemas import OUTPUT_SCHEMA, TRUTH_SCHEMA, table_from_rows

N = 60  # 30 hallucinated, 30 valid


def _scores(n_bootstrap: int = 300):
    truth = table_from_rows([dict(item_id=f"e{i}", label="HALLUCINATED" if i < 30 else "VALID",
                                  hallucination_type="fabricated_doi" if i < 30 else None,
                                  difficulty_tier=1 if i < 30 else None) for i in range(N)], TRUTH_SCHEMA)
    wrong = {"best": set(range(0, 60, 20)), "mid": set(range(0, 60, 5)), "worst": set(range(0, 60, 2))}
    out = []
    for name, miss in wrong.items():
        rows = []
        for i in range(N):
            right = "HALLUCINATED" if i < 30 else "VALID"
            other = "VALID" if i < 30 else "HALLUCINATED"
            rows.append(dict(run_id=name, system=name, item_id=f"e{i}", shard_id=0,
                             label=other if i in miss else right, confidence=0.8))
        out.append(score_citation_outputs(truth, table_from_rows(rows, OUTPUT_SCHEMA), run_id=name, system=name,
                                          bootstrap=n_bootstrap, seed=1))
    return out


def test_pairwise_rows_adjust_across_the_family():
    entries = {s.system: s.entries for s in _scores(0)}
    rows = pairwise_rows(entries, n_resamples=400, seed=3)
    assert [(r["system_a"], r["system_b"]) for r in rows] == [("best", "mid"), ("best", "worst"), ("mid", "worst")]
    p = [r["p"] for r in rows]
    assert [r["p_holm"] for r in rows] == pytest.approx(holm(p).tolist())
    assert [r["p_bh"] for r in rows] == pytest.approx(benjamini_hochberg(p).tolist())
    bw = rows[1]  # 3 vs 30 errors out of 60: clearly apart
    assert bw["diff"] > 0.5 and bw["ci_low"] > 0 and bw["p_holm"] < 0.05
    assert all(r["p_holm"] >= r["p"] for r in rows)


def test_ranking_with_cis_orders_the_systems():
    entries = {s.system: s.entries for s in _scores(0)}
    m, names = correctness_matrix(entries)
    assert names == ["best", "mid", "worst"] and m.shape == (N, 3)
    assert m[:, 0].sum() == N - 3 and m[:, 2].sum() == N - 30
    rows = ranking_rows(entries, n_resamples=100, seed=5)
    assert [r["system"] for r in rows] == ["best", "mid", "worst"] and rows[0]["method"] == "plackett_luce"
    assert rows[0]["rank_ci_low"] == 1 and rows[2]["rank_ci_high"] == 3
    assert rows[0]["strength_ci_low"] > rows[2]["strength_ci_high"]  # best and worst do not overlap
    r = plackett_luce_with_ci(np.array([[1.0, 0.0]] * 10 + [[0.0, 1.0]] * 10), ["a", "b"], n_resamples=50)
    assert r.n_resamples == 50 and r.rank_ci["a"] == (1, 2)  # a coin flip: either rank


def test_report_has_the_sections(tmp_path):
    paths = write_run_report(tmp_path, _scores(200))
    names = {p.name for p in paths}
    assert {"pairwise.csv", "ranking.csv"} <= names
    md = (tmp_path / "report.md").read_text()
    assert "## Paired comparisons between systems" in md and "| best | worst |" in md
    assert "## Ranking (Plackett–Luce on per-entry correctness)" in md and "| 1 | best |" in md
    assert "Paired comparisons between systems" in (tmp_path / "report.html").read_text()
