"""HALLMARK's result-file keys that our summary does not compute, and the key-for-key HALLMARK view.

`hallmark_extras` adds, from the truth and output tables, what HALLMARK's `evaluate()` writes
besides the metrics (hallmark/evaluation/metrics.py, v1.2.x):

* `split_name`; `union_recall_at_k` ({} for one strategy, as HALLMARK writes it);
  `temporal_robustness` (null: HALLMARK's temporal analysis needs publication dates per
  prediction, and its released dev/stress files all hold null);
* `cost_efficiency` = entries per second of summed wall-clock (null without any timing) and
  `mean_api_calls` = API calls / predictions, where a per-entry file's `btu_api_sources` counts
  one call per source; null when no prediction says how many calls it made (not 0.0);
* `type_accuracy`: among truly hallucinated entries flagged HALLUCINATED *with* a predicted type,
  the fraction whose type is right (overall, per tier, main vs stress-test types), NaN-free: an
  empty partition is null (HALLMARK writes NaN; our JSON writer never does);
* `type_confusion`: rows = the 14 types + valid, columns = the 14 types + VALID, UNCERTAIN,
  HALLUCINATED_unknown (flagged without a type); a missing prediction counts as VALID;
* `cascade_breakdown_stats`: predictions per `cascade_stage` (stage1_db, stage2_diagnosis,
  prescreening, none).

`hallmark_view` orders a summary by HALLMARK's keys and drops ours, so the result diffs against a
released `baseline_results/*.json` key for key. Where a per-type rate is structurally undefined
(FPR of a hallucination type, DR of `valid`) HALLMARK writes 0.0, and so do we there.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

HALLUCINATION_TYPES: tuple[str, ...] = (
    "fabricated_doi", "nonexistent_venue", "placeholder_authors", "future_date", "chimeric_title", "wrong_venue",
    "swapped_authors", "preprint_as_published", "hybrid_fabrication", "near_miss_title", "plausible_fabrication",
    "merged_citation", "partial_author_list", "arxiv_version_mismatch",
)
STRESS_TEST_TYPES = frozenset({"merged_citation", "partial_author_list", "arxiv_version_mismatch"})
CASCADE_STAGES = ("stage1_db", "stage2_diagnosis", "prescreening", "none")
#: HALLMARK's EvaluationResult keys, in its order.
HALLMARK_KEYS: tuple[str, ...] = (
    "tool_name", "split_name", "num_entries", "num_hallucinated", "num_valid", "detection_rate",
    "false_positive_rate", "f1_hallucination", "tier_weighted_f1", "mcc", "macro_f1", "union_recall_at_k",
    "temporal_robustness", "cost_efficiency", "mean_api_calls", "ece", "auroc", "auprc", "num_uncertain",
    "tier3_f1", "detection_rate_ci", "f1_hallucination_ci", "tier_weighted_f1_ci", "fpr_ci", "ece_ci", "mcc_ci",
    "tier3_f1_ci", "per_tier_metrics", "per_type_metrics", "coverage", "coverage_adjusted_f1", "type_accuracy",
    "type_confusion", "cascade_breakdown_stats",
)
_PER_TYPE_KEYS = ("detection_rate", "false_positive_rate", "f1", "count")


def _rate(correct: int, total: int) -> float | None:
    return correct / total if total else None


def hallmark_extras(truth: pa.Table, outputs: pa.Table, *, split_name: str | None,
                    api_calls_known: bool | None = None) -> dict[str, Any]:
    """The HALLMARK keys computed from entries and predictions (see the module notes)."""
    gold = {r["item_id"]: r for r in truth.select(["item_id", "label", "hallucination_type", "difficulty_tier"])
            .to_pylist() if r["label"] is not None}
    cols = [c for c in ("item_id", "label", "predicted_type", "api_calls", "latency_s", "detail_json", "error")
            if c in outputs.column_names]
    preds = {r["item_id"]: r for r in outputs.select(cols).to_pylist()}
    answered = [p for p in preds.values() if p.get("error") is None]
    n = len(answered)
    seconds = sum(float(p.get("latency_s") or 0.0) for p in answered)
    known = api_calls_known if api_calls_known is not None else any(p.get("api_calls") is not None for p in answered)
    calls = sum(int(p.get("api_calls") or 0) for p in answered)

    acc: dict[str, list[int]] = {k: [0, 0] for k in ("overall", "main", "stress", "1", "2", "3")}
    columns = [*HALLUCINATION_TYPES, "VALID", "UNCERTAIN", "HALLUCINATED_unknown"]
    confusion = {row: dict.fromkeys(columns, 0) for row in (*HALLUCINATION_TYPES, "valid")}
    for key, g in gold.items():
        p = preds.get(key)
        label = None if p is None or p.get("error") is not None else p["label"]
        ptype = p.get("predicted_type") if p is not None else None
        row = "valid" if g["label"] == "VALID" or g["hallucination_type"] not in confusion else g["hallucination_type"]
        col = "VALID" if label in (None, "VALID") else "UNCERTAIN" if label == "UNCERTAIN" else (
            ptype if ptype in HALLUCINATION_TYPES else "HALLUCINATED_unknown")
        confusion[row][col] += 1
        if g["label"] == "HALLUCINATED" and label == "HALLUCINATED" and ptype is not None:
            right = int(ptype == g["hallucination_type"])
            for part in ("overall", "stress" if g["hallucination_type"] in STRESS_TEST_TYPES else "main",
                         str(g["difficulty_tier"] or 1)):
                if part in acc:
                    acc[part][0] += right
                    acc[part][1] += 1
    type_accuracy = {
        "overall": _rate(*acc["overall"]), "main_types_only": _rate(*acc["main"]),
        "stress_test_only": _rate(*acc["stress"]), "num_evaluated": float(acc["overall"][1]),
        "num_correct": float(acc["overall"][0]),
        **{f"tier_{t}": _rate(*acc[str(t)]) for t in (1, 2, 3)},
    }
    stages: dict[str, Counter] = {s: Counter() for s in CASCADE_STAGES}
    for p in preds.values():
        detail = json.loads(p["detail_json"]) if p.get("detail_json") else {}
        stage = detail.get("cascade_stage") if isinstance(detail.get("cascade_stage"), str) else None
        stages[stage if stage in stages else "none"][p["label"]] += 1
    total = len(preds)
    cascade = {s: {"count": sum(c.values()), "fraction": sum(c.values()) / total if total else 0.0,
                   "HALL": c["HALLUCINATED"], "VALID": c["VALID"], "UNCERTAIN": c["UNCERTAIN"]}
               for s, c in stages.items()}
    return {
        "split_name": split_name,
        "union_recall_at_k": {},
        "temporal_robustness": None,
        "cost_efficiency": n / seconds if seconds > 0 else None,
        "mean_api_calls": calls / n if n and known else None,
        "type_accuracy": type_accuracy,
        "type_confusion": confusion,
        "cascade_breakdown_stats": cascade,
    }


def hallmark_per_type(per_type: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per-type metrics with HALLMARK's keys and its 0.0 for structurally undefined rates."""
    out = {}
    for t, m in per_type.items():
        row = {k: m.get(k) for k in _PER_TYPE_KEYS}
        if t == "valid":
            row["detection_rate"] = 0.0 if row["detection_rate"] is None else row["detection_rate"]
            row["f1"] = 0.0 if row["f1"] is None else row["f1"]
        elif row["false_positive_rate"] is None:
            row["false_positive_rate"] = 0.0  # no valid entry in a hallucination type: HALLMARK writes 0.0
        out[t] = row
    return out


