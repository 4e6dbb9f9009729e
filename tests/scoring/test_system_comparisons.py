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


def test_an_undefined_difference_is_nan_and_left_out_of_the_family(tmp_path):
    scores = _scores(200)[:2]
    truth = table_from_rows([dict(item_id=f"e{i}", label="HALLUCINATED" if i < 30 else "VALID",
                                  hallucination_type="fabricated_doi" if i < 30 else None,
                                  difficulty_tier=1 if i < 30 else None) for i in range(N)], TRUTH_SCHEMA)
    answers = [dict(run_id="av", system="always_valid", item_id=f"e{i}", shard_id=0, label="VALID", confidence=0.5)
               for i in range(N)]
    always = score_citation_outputs(truth, table_from_rows(answers, OUTPUT_SCHEMA), run_id="av",
                                    system="always_valid", bootstrap=200, seed=1)  # fmt: skip
    entries = {s.system: s.entries for s in [*scores, always]}
    rows = {(r["system_a"], r["system_b"]): r for r in pairwise_rows(entries, n_resamples=400, seed=3)}
    # MCC of a system that flags nothing is undefined: no difference, no p-value (before: p = 1, in the family)
    for pair in (("always_valid", "best"), ("always_valid", "mid")):
        r = rows[pair]
        assert all(np.isnan(r[k]) for k in ("diff", "ci_low", "ci_high", "p", "p_holm", "p_bh", "cohens_h")), r
    real = rows[("best", "mid")]
    assert real["p_holm"] == pytest.approx(real["p"]) and real["p_bh"] == pytest.approx(real["p"])  # a family of one
    write_run_report(tmp_path, [*scores, always])
    md = (tmp_path / "report.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith("| always_valid | best |"))
    assert line.count("not applicable") == 5 and "nan" not in line, line


def test_p_values_print_below_a_thousandth_and_never_nan():
    from scoring.report_pages import difference_text, p_value_text

    assert p_value_text(0.0) == "< 0.001" and p_value_text(0.0004) == "< 0.001" and p_value_text(0.2712) == "0.271"
    assert p_value_text(float("nan")) == "not applicable" and p_value_text(None) == "not applicable"
    assert difference_text(float("nan"), float("nan"), float("nan")) == ("not applicable", "not applicable")
    assert difference_text(0.25, 0.1, 0.4) == ("+0.250", "[0.100, 0.400]")


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
