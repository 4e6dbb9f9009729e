"""Task 2 (HalluPeer appendix D.2): hallucination type classification, macro- and micro-F1.

"Evaluation is restricted to sentences annotated as hallucinated in the ground truth": each unit is
one gold-hallucinated sentence with its gold label and the detector's predicted label (or `None`
when the detector gave no type for it). Per label c over those units: TP_c = gold c and predicted
c; FP_c = predicted c, gold another label; FN_c = gold c, predicted another label or nothing.
A predicted label outside the label set (the nine anchors by default) is wrong: it is an FN of the
gold label and an FP of no listed label, so it lowers micro-F1 through FN only.

F1_c = 2TP_c/(2TP_c+FP_c+FN_c), undefined for a label that is neither gold nor predicted on any
unit. The paper averages "F1 scores across all hallucination types" without saying whether a type
never gold but predicted counts; on its corpus every type is gold, so the two readings agree. Here
both are given: `macro_f1` averages the defined F1_c, over labels gold or predicted (a label only
predicted adds an F1 of 0; the labels left out are named in the reason); `macro_f1_gold` averages
over the labels with gold support only (sklearn's `labels=` the gold ones). Micro-F1
= 2ΣTP/(2ΣTP+ΣFP+ΣFN), which equals accuracy when every unit gets a listed label.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


def type_counts(pairs: Iterable[tuple[str, str | None]], labels: Sequence[str]) -> np.ndarray:
    """(len(labels), 3) array of TP, FP, FN per label from (gold, predicted) pairs."""
    index = {label: i for i, label in enumerate(labels)}
    counts = np.zeros((len(labels), 3))
    for gold, pred in pairs:
        if gold not in index:
            raise ValueError(f"gold type {gold!r} is not one of the labels {list(labels)}")
        if pred == gold:
            counts[index[gold], 0] += 1
            continue
        counts[index[gold], 2] += 1
        if pred in index:
            counts[index[pred], 1] += 1
    return counts


def type_metrics(counts: np.ndarray) -> dict[str, np.ndarray]:
    """macro_f1 (over labels gold or predicted), macro_f1_gold (over labels with gold support),
    micro_f1 and per-label f1 from counts of shape (..., L, 3); NaN where undefined."""
    tp, fp, fn = counts[..., 0], counts[..., 1], counts[..., 2]
    den = 2 * tp + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        per_label = np.where(den > 0, 2 * tp / np.where(den > 0, den, 1.0), np.nan)
        defined = ~np.isnan(per_label)
        n_defined = defined.sum(axis=-1)
        total = np.where(defined, per_label, 0.0).sum(axis=-1)
        macro = np.where(n_defined > 0, total / np.where(n_defined > 0, n_defined, 1), np.nan)
        gold = (tp + fn) > 0  # labels with gold support: a label only ever predicted is left out
        n_gold = gold.sum(axis=-1)
        macro_gold = np.where(n_gold > 0, np.where(gold, per_label, 0.0).sum(axis=-1) / np.where(n_gold > 0, n_gold, 1), np.nan)
        micro_den = den.sum(axis=-1)
        micro = np.where(micro_den > 0, 2 * tp.sum(axis=-1) / np.where(micro_den > 0, micro_den, 1.0), np.nan)
    return {"macro_f1": macro, "macro_f1_gold": macro_gold, "micro_f1": micro, "per_label_f1": per_label}
