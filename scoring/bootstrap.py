"""Stratified bootstrap: HALLMARK's resampling stream, with the metrics computed in bulk.

Strata are hallucination types (valid entries are their own stratum), taken in order of first
appearance in truth order. Resample b draws, for each stratum in that order, `n_s` indices with
`Generator.choice(n_s, n_s, replace=True)` from one `np.random.default_rng(seed)`. Drawing in
exactly this order is what makes the intervals equal HALLMARK's for the same seed, so the draws
stay one small call per (resample, stratum); everything after the draws is array arithmetic over
whole chunks of resamples (see `scoring.citations.metrics`). Percentile intervals use
`np.percentile`'s default linear interpolation; NaN resamples (an empty denominator) are ignored.

A resample is scored exactly as the point estimate scores entries: same eval-mode view (UNCERTAIN,
parse failures, missing and errored entries handled by `EntryTable.view`), and order-dependent
metrics (ECE's equal-mass bins) see the drawn entries in truth order, not draw order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

CHUNK = 1000


def strata_of(labels: np.ndarray) -> list[np.ndarray]:
    """Entry positions per stratum, strata in order of first appearance."""
    groups: dict[object, list[int]] = {}
    for i, s in enumerate(labels.tolist()):
        groups.setdefault(s, []).append(i)
    return [np.asarray(g, dtype=np.int64) for g in groups.values()]


def resample_chunks(
    strata: list[np.ndarray], n_resamples: int, seed: int, chunk: int = CHUNK
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield (draws, W) per chunk: draws[b] the drawn entry positions in draw order, W[b] their counts."""
    rng = np.random.default_rng(seed)
    n = int(sum(len(g) for g in strata))
    done = 0
    while done < n_resamples:
        b = min(chunk, n_resamples - done)
        draws = np.empty((b, n), dtype=np.int64)
        for r in range(b):
            col = 0
            for g in strata:
                k = len(g)
                draws[r, col : col + k] = g[rng.choice(k, size=k, replace=True)]
                col += k
        flat = (draws + (np.arange(b) * n)[:, None]).ravel()
        W = np.bincount(flat, minlength=b * n).reshape(b, n).astype(np.float64)
        yield draws, W
        done += b


def bootstrap_samples(
    strata: list[np.ndarray],
    stat: Callable[[np.ndarray, np.ndarray], dict[str, np.ndarray]],
    n_resamples: int,
    seed: int = 42,
) -> dict[str, np.ndarray]:
    """`stat(draws, W)` over all resamples, concatenated per key (shape (n_resamples,))."""
    parts: dict[str, list[np.ndarray]] = {}
    for draws, W in resample_chunks(strata, n_resamples, seed):
        for k, v in stat(draws, W).items():
            parts.setdefault(k, []).append(v)
    return {k: np.concatenate(v) for k, v in parts.items()}


def percentile_interval(samples: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the finite samples; (NaN, NaN) when there are none."""
    s = samples[np.isfinite(samples)]
    if s.size == 0:
        return (float("nan"), float("nan"))
    alpha = 1.0 - confidence
    return (float(np.percentile(s, 100 * alpha / 2)), float(np.percentile(s, 100 * (1 - alpha / 2))))
