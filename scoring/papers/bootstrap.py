"""Paper-level (cluster) bootstrap: resample whole papers, recompute ratios of sums.

A resample draws `P` papers with replacement from the `P` papers of a corpus; `weights` returns
how often each paper was drawn, one row per resample, from one `np.random.default_rng(seed)`
(`integers(0, P, size=(B, P))`), so the same seed gives the same resamples to every statistic
of a report, which is what pairs two systems' rates in `paired_difference`. A rate is a ratio
of per-paper sums, `sum_p w_p num_p / sum_p w_p den_p`, NaN when the drawn papers hold no
units. Intervals are percentile intervals over the finite resamples (`scoring.bootstrap`).

The sign-reversal fraction of a difference d (paper, appendix G) is the share of finite
resamples whose difference does not have d's sign (d_b <= 0 when d > 0, d_b >= 0 when d < 0);
a zero observed difference has fraction 1. A difference is called significant when the fraction
is below 0.05.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scoring.bootstrap import percentile_interval

N_INTERVAL = 2_000
N_PAIRED = 10_000


def weights(n_papers: int, n_resamples: int, seed: int) -> np.ndarray:
    """(n_resamples, n_papers) draw counts of each paper per resample."""
    if n_papers == 0:
        return np.zeros((n_resamples, 0))
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_papers, size=(n_resamples, n_papers))
    flat = (draws + (np.arange(n_resamples) * n_papers)[:, None]).ravel()
    return np.bincount(flat, minlength=n_resamples * n_papers).reshape(n_resamples, n_papers).astype(float)


def ratio(num: np.ndarray, den: np.ndarray) -> float:
    """sum(num) / sum(den); NaN when the denominator is 0."""
    d = float(np.sum(den))
    return float(np.sum(num)) / d if d > 0 else float("nan")


def ratio_samples(num: np.ndarray, den: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Per-resample ratio of weighted sums; num/den of shape (P,) or (..., P); result (B, ...)."""
    top = np.tensordot(W, np.moveaxis(np.asarray(num, float), -1, 0), axes=1)
    bot = np.tensordot(W, np.moveaxis(np.asarray(den, float), -1, 0), axes=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bot > 0, top / np.where(bot > 0, bot, 1.0), np.nan)


@dataclass(frozen=True)
class RatioEstimate:
    """A rate with its paper-level bootstrap interval; n = units in the denominator."""

    value: float
    ci: tuple[float, float]
    n: int


def ratio_estimate(num: np.ndarray, den: np.ndarray, W: np.ndarray) -> RatioEstimate:
    """Point ratio and percentile interval over resamples W."""
    value = ratio(num, den)
    if not np.isfinite(value):
        return RatioEstimate(float("nan"), (float("nan"), float("nan")), 0)
    return RatioEstimate(value, percentile_interval(ratio_samples(num, den, W)), int(round(float(np.sum(den)))))


def sign_reversal(observed: float, samples: np.ndarray) -> float:
    """Share of finite resamples whose sign is not the observed one (1.0 for a zero or NaN observation)."""
    s = samples[np.isfinite(samples)]
    if not np.isfinite(observed) or observed == 0 or s.size == 0:
        return 1.0 if s.size else float("nan")
    return float(np.mean(s <= 0)) if observed > 0 else float(np.mean(s >= 0))


@dataclass(frozen=True)
class PairedDifference:
    """rate_a - rate_b on the same resampled papers."""

    value: float
    ci: tuple[float, float]
    sign_reversal: float
    n_resamples: int


def paired_difference(num_a: np.ndarray, den_a: np.ndarray, num_b: np.ndarray, den_b: np.ndarray,
                      W: np.ndarray) -> PairedDifference:
    """Difference of two rates over the same paper resamples (arrays indexed by the same papers)."""
    d = ratio(num_a, den_a) - ratio(num_b, den_b)
    s = ratio_samples(num_a, den_a, W) - ratio_samples(num_b, den_b, W)
    fin = int(np.isfinite(s).sum())
    if not np.isfinite(d):
        return PairedDifference(float("nan"), (float("nan"), float("nan")), float("nan"), fin)
    return PairedDifference(d, percentile_interval(s), sign_reversal(d, s), fin)
