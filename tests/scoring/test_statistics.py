"""Statistics beside the metrics: intervals, paired tests, corrections, ranking, folds, PPV, MDE."""

from __future__ import annotations

import csv
import math

import numpy as np
import pyarrow as pa
import pytest

from scoring import score_citation_outputs
from scoring.citations.entry_table import EntryTable
from scoring.citations.hallmark_jsonl import read_entries, read_predictions
from scoring.citations.risk_coverage import risk_coverage
from scoring.citations.taxonomy_fold import fold_ablation, fold_entries
from scoring.detectable_effect import minimum_detectable_effect
from scoring.multiple_testing import benjamini_hochberg, holm
from scoring.paired_test import cohens_h, paired_bootstrap
from scoring.plackett_luce import plackett_luce_ranking
from scoring.prevalence import ppv_at_prevalence
from scoring.proportion_interval import clopper_pearson_interval, wilson_interval
from storage.schemas import METRIC_SCHEMA, OUTPUT_SCHEMA, TRUTH_SCHEMA, table_from_rows
from tests.helpers.paths import HALLMARK_DATA

PRED = HALLMARK_DATA / "per_entry_predictions"


@pytest.fixture(scope="module")
def systems():
    truth = read_entries(HALLMARK_DATA / "dev_public.jsonl")
    out = {}
    for name in ("gemini_pro", "llama_4_maverick", "qwen_max"):
        preds = read_predictions(PRED / f"llm_openrouter_{name}_dev_public.jsonl", system=name)
        out[name] = EntryTable.from_tables(truth, preds.outputs)
    return out


def test_intervals_match_textbook_values():
    # HALLMARK paper B.1: 27/30 detected -> Clopper-Pearson [0.74, 0.98]; n = 10 -> [0.55, 0.998]
    lo, hi = clopper_pearson_interval(27, 30)
    assert (round(lo, 2), round(hi, 2)) == (0.73, 0.98)
    lo, hi = clopper_pearson_interval(9, 10)
    assert (round(lo, 2), round(hi, 3)) == (0.55, 0.997)
    lo, hi = wilson_interval(22, 45)
    assert lo == pytest.approx(0.34957, abs=1e-5) and hi == pytest.approx(0.62996, abs=1e-5)
    assert all(math.isnan(x) for x in wilson_interval(0, 0) + clopper_pearson_interval(0, 0))


def test_mde_spans_the_papers_20_to_26_points():
    assert minimum_detectable_effect(30) == pytest.approx(0.2557, abs=1e-3)
    assert minimum_detectable_effect(49) == pytest.approx(0.2001, abs=1e-3)
    assert math.isnan(minimum_detectable_effect(0))


def test_holm_and_bh_adjust_known_example():
    p = [0.01, 0.04, 0.03, 0.005]
    assert holm(p).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert benjamini_hochberg(p).tolist() == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert np.isnan(holm([np.nan, 0.01])[0]) and holm([np.nan, 0.01])[1] == pytest.approx(0.01)


@pytest.mark.requires_shared_data
def test_paired_bootstrap_gemini_vs_llama(systems):
    r = paired_bootstrap(systems["llama_4_maverick"], systems["gemini_pro"], metric="f1_hallucination",
                         n_resamples=2000, names=("llama", "gemini"))
    assert r.diff == pytest.approx(0.7065527065527065 - 0.6266968325791855)
    assert r.p_one_sided < 0.01  # Llama's F1 lead holds in nearly every resample
    assert r.diff_ci[0] > 0
    assert r.cohens_h == pytest.approx(cohens_h(r.value_a, r.value_b))
    same = paired_bootstrap(systems["gemini_pro"], systems["gemini_pro"], n_resamples=200)
    assert same.diff == 0 and same.p_one_sided == 1.0


@pytest.mark.requires_shared_data
def test_plackett_luce_on_released_matrix_and_fallback():
    with (HALLMARK_DATA / "baseline_results" / "results_matrix_dev_public.csv").open() as fh:
        rows = list(csv.reader(fh))
    head, body = rows[0], rows[1:]
    cols = [i for i, h in enumerate(head) if i > 0]
    m = np.array([[float(r[i]) if r[i] not in ("", "nan") else np.nan for i in cols] for r in body])
    names = [head[i] for i in cols]
    ranking = plackett_luce_ranking(m, names)
    assert ranking.method == "plackett_luce"
    assert sorted(ranking.systems) == sorted(names)
    flat = plackett_luce_ranking(np.array([[0.5, 0.5], [0.2, 0.2]]), ["a", "b"])
    assert flat.method == "mean_score"


