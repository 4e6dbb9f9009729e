"""Per-type minimum detectable effect (MDE) for detection-rate differences.

For a type with n hallucinated entries, the smallest detection-rate gap a two-sided test at
level alpha detects with the given power, normal approximation at the worst-case rate p = 0.5
unless a rate is given: MDE = (z_{1-alpha/2} + z_{power}) * sqrt(p (1 - p) / n). At n = 30..49
this gives the 20–26 pp the HALLMARK paper quotes. Exact Clopper–Pearson and Wilson intervals for
each type's observed rate sit beside it.
"""

from __future__ import annotations

import math
from typing import Any

from scipy import stats

from scoring.proportion_interval import clopper_pearson_interval, wilson_interval


def minimum_detectable_effect(n: int, *, p: float = 0.5, alpha: float = 0.05, power: float = 0.8) -> float:
    """MDE in rate units (NaN for n = 0)."""
    if n <= 0:
        return float("nan")
    z = float(stats.norm.ppf(1 - alpha / 2)) + float(stats.norm.ppf(power))
    return z * math.sqrt(p * (1 - p) / n)


def mde_table(per_type: dict[str, Any], *, alpha: float = 0.05, power: float = 0.8) -> list[dict[str, Any]]:
    """One row per hallucination type from a `ModeScore.per_type` mapping (StratumCounts)."""
    rows = []
    for htype, s in per_type.items():
        if htype == "valid":
            continue
        n = s.tp + s.fn
        rows.append(
            {
                "type": htype,
                "n": n,
                "detected": s.tp,
                "detection_rate": s.tp / n if n else float("nan"),
                "mde": minimum_detectable_effect(n, alpha=alpha, power=power),
                "wilson_low": wilson_interval(s.tp, n)[0],
                "wilson_high": wilson_interval(s.tp, n)[1],
                "clopper_pearson_low": clopper_pearson_interval(s.tp, n)[0],
                "clopper_pearson_high": clopper_pearson_interval(s.tp, n)[1],
            }
        )
    return rows
