"""Per-tier and per-type breakdowns in HALLMARK's shape.

Tier t scores tier-t hallucinated entries against all valid entries (so every tier repeats the
overall FPR). Type x scores the entries of type x alone; valid entries form the type "valid".
Counts include UNCERTAIN entries; rates use the confusion matrix (which leaves them out in
conservative mode). Undefined rates are NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scoring.citations.entry_table import EntryTable, ModeView
from scoring.citations.metrics import _div, confusion_counts, f1_from_counts


@dataclass(frozen=True)
class StratumCounts:
    """Confusion counts of one stratum, and the entries it holds."""

    tp: int
    fp: int
    tn: int
    fn: int
    num_hallucinated: int
    num_valid: int

    @property
    def detection_rate(self) -> float:
        return float(_div(self.tp, self.tp + self.fn))

    @property
    def false_positive_rate(self) -> float:
        return float(_div(self.fp, self.fp + self.tn))

    @property
    def precision(self) -> float:
        return float(_div(self.tp, self.tp + self.fp))

    @property
    def f1(self) -> float:
        return float(f1_from_counts(np.float64(self.tp), np.float64(self.fp), np.float64(self.fn)))


def stratum_counts(entries: EntryTable, view: ModeView, mask: np.ndarray) -> StratumCounts:
    """Counts for the entries where `mask` holds."""
    W = np.ones((1, entries.n))
    tp, fp, tn, fn = (int(x[0]) for x in confusion_counts(view, entries.hallucinated, W, mask=mask))
    y = entries.hallucinated
    return StratumCounts(tp, fp, tn, fn, int((mask & y).sum()), int((mask & ~y).sum()))


def tier_strata(entries: EntryTable) -> dict[int, np.ndarray]:
    """Tier -> mask (tier-t hallucinated entries plus all valid entries)."""
    y = entries.hallucinated
    return {int(t): (y & (entries.tier == t)) | ~y for t in sorted(set(entries.tier[y].tolist()))}


def type_strata(entries: EntryTable) -> dict[str, np.ndarray]:
    """Type -> mask, types sorted by name ("valid" included)."""
    return {str(t): entries.htype == t for t in sorted(set(entries.htype.tolist()))}