def with_hallmark_keys(summary: dict[str, Any], extras: dict[str, Any]) -> dict[str, Any]:
    """`summary` with HALLMARK's keys first in HALLMARK's order, then ours; per-type rates as HALLMARK writes them."""
    merged = {**summary, **extras}
    merged["per_type_metrics"] = {t: {**m, **hallmark_per_type({t: m})[t]}
                                  for t, m in (summary.get("per_type_metrics") or {}).items()}
    ordered = {k: merged.get(k) for k in HALLMARK_KEYS}
    ordered.update({k: v for k, v in merged.items() if k not in ordered})
    return ordered


def hallmark_view(result: dict[str, Any], *, btu_status: dict[str, int] | None = None,
                  source: str | None = None) -> dict[str, Any]:
    """Only HALLMARK's keys (plus its underscore-prefixed tool extras), for a key-for-key diff."""
    view = {k: result.get(k) for k in HALLMARK_KEYS}
    view["per_type_metrics"] = hallmark_per_type(result.get("per_type_metrics") or {})
    view["_provenance"] = {"generated_at_utc": datetime.now(UTC).isoformat(), "kind": "scrutineer_rescore",
                           "source": source}
    if btu_status is not None:
        view["_btu_status_histogram"] = btu_status
    return view


def is_undefined(value: Any) -> bool:
    """null or NaN: HALLMARK writes NaN where we write null."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def run_scores(score: Any, truth: pa.Table, outputs: pa.Table, split_name: str | None = None) -> dict[str, Any]:
    """A run's scores.json: HALLMARK's keys (with `hallmark_extras`) then ours; with eval_mode "both"
    the top level is the primary mode and `eval_modes` holds every mode's block."""
    extras = hallmark_extras(truth, outputs, split_name=split_name)
    scores = with_hallmark_keys(score.summary, extras)
    if len(score.modes) > 1:
        scores["eval_modes"] = {m: with_hallmark_keys(s, extras) for m, s in score.summaries.items()}
    return scores
