"""Systems of one run compared with each other: the leaderboard's pairwise tests and ranking.

- `pairwise_rows`: every pair of scored systems, paired stratified bootstrap of the metric
  difference (`scoring.paired_test`) with its 95% CI and two-sided p-value, adjusted across the
  family of pairs with Holm (family-wise error) and Benjamini–Hochberg (false discovery rate).
- `ranking_rows`: a Plackett–Luce ranking of the systems from per-entry correctness (1 right,
  0 wrong or UNCERTAIN, no score when errored or missing) with bootstrap CIs of strength and rank.

Systems of one run share the corpus, so their entry tables are aligned item for item.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np

from scoring.citations.entry_table import HALLUCINATED, MISSING, VALID, EntryTable
from scoring.multiple_testing import benjamini_hochberg, holm
from scoring.paired_test import paired_bootstrap
from scoring.plackett_luce import plackett_luce_with_ci

PAIRWISE_METRIC = "mcc"  # the leaderboard's ranking metric


def pairwise_rows(entries: dict[str, EntryTable], *, metric: str = PAIRWISE_METRIC, eval_mode: str = "conservative",
                  n_resamples: int = 1000, seed: int = 42) -> list[dict[str, Any]]:  # fmt: skip
    """One row per pair (A, B), A before B by name: diff = A - B."""
    names = sorted(entries)
    rows = []
    for a, b in combinations(names, 2):
        r = paired_bootstrap(entries[a], entries[b], metric=metric, eval_mode=eval_mode, n_resamples=n_resamples,
                             seed=seed, names=(a, b))  # fmt: skip
        rows.append({"system_a": a, "system_b": b, "metric": metric, "value_a": r.value_a, "value_b": r.value_b,
                     "diff": r.diff, "ci_low": r.diff_ci[0], "ci_high": r.diff_ci[1], "p": r.p_two_sided,
                     "cohens_h": r.cohens_h})  # fmt: skip
    p = [r["p"] for r in rows]
    for r, ph, pb in zip(rows, holm(p), benjamini_hochberg(p), strict=True):
        r["p_holm"], r["p_bh"] = float(ph), float(pb)
    return rows


def correctness_matrix(entries: dict[str, EntryTable]) -> tuple[np.ndarray, list[str]]:
    """(entries x systems) 1.0 right, 0.0 wrong or UNCERTAIN, NaN errored or missing."""
    names = sorted(entries)
    cols = []
    for name in names:
        e = entries[name]
        truth = np.where(e.hallucinated, HALLUCINATED, VALID)
        col = (e.pred == truth).astype(float)
        col[(e.pred == MISSING) | e.errored] = np.nan
        cols.append(col)
    return np.column_stack(cols) if cols else np.empty((0, 0)), names


def ranking_rows(entries: dict[str, EntryTable], *, n_resamples: int = 200, seed: int = 42) -> list[dict[str, Any]]:
    """Systems best first with Plackett–Luce strength and rank, each with a 95% bootstrap CI."""
    if len(entries) < 2:
        return []
    matrix, names = correctness_matrix(entries)
    r = plackett_luce_with_ci(matrix, names, n_resamples=n_resamples, seed=seed)
    return [{"rank": i + 1, "system": s, "strength": v, "method": r.ranking.method,
             "strength_ci_low": r.strength_ci.get(s, (None, None))[0],
             "strength_ci_high": r.strength_ci.get(s, (None, None))[1],
             "rank_ci_low": r.rank_ci.get(s, (None, None))[0], "rank_ci_high": r.rank_ci.get(s, (None, None))[1]}
            for i, (s, v) in enumerate(zip(r.ranking.systems, r.ranking.scores, strict=True))]  # fmt: skip
