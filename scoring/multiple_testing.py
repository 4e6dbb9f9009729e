"""Corrections for many pairwise tests: Holm (family-wise) and Benjamini–Hochberg (FDR).

Both return adjusted p-values in the input order (monotone, capped at 1); NaN p-values stay NaN
and do not count towards the number of tests.
"""

from __future__ import annotations

import numpy as np


def _sorted_finite(pvalues: list[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(p, output filled with NaN, indices of the finite p-values in ascending order)."""
    p = np.asarray(pvalues, dtype=float)
    ok = np.flatnonzero(np.isfinite(p))
    return p, np.full(p.shape, np.nan), ok[np.argsort(p[ok], kind="stable")]


def holm(pvalues: list[float] | np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values."""
    p, out, order = _sorted_finite(pvalues)
    m = order.size
    if m:
        out[order] = np.minimum(np.maximum.accumulate((m - np.arange(m)) * p[order]), 1.0)
    return out


def benjamini_hochberg(pvalues: list[float] | np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg step-up adjusted p-values (q-values)."""
    p, out, order = _sorted_finite(pvalues)
    m = order.size
    if m:
        raw = p[order] * m / np.arange(1, m + 1)
        out[order] = np.minimum(np.minimum.accumulate(raw[::-1])[::-1], 1.0)
    return out
