"""Precision at a deployment base rate: PPV(pi) = DR pi / (DR pi + FPR (1 - pi)).

The benchmark's own prevalence (54% hallucinated on dev_public) flatters precision; at an audit
base rate of ~2% the false-positive rate decides how many flags are worth reading.
"""

from __future__ import annotations

import numpy as np

DEFAULT_PREVALENCES: tuple[float, ...] = (0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.5)


def ppv_at_prevalence(dr: float, fpr: float, pi: float | np.ndarray) -> float | np.ndarray:
    """PPV at prevalence `pi`; NaN when nothing would be flagged or a rate is undefined."""
    pi = np.asarray(pi, dtype=float)
    num = dr * pi
    den = dr * pi + fpr * (1 - pi)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return float(out) if out.ndim == 0 else out


def ppv_sweep(dr: float, fpr: float, prevalences=DEFAULT_PREVALENCES) -> dict[float, float]:
    """prevalence -> PPV over a sweep."""
    return {float(p): float(ppv_at_prevalence(dr, fpr, p)) for p in prevalences}
