"""Paired stratified bootstrap between two systems on the same entries, with Cohen's h.

Both systems are scored on the same resamples (HALLMARK's stream: see `scoring.bootstrap`), so
the difference's distribution carries the pairing. The p-value is one-sided, H0: metric_A <=
metric_B, p = share of resamples with delta <= 0 (HALLMARK's convention). `p_two_sided` doubles
the smaller tail, 2 * min(P(delta <= 0), P(delta >= 0)) capped at 1, so it does not depend on
which system is named first (swapping A and B negates delta and its interval, nothing else);
doubling only the lower tail made it 1.0 whenever A was the worse system. Cohen's h = 2 asin(sqrt(a)) - 2 asin(sqrt(b)) for proportions; for a metric
outside [0, 1] (MCC below 0) it falls back to the raw difference, as HALLMARK does.

A comparison with no defined difference (a system whose metric is undefined, e.g. the MCC of
`always_valid`, which never flags anything) has diff, interval and p-values NaN, never p = 1: a
family correction (`scoring.multiple_testing`) leaves NaN out of the family, where a 1 would count
as a test and inflate every real p-value beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scoring.bootstrap import bootstrap_samples, percentile_interval, strata_of
from scoring.citations.entry_table import EntryTable
from scoring.citations.metrics import metric_batch, point_metrics


@dataclass(frozen=True)
class PairedComparison:
    """A vs B on one metric."""

    system_a: str
    system_b: str
    metric: str
    value_a: float
    value_b: float
    diff: float
    diff_ci: tuple[float, float]
    p_one_sided: float
    p_two_sided: float
    cohens_h: float
    n_resamples: int


def cohens_h(a: float, b: float) -> float:
    """Cohen's h between two proportions (raw difference when either is outside [0, 1])."""
    if 0.0 <= a <= 1.0 and 0.0 <= b <= 1.0:
        return 2 * math.asin(math.sqrt(a)) - 2 * math.asin(math.sqrt(b))
    return a - b


def _check_same_entries(a: EntryTable, b: EntryTable) -> None:
    if a.n != b.n or not np.array_equal(a.item_id, b.item_id) or not np.array_equal(a.hallucinated, b.hallucinated):
        raise ValueError("paired comparison needs both systems scored on the same entries in the same order")


def paired_bootstrap(
    a: EntryTable, b: EntryTable, *, metric: str = "f1_hallucination", eval_mode: str = "conservative",
    n_resamples: int = 10_000, seed: int = 42, names: tuple[str, str] = ("A", "B"),
) -> PairedComparison:
    """Compare two systems' `metric` on the same entries."""
    _check_same_entries(a, b)
    va, vb = a.view(eval_mode), b.view(eval_mode)
    pa_, pb_ = point_metrics(a, va)[metric], point_metrics(b, vb)[metric]

    def stat(draws, W):
        return {"d": metric_batch(a, va, W, draws)[metric] - metric_batch(b, vb, W, draws)[metric]}

    nan = float("nan")
    if not (math.isfinite(pa_) and math.isfinite(pb_)):  # no defined difference: not a test at all
        return PairedComparison(names[0], names[1], metric, pa_, pb_, nan, (nan, nan), nan, nan, nan, n_resamples)
    d = bootstrap_samples(strata_of(a.htype), stat, n_resamples, seed)["d"]
    d = d[np.isfinite(d)]
    p1 = float(np.mean(d <= 0)) if d.size else nan
    p2 = min(1.0, 2 * min(p1, float(np.mean(d >= 0)))) if d.size else nan
    return PairedComparison(
        names[0], names[1], metric, pa_, pb_, pa_ - pb_, percentile_interval(d), p1, p2, cohens_h(pa_, pb_), n_resamples,
    )
