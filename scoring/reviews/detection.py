"""Task 1 (HalluPeer appendix D.1): Accuracy, Precision, Recall, F1 and MCC from a confusion matrix.

"Standard definitions", with the positive class = hallucinated:
accuracy = (TP+TN)/N, precision = TP/(TP+FP), recall = TP/(TP+FN), F1 = 2TP/(2TP+FP+FN),
MCC = (TP·TN − FP·FN)/sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)).
Undefined (NaN in arrays, `None` with a reason in `MetricValue`): accuracy with N = 0; precision
with no positive prediction; recall with no gold positive; F1 with neither; MCC when any of the four
marginals is 0 (a detector that never says "hallucinated" has no MCC, not MCC 0). F1 written as
2TP/(2TP+FP+FN) equals 2PR/(P+R) wherever both are defined and is 0, not undefined, for a detector
that flags nothing while gold positives exist (its recall is 0).

Counts may be arrays of any shape (one entry per bootstrap resample): every function is vectorised.
"""

from __future__ import annotations

import numpy as np

BINARY_METRICS: tuple[str, ...] = ("accuracy", "precision", "recall", "f1", "mcc")


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def binary_metrics(tp, fp, fn, tn) -> dict[str, np.ndarray]:
    """The five Task 1 metrics, NaN where undefined; inputs broadcast together."""
    tp, fp, fn, tn = (np.asarray(x, dtype=float) for x in (tp, fp, fn, tn))
    n = tp + fp + fn + tn
    marginals = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    return {
        "accuracy": _div(tp + tn, n),
        "precision": _div(tp, tp + fp),
        "recall": _div(tp, tp + fn),
        "f1": _div(2 * tp, 2 * tp + fp + fn),
        "mcc": _div(tp * tn - fp * fn, np.sqrt(np.where(marginals > 0, marginals, 0.0))),
    }


def undefined_reason(metric: str, tp: float, fp: float, fn: float, tn: float) -> str | None:
    """Why `metric` is undefined for these counts (None when it is defined)."""
    if tp + fp + fn + tn == 0:
        return "no scored units"
    if metric == "precision" and tp + fp == 0:
        return "no positive predictions (TP+FP = 0)"
    if metric == "recall" and tp + fn == 0:
        return "no gold positives (TP+FN = 0)"
    if metric == "f1" and 2 * tp + fp + fn == 0:
        return "no gold positives and no positive predictions"
    if metric == "mcc":
        empty = [name for name, v in (("predicted positive", tp + fp), ("gold positive", tp + fn),
                                      ("gold negative", tn + fp), ("predicted negative", tn + fn)) if v == 0]  # fmt: skip
        if empty:
            return "MCC undefined: no " + ", no ".join(empty) + " units"
    return None
