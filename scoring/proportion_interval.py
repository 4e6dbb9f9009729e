"""Binomial intervals for a proportion k/n: Wilson score and Clopper–Pearson (exact).

Both return (NaN, NaN) for n = 0: an empty stratum has no interval, not [0, 0].
"""

from __future__ import annotations

import math

from scipy import stats


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval, clipped to [0, 1]."""
    if n <= 0:
        return (float("nan"), float("nan"))
    z = float(stats.norm.ppf(1 - (1 - confidence) / 2))
    p = k / n
    denom = 1 + z**2 / n
    centre = (p + z**2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def clopper_pearson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper–Pearson) interval from the beta quantiles."""
    if n <= 0:
        return (float("nan"), float("nan"))
    alpha = 1 - confidence
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return (lo, hi)
