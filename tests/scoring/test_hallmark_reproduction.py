"""The released HALLMARK aggregates are reproduced exactly from the per-entry predictions."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from scoring.bootstrap import resample_chunks, strata_of
from scoring.citations.entry_table import EntryTable
from scoring.citations.hallmark_jsonl import read_entries, read_predictions
from scoring.citations.metrics import metric_batch, point_metrics
from tests.helpers.paths import HALLMARK_DATA, REPO_ROOT

pytestmark = pytest.mark.requires_shared_data  # every test reads the released HALLMARK files

PAIRS = {
    "bibtexupdater_v1.2.0_dev_public_per_entry.jsonl": "bibtexupdater_dev_public.json",
    "llm_openrouter_gemini_pro_dev_public.jsonl": "llm_openrouter_gemini_pro_dev_public.json",
    "llm_openrouter_llama_4_maverick_dev_public.jsonl": "llm_openrouter_llama_4_maverick_dev_public.json",
    "llm_openrouter_qwen_max_dev_public.jsonl": "llm_openrouter_qwen_max_dev_public.json",
}
EXACT_KEYS = ("detection_rate", "false_positive_rate", "f1_hallucination", "tier_weighted_f1", "mcc", "ece", "auroc")
ALSO_EXACT = ("macro_f1", "auprc", "tier3_f1", "num_uncertain", "num_entries", "num_hallucinated", "num_valid")


def test_every_per_entry_file_has_a_stored_aggregate():
    files = sorted(p.name for p in (HALLMARK_DATA / "per_entry_predictions").glob("*.jsonl"))
    assert files == sorted(PAIRS)


@pytest.mark.parametrize("pred_file", sorted(PAIRS))
@pytest.mark.integration
def test_command_reproduces_stored_aggregate(pred_file, tmp_path):
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "jobs" / "score_predictions.py"),
         "--entries", str(HALLMARK_DATA / "dev_public.jsonl"),
         "--predictions", str(HALLMARK_DATA / "per_entry_predictions" / pred_file), "--out", str(out)],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(out.read_text())
    ref = json.loads((HALLMARK_DATA / "baseline_results" / PAIRS[pred_file]).read_text())
    for k in EXACT_KEYS + ALSO_EXACT:
        assert got[k] == ref[k], (k, got[k], ref[k])  # bit for bit, not approximately
    for tier, ref_t in ref["per_tier_metrics"].items():
        for k, v in ref_t.items():
            assert got["per_tier_metrics"][tier][k] == v, (tier, k)
    for htype, ref_t in ref["per_type_metrics"].items():
        g = got["per_type_metrics"][htype]
        assert g["count"] == ref_t["count"]
        if htype != "valid":
            assert g["detection_rate"] == ref_t["detection_rate"]
            assert g["f1"] == ref_t["f1"]
        else:
            assert g["false_positive_rate"] == ref_t["false_positive_rate"]
            assert g["detection_rate"] == 0.0  # structurally undefined; HALLMARK writes 0.0 and so do we


@pytest.fixture(scope="module")
def gemini():
    truth = read_entries(HALLMARK_DATA / "dev_public.jsonl")
    preds = read_predictions(
        HALLMARK_DATA / "per_entry_predictions" / "llm_openrouter_gemini_pro_dev_public.jsonl", system="gemini"
    )
    return EntryTable.from_tables(truth, preds.outputs)


def test_vectorized_bootstrap_equals_resample_by_resample(gemini):
    """Each resample's metrics equal the point metrics of the resampled entries (HALLMARK's loop), taken
    in truth order (ECE's equal-mass bins cut through ties; for Gemini's ties the order happens not
    to matter, see test_bootstrap_coverage.py for a system where it does)."""
    view = gemini.view("conservative")
    strata = strata_of(gemini.htype)
    draws, W = next(resample_chunks(strata, 40, seed=42, chunk=40))
    batch = metric_batch(gemini, view, W, draws)
    rng = np.random.default_rng(42)
    for b in range(40):
        idx = np.concatenate([g[rng.choice(len(g), size=len(g), replace=True)] for g in strata])
        assert np.array_equal(idx, draws[b])
        sub = gemini.subset(np.sort(idx))
        ref = point_metrics(sub, sub.view("conservative"))
        for k, v in ref.items():
            assert batch[k][b] == pytest.approx(v, rel=1e-12, abs=1e-14, nan_ok=True), (b, k)


def test_strata_follow_first_appearance(gemini):
    strata = strata_of(gemini.htype)
    firsts = [int(g[0]) for g in strata]
    assert firsts == sorted(firsts)
    assert sum(len(g) for g in strata) == gemini.n == 1119
    assert len(strata) == 15  # 14 types + valid


def test_gemini_bootstrap_cis_seed_42_10000(gemini):
    """10,000 stratified resamples, seed 42 (HALLMARK's stream). The released JSON stores no CI, so
    these pin our run of HALLMARK's procedure; the loop-equivalence test above ties it to the procedure."""
    from scoring import score_entries

    s = score_entries(gemini, run_id="r", system="gemini", bootstrap=10_000, seed=42).summary
    assert s["detection_rate_ci"] == pytest.approx([0.44194107452339687, 0.5104538753928998], abs=1e-12)
    assert s["f1_hallucination_ci"] == pytest.approx([0.5945330296127562, 0.6578366445916115], abs=1e-12)
    assert s["fpr_ci"] == pytest.approx([0.032, 0.06986027944111776], abs=1e-12)
    assert s["mcc_ci"] == pytest.approx([0.43371033185062535, 0.5106515592971038], abs=1e-12)
    assert s["tier_weighted_f1_ci"] == pytest.approx([0.5729286689172194, 0.6440489432703003], abs=1e-12)
    assert s["ece_ci"] == pytest.approx([0.27696414518380724, 0.3180355590718934], abs=1e-9)


def _same(ours, ref, path=""):
    """Key-for-key equality; numbers within 1e-9; our null equals HALLMARK's NaN (we never write NaN)."""
    import math

    if isinstance(ref, dict):
        assert isinstance(ours, dict) and set(ours) == set(ref), (path, sorted(set(ours) ^ set(ref)))
        for k in ref:
            _same(ours[k], ref[k], f"{path}/{k}")
    elif isinstance(ref, float) and math.isnan(ref):
        assert ours is None or (isinstance(ours, float) and math.isnan(ours)), (path, ours)
    elif isinstance(ref, int | float) and not isinstance(ref, bool):
        assert isinstance(ours, int | float) and math.isclose(ours, ref, rel_tol=1e-9, abs_tol=1e-12), (path, ours, ref)
    else:
        assert ours == ref, (path, ours, ref)


@pytest.mark.integration
def test_result_file_diffs_key_for_key_against_the_released_aggregate(tmp_path):
    """bibtex-updater's per-entry file -> `--hallmark-keys-only` result == HALLMARK's released result,
    every key (type_accuracy, type_confusion, cascade_breakdown_stats, mean_api_calls from
    btu_api_sources, the btu status histogram, 0.0 per-type rates) except `_provenance`, which
    records who generated the file and when."""
    if not HALLMARK_DATA.exists():
        pytest.skip(f"{HALLMARK_DATA} absent (../shared/data is not checked out)")
    out = tmp_path / "btu.json"
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "jobs" / "score_predictions.py"), "--hallmark-keys-only",
         "--tool-name", "bibtexupdater", "--entries", str(HALLMARK_DATA / "dev_public.jsonl"),
         "--predictions", str(HALLMARK_DATA / "per_entry_predictions" / "bibtexupdater_v1.2.0_dev_public_per_entry.jsonl"),
         "--out", str(out)], capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(out.read_text())
    ref = json.loads((HALLMARK_DATA / "baseline_results" / "bibtexupdater_dev_public.json").read_text())
    assert list(got) == list(ref)  # same keys, same order
    got.pop("_provenance")
    ref.pop("_provenance")
    _same(got, ref)
    assert got["mean_api_calls"] == pytest.approx(1.9901697944593386)


