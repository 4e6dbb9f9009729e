"""Risk–coverage curves: abstain on the least-confident entries first and score the rest.

Confidence in the HALLUCINATED direction is P(h) = confidence if flagged else 1 - confidence;
entries are dropped in order of smallest |P(h) - 0.5| (stable, truth order among ties). Entries
without a definite label and confidence are never committed. At each coverage level the curve
gives FPR, DR and F1 on the committed entries (HALLMARK appendix table 23b uses FPR at 90%).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scoring.citations.entry_table import EntryTable
from scoring.citations.metrics import f1_from_counts, hallucination_scores


@dataclass(frozen=True)
class RiskCoverage:
    """The curve, one point per number of committed entries (most confident first)."""

    coverage: np.ndarray  # committed / all scored entries
    fpr: np.ndarray
    detection_rate: np.ndarray
    f1: np.ndarray

    def at(self, coverage: float) -> dict[str, float]:
        """The point with the largest coverage not above `coverage`."""
        i = int(np.searchsorted(self.coverage, coverage, side="right")) - 1
        if i < 0:
            return {"coverage": float("nan"), "fpr": float("nan"), "detection_rate": float("nan"), "f1": float("nan")}
        return {"coverage": float(self.coverage[i]), "fpr": float(self.fpr[i]),
                "detection_rate": float(self.detection_rate[i]), "f1": float(self.f1[i])}


def risk_coverage(entries: EntryTable, eval_mode: str = "conservative") -> RiskCoverage:
    """The risk–coverage curve of one system."""
    view = entries.view(eval_mode)
    ph = hallucination_scores(view)
    ok = np.isfinite(ph)
    idx = np.flatnonzero(ok)
    order = idx[np.argsort(-np.abs(ph[idx] - 0.5), kind="stable")]
    y = entries.hallucinated[order]
    f = view.flagged[order]
    tp = np.cumsum(y & f)
    fp = np.cumsum(~y & f)
    fn = np.cumsum(y & ~f)
    tn = np.cumsum(~y & ~f)
    with np.errstate(divide="ignore", invalid="ignore"):
        fpr = np.where(fp + tn > 0, fp / np.maximum(fp + tn, 1), np.nan)
        dr = np.where(tp + fn > 0, tp / np.maximum(tp + fn, 1), np.nan)
    total = max(entries.n, 1)
    return RiskCoverage(np.arange(1, order.size + 1) / total, fpr, dr, f1_from_counts(tp, fp, fn))
