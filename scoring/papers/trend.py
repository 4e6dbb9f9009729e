"""Severity trend test (paper appendix G): Page's L with mid-ranks, within-paper permutation p-values.

Data: a (papers x k) table of detection rates, columns in the hypothesised increasing order
(S1, S2, S3). Each row is ranked within itself, ties taking the mean of the ranks they span
(mid-ranks); L = sum_j j * R_j with R_j the column sum of ranks. A large L means the rates rise
left to right. The p-value permutes the columns within each row independently (the severity
labels within a paper): exactly, over all (k!)^n relabellings, when there are at most
`max_exact` of them, else by `n_permutations` seeded random relabellings with
p = (1 + #{L_perm >= L}) / (1 + n_permutations). Rows with an empty cell are dropped.

The tests of one report (pooled reviewers, one per error type; then each reviewer per error
type, on its binary outcomes) are corrected with Benjamini–Hochberg (`scoring.multiple_testing`)
within each family, and `trend_reject` says whether the adjusted p is at most alpha.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import rankdata

from scoring.multiple_testing import benjamini_hochberg
from scoring.papers.rows import ALL, metric_row, stratum
from scoring.papers.verdicts import ERROR_TYPES, SEVERITIES, PaperVerdicts

MAX_EXACT = 50_000
N_PERMUTATIONS = 10_000


@dataclass(frozen=True)
class PageTest:
    """Page's L on a complete table, with its permutation p-value."""

    statistic: float
    p_value: float
    n_rows: int
    exact: bool


def page_l(table: np.ndarray) -> float:
    """Page's L with mid-ranks of a (rows x k) table."""
    ranks = rankdata(np.asarray(table, float), axis=1, method="average")
    return float(np.sum(ranks.sum(axis=0) * np.arange(1, ranks.shape[1] + 1)))


def page_test(table: np.ndarray, *, n_permutations: int = N_PERMUTATIONS, seed: int = 0,
              max_exact: int = MAX_EXACT) -> PageTest:
    """Page's trend test; rows with any NaN are dropped; NaN p with no complete row."""
    t = np.asarray(table, float)
    if t.ndim != 2 or t.size == 0:
        return PageTest(float("nan"), float("nan"), 0, False)
    t = t[np.all(np.isfinite(t), axis=1)]
    n = t.shape[0]
    if n == 0:
        return PageTest(float("nan"), float("nan"), 0, False)
    k = t.shape[1]
    ranks = rankdata(t, axis=1, method="average")
    weights = np.arange(1, k + 1, dtype=float)
    observed = float(np.sum(ranks.sum(axis=0) * weights))
    # each row contributes sum_j w_j r_{row, perm(j)}; L_perm is the sum of per-row contributions
    perms = np.array(list(itertools.permutations(range(k))))
    row_scores = ranks[:, perms] @ weights  # (n, k!) contribution of each row under each relabelling
    eps = 1e-9
    if math.factorial(k) ** n <= max_exact:
        totals = np.zeros(1)
        for r in range(n):
            totals = (totals[:, None] + row_scores[r][None, :]).ravel()
        return PageTest(observed, float(np.mean(totals >= observed - eps)), n, True)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(perms), size=(n_permutations, n))
    totals = row_scores[np.arange(n)[None, :], picks].sum(axis=1)
    return PageTest(observed, float((1 + np.sum(totals >= observed - eps)) / (1 + n_permutations)), n, False)


def severity_table(pv: PaperVerdicts, error_type: str, systems: Sequence[str]) -> np.ndarray:
    """(papers x severities) pooled detection rate of `systems` on `error_type`; NaN where nothing was scored."""
    papers = pv.paper_index()
    num = np.zeros((len(papers), len(SEVERITIES)))
    den = np.zeros_like(num)
    chosen = set(systems)
    for v in pv.injections:
        if v.scored and v.system in chosen and v.error_type == error_type and v.severity in SEVERITIES:
            p, s = papers[v.paper_id], SEVERITIES.index(v.severity)
            den[p, s] += 1
            num[p, s] += v.detected
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _family_rows(run_id: str, tests: list[tuple[str, str, PageTest]], alpha: float) -> list[dict[str, Any]]:
    q = benjamini_hochberg([t.p_value for _, _, t in tests])
    rows = []
    for (system, name, t), qv in zip(tests, q, strict=True):
        rows.append(metric_row(run_id, system, "trend_page_l", name, t.statistic, n=t.n_rows))
        rows.append(metric_row(run_id, system, "trend_p", name, t.p_value, n=t.n_rows))
        rows.append(metric_row(run_id, system, "trend_p_bh", name, qv, n=t.n_rows))
        rows.append(metric_row(run_id, system, "trend_reject", name, float(qv <= alpha) if np.isfinite(qv) else
                               math.nan, n=t.n_rows))
    return rows


def trend_rows(pv: PaperVerdicts, run_id: str, *, pooled_systems: Sequence[str] | None = None,
               alpha: float = 0.05, n_permutations: int = N_PERMUTATIONS, seed: int = 0) -> list[dict[str, Any]]:
    """Pooled trend test per error type (system "all"), then per reviewer and error type; BH within each."""
    systems = sorted({v.system for v in pv.injections})
    pooled = list(pooled_systems) if pooled_systems is not None else systems
    fam1 = [(ALL, stratum(type=t), page_test(severity_table(pv, t, pooled), n_permutations=n_permutations,
                                             seed=seed)) for t in ERROR_TYPES]
    fam2 = [(s, stratum(type=t), page_test(severity_table(pv, t, [s]), n_permutations=n_permutations, seed=seed))
            for s in systems for t in ERROR_TYPES]
    return _family_rows(run_id, fam1, alpha) + _family_rows(run_id, fam2, alpha)
