"""The citation metrics: one `MetricDef` each, in the order scores.json lists them.

Adding a metric is one `CITATION_METRICS.add(...)` with its `compute` (see
`tests/scoring/test_metric_catalogue.py`): it then gets metric rows (all strata "all"), an
MLflow metric, a scores.json key with its null reason and CI key, and, with `leaderboard=True`, a
report column and glossary line.
"""

from __future__ import annotations

from scoring.metric_catalogue import MetricDef
from storage.registry import Registry

CITATION_METRICS: Registry[MetricDef] = Registry("citation metric")
for _m in (
    MetricDef("detection_rate", "DR", True, ci_key="detection_rate_ci", leaderboard=True, hallmark=True,
              glossary="detection rate: share of hallucinated citations flagged HALLUCINATED (recall).",
              undefined="undefined: no hallucinated entry in the confusion matrix"),
    MetricDef("false_positive_rate", "FPR", False, ci_key="fpr_ci", leaderboard=True, hallmark=True,
              glossary="false-positive rate: share of valid citations flagged HALLUCINATED.",
              undefined="undefined: no valid entry in the confusion matrix"),
    MetricDef("f1_hallucination", "F1", True, ci_key="f1_hallucination_ci", leaderboard=True, hallmark=True,
              glossary="harmonic mean of precision and DR on the HALLUCINATED class."),
    MetricDef("tier_weighted_f1", "TW-F1", True, ci_key="tier_weighted_f1_ci", leaderboard=True, hallmark=True,
              glossary="tier-weighted F1: hallucinated entries weigh their difficulty tier (1-3) in recall."),
    MetricDef("mcc", "MCC", True, ci_key="mcc_ci", leaderboard=True, hallmark=True,
              glossary="Matthews correlation of verdicts with truth (-1 to 1; 0 = chance); the leaderboard's ranking.",
              undefined="undefined: an empty row or column of the confusion matrix"),
    MetricDef("macro_f1", "macro-F1", True, ci_key="macro_f1_ci", hallmark=True),
    MetricDef("ece", "ECE", False, ci_key="ece_ci", leaderboard=True, hallmark=True,
              glossary="expected calibration error of the stated confidences (0 = calibrated); n/a when a system "
                       "states two or fewer distinct confidences.",
              undefined="undefined: two or fewer distinct confidences (no calibration curve)"),
    MetricDef("auroc", "AUROC", True, ci_key="auroc_ci", leaderboard=True, hallmark=True,
              glossary="probability that a hallucinated citation gets a higher hallucination score than a valid one.",
              undefined="undefined: one class absent among entries with a confidence"),
    MetricDef("auprc", "AUPRC", True, ci_key="auprc_ci", hallmark=True,
              undefined="undefined: no hallucinated entry with a confidence"),
    MetricDef("tier3_f1", "T3-F1", True, ci_key="tier3_f1_ci", hallmark=True),
    MetricDef("precision", "precision", True, ci_key="precision_ci", undefined="undefined: nothing flagged"),
):  # fmt: skip
    CITATION_METRICS.add(_m.name, _m)

#: The order of the metric rows written before the catalogue existed: kept, so stored metric
#: tables stay byte-identical; metrics added later follow in catalogue order.
_FIRST_ROW_ORDER = ("detection_rate", "false_positive_rate", "precision", "f1_hallucination", "tier_weighted_f1",
                    "mcc", "macro_f1", "tier3_f1", "ece", "auroc", "auprc")


def summary_metrics() -> tuple[str, ...]:
    """Every metric, in scores.json order."""
    return tuple(CITATION_METRICS)


def row_metrics() -> tuple[str, ...]:
    """Every metric, in metric-row order."""
    return (*_FIRST_ROW_ORDER, *(n for n in CITATION_METRICS if n not in _FIRST_ROW_ORDER))


def ci_keys() -> dict[str, str]:
    """HALLMARK's name of each metric's CI key in scores.json."""
    return {d.name: d.ci_key for d in CITATION_METRICS.values() if d.ci_key}


def leaderboard() -> list[MetricDef]:
    """The report's leaderboard columns, in order."""
    return [d for d in CITATION_METRICS.values() if d.leaderboard]


def added() -> list[MetricDef]:
    """Metrics computed by their own `compute` (added after the built-ins)."""
    return [d for d in CITATION_METRICS.values() if d.compute is not None]


__all__ = ["CITATION_METRICS", "added", "ci_keys", "leaderboard", "row_metrics", "summary_metrics"]