def test_every_released_key_is_written_by_default(tmp_path):
    """The default result (HALLMARK's keys then ours) holds every key of the released Gemini file,
    with equal values; mean_api_calls is null, not 0.0, when no line says how many calls it made."""
    if not HALLMARK_DATA.exists():
        pytest.skip(f"{HALLMARK_DATA} absent (../shared/data is not checked out)")
    from scoring.citations.result_file import score_prediction_file

    _, got = score_prediction_file(HALLMARK_DATA / "dev_public.jsonl",
                                   HALLMARK_DATA / "per_entry_predictions" / "llm_openrouter_gemini_pro_dev_public.jsonl",
                                   eval_mode="both")
    ref = json.loads((HALLMARK_DATA / "baseline_results" / "llm_openrouter_gemini_pro_dev_public.json").read_text())
    assert set(ref) <= set(got)
    _same({k: (got[k] if k != "per_type_metrics" else {t: {m: v for m, v in row.items() if m != "wilson_ci"}
                                                       for t, row in got[k].items()}) for k in ref}, ref)
    assert set(got["eval_modes"]) == {"conservative", "aggressive"}
    assert set(ref) <= set(got["eval_modes"]["aggressive"])
    lines = [json.loads(line) for line in (HALLMARK_DATA / "per_entry_predictions" /
                                           "bibtexupdater_v1.2.0_dev_public_per_entry.jsonl").read_text().splitlines()]
    stripped = tmp_path / "no_calls_dev_public.jsonl"
    stripped.write_text("".join(json.dumps({k: v for k, v in line.items() if k != "btu_api_sources"}) + "\n"
                                for line in lines))
    _, bare = score_prediction_file(HALLMARK_DATA / "dev_public.jsonl", stripped)
    assert bare["mean_api_calls"] is None and bare["split_name"] == "dev_public"
    assert bare["type_accuracy"]["num_evaluated"] == 0.0 and bare["type_accuracy"]["overall"] is None


def test_run_scores_hold_both_eval_modes_and_hallmark_keys():
    """A run's scores.json (audits.summary) carries HALLMARK's keys and, with eval_mode
    "both", a block per mode."""
    if not HALLMARK_DATA.exists():
        pytest.skip(f"{HALLMARK_DATA} absent (../shared/data is not checked out)")
    from scoring.citations.hallmark_result import HALLMARK_KEYS, run_scores
    from scoring.citations.score import score_citation_outputs

    truth = read_entries(HALLMARK_DATA / "dev_public.jsonl")
    outputs = read_predictions(HALLMARK_DATA / "per_entry_predictions" / "llm_openrouter_gemini_pro_dev_public.jsonl",
                               system="gemini").outputs
    score = score_citation_outputs(truth, outputs, run_id="r", system="gemini", eval_mode="both")
    scores = run_scores(score, truth, outputs, split_name="dev_public")
    assert list(scores)[: len(HALLMARK_KEYS)] == list(HALLMARK_KEYS)
    assert scores["split_name"] == "dev_public" and scores["mean_api_calls"] == 1.0
    assert scores["cost_efficiency"] == pytest.approx(0.08682568167733094)
    assert set(scores["eval_modes"]) == {"conservative", "aggressive"}
    assert scores["eval_modes"]["aggressive"]["detection_rate"] > scores["eval_modes"]["conservative"]["detection_rate"]
