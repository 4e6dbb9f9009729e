"""detect@k (HALLMARK's union recall): the share of hallucinated entries flagged by any of the first k systems.

Order matters and is the caller's (HALLMARK: ascending cost). UNCERTAIN, missing and errored
predictions are not detections. Empty when there is no hallucinated entry.
"""

from __future__ import annotations

import numpy as np

from scoring.citations.entry_table import HALLUCINATED, EntryTable


def detect_at_k(systems: list[EntryTable]) -> dict[int, float]:
    """k -> union recall of the first k systems (k = 1..len(systems))."""
    if not systems:
        return {}
    base = systems[0]
    for e in systems[1:]:
        if not np.array_equal(e.item_id, base.item_id):
            raise ValueError("detect@k needs every system scored on the same entries in the same order")
    y = base.hallucinated
    if not y.any():
        return {}
    hit = np.zeros(base.n, dtype=bool)
    out = {}
    for k, e in enumerate(systems, start=1):
        hit |= e.pred == HALLUCINATED
        out[k] = float((hit & y).sum() / y.sum())
    return out