def test_plackett_luce_orders_a_clear_winner():
    m = np.array([[1.0, 0.5, 0.0]] * 20 + [[0.5, 1.0, 0.0]] * 5)
    r = plackett_luce_ranking(m, ["x", "y", "z"])
    assert r.systems == ["x", "y", "z"] and r.method == "plackett_luce"


@pytest.mark.requires_shared_data
def test_folds_and_kendall_tau(systems):
    g = systems["gemini_pro"]
    out = fold_entries(g, "real_work_out")
    assert out.n == g.n - (45 + 47 + 31 + 32 + 49 - 45)  # the four real-work modes leave the scored set
    neg = fold_entries(g, "real_work_negative")
    assert neg.n == g.n and neg.hallucinated.sum() == g.hallucinated.sum() - 159
    res = {f.fold: f for f in fold_ablation(systems)}
    assert res["as_shipped"].kendall_tau == 1.0
    assert set(res) == {"as_shipped", "real_work_out", "real_work_negative", "neurips_2026"}
    assert -1.0 <= res["neurips_2026"].kendall_tau <= 1.0


@pytest.mark.requires_shared_data
def test_ppv_at_prevalence():
    # HALLMARK appendix E: Gemini 2.5 Pro (DR .476, FPR .050) -> 16.3% PPV at 2%
    assert ppv_at_prevalence(0.47594501718213056, 0.05, 0.02) == pytest.approx(0.163, abs=5e-4)
    assert math.isnan(ppv_at_prevalence(0.0, 0.0, 0.02))


@pytest.mark.requires_shared_data
def test_risk_coverage_full_coverage_equals_headline(systems):
    rc = risk_coverage(systems["gemini_pro"])
    assert rc.fpr[-1] == pytest.approx(0.05)
    assert rc.coverage[-1] == pytest.approx(1082 / 1119)


def _truth(rows):
    return table_from_rows(rows, TRUTH_SCHEMA)


def _outputs(rows):
    return table_from_rows([dict(run_id="r", system="s", shard_id=0, **r) for r in rows], OUTPUT_SCHEMA)


def test_errors_unknown_truth_and_empty_strata():
    truth = _truth([
        dict(item_id="a", label="HALLUCINATED", hallucination_type="fabricated_doi", difficulty_tier=1),
        dict(item_id="b", label="HALLUCINATED", hallucination_type="fabricated_doi", difficulty_tier=1),
        dict(item_id="c", label="VALID"),
        dict(item_id="d", label=None),
    ])
    outs = _outputs([
        dict(item_id="a", label="HALLUCINATED", confidence=0.9),
        dict(item_id="b", error="provider timeout", error_kind="provider"),
        dict(item_id="c", label="UNCERTAIN", confidence=0.5),
        dict(item_id="d", label="VALID", confidence=0.9),
    ])
    s = score_citation_outputs(truth, outs, run_id="r", system="s", eval_mode="both")
    c, a = s.summaries["conservative"], s.summaries["aggressive"]
    assert (c["num_entries"], c["num_errors"], c["num_uncertain"], c["num_scored"]) == (3, 1, 1, 2)
    assert c["detection_rate"] == 0.5  # the errored item counts as a missed (VALID) prediction
    assert c["false_positive_rate"] is None  # the only valid entry was UNCERTAIN: undefined, not 0.0
    assert a["detection_rate"] == 1.0 and a["false_positive_rate"] == 1.0  # both become HALLUCINATED
    rows = s.metric_rows()
    assert rows.schema == METRIC_SCHEMA
    fpr = [r for r in rows.to_pylist() if r["metric"] == "false_positive_rate" and r["stratum"] == "all"
           and r["eval_mode"] == "conservative"][0]
    assert math.isnan(fpr["value"]) and fpr["n"] == 0
    strata = {r["stratum"] for r in rows.to_pylist()}
    assert {"all", "tier=1", "type=fabricated_doi", "type=valid"} <= strata


def test_unknown_label_in_outputs_is_rejected():
    truth = _truth([dict(item_id="a", label="VALID")])
    bad = pa.table({"item_id": ["a"], "label": ["MAYBE"], "confidence": [0.5], "error": pa.array([None], pa.string())})
    with pytest.raises(ValueError, match="MAYBE"):
        score_citation_outputs(truth, bad, run_id="r", system="s")
