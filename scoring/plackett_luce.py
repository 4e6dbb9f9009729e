"""Rank systems from an entries x systems score matrix with a Plackett–Luce (Bradley–Terry) model.

Each entry contributes one pairwise win for every pair of systems it separates (higher score
wins; ties and missing cells contribute nothing), so systems with different coverage are compared
only where both answered. Strengths are fit with `choix.ilsr_pairwise` (a small L2 `alpha`
keeps the fit defined when a system never loses). When choix is missing, the comparison graph is
too thin, or the fit fails, the ranking falls back to each system's mean score over the entries it
covers; `method` says which was used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Ranking:
    """Systems best first, with their fitted strengths (log-scale) or mean scores."""

    systems: list[str]
    scores: list[float]
    method: str  # "plackett_luce" | "mean_score"


def pairwise_wins(matrix: np.ndarray) -> list[tuple[int, int]]:
    """(winner, loser) index pairs from every entry (row) of `matrix` (NaN = no score)."""
    data: list[tuple[int, int]] = []
    for row in matrix:
        ok = np.flatnonzero(np.isfinite(row))
        for i in ok:
            for j in ok:
                if row[i] > row[j]:
                    data.append((int(i), int(j)))
    return data


def plackett_luce_ranking(matrix: np.ndarray, systems: list[str], *, alpha: float = 0.01) -> Ranking:
    """Rank `systems` (columns of `matrix`, rows = entries; higher score = better)."""
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2 or matrix.shape[1] != len(systems):
        raise ValueError("matrix must be entries x systems, one column per system")
    with np.errstate(invalid="ignore"):
        means = np.nanmean(np.where(np.isfinite(matrix), matrix, np.nan), axis=0)
    strengths: np.ndarray | None = None
    method = "mean_score"
    data = pairwise_wins(matrix)
    if len(systems) >= 2 and data:
        try:
            import choix

            strengths = np.asarray(choix.ilsr_pairwise(len(systems), data, alpha=alpha))
            if not np.all(np.isfinite(strengths)):
                strengths = None
            else:
                method = "plackett_luce"
        except Exception:  # noqa: BLE001 - any fit failure falls back to the documented mean score
            strengths = None
    scores = strengths if strengths is not None else np.nan_to_num(means, nan=-np.inf)
    order = sorted(range(len(systems)), key=lambda i: (-scores[i], systems[i]))
    return Ranking([systems[i] for i in order], [float(scores[i]) for i in order], method)


@dataclass(frozen=True)
class RankingWithCI:
    """A Plackett–Luce ranking with percentile bootstrap intervals (entries resampled with
    replacement, the model refit on each): strengths (mean-centred log-scale) and ranks."""

    ranking: Ranking
    strength_ci: dict[str, tuple[float, float]]
    rank_ci: dict[str, tuple[int, int]]
    n_resamples: int  # resamples whose fit succeeded


def win_tensor(matrix: np.ndarray) -> np.ndarray:
    """(entries, systems, systems) bool: entry r has system i scoring above system j (both scored)."""
    m = np.asarray(matrix, dtype=float)
    ok = np.isfinite(m)
    with np.errstate(invalid="ignore"):
        return (m[:, :, None] > m[:, None, :]) & ok[:, :, None] & ok[:, None, :]


def _fit_dense(comp: np.ndarray, alpha: float) -> np.ndarray | None:
    import choix

    try:
        s = np.asarray(choix.ilsr_pairwise_dense(comp, alpha=alpha))
    except Exception:  # noqa: BLE001 - a resample whose fit fails is left out and counted
        return None
    return s - s.mean() if np.all(np.isfinite(s)) else None


def plackett_luce_with_ci(matrix: np.ndarray, systems: list[str], *, n_resamples: int = 200, seed: int = 42,
                          alpha: float = 0.01) -> RankingWithCI:  # fmt: skip
    """`plackett_luce_ranking` plus bootstrap CIs. Win counts per resample are a weighted sum of the
    per-entry win tensor (multinomial weights), so each refit costs one `ilsr_pairwise_dense` call."""
    ranking = plackett_luce_ranking(matrix, systems, alpha=alpha)
    if ranking.method != "plackett_luce" or n_resamples <= 0:
        return RankingWithCI(ranking, {}, {}, 0)
    wins = win_tensor(matrix).astype(float)
    n = wins.shape[0]
    rng = np.random.default_rng(seed)
    strengths, ranks = [], []
    for _ in range(n_resamples):
        w = rng.multinomial(n, np.full(n, 1.0 / n)).astype(float)
        s = _fit_dense(np.tensordot(w, wins, axes=1), alpha)
        if s is None:
            continue
        strengths.append(s)
        order = np.argsort(-s, kind="stable")
        r = np.empty(len(systems), dtype=int)
        r[order] = np.arange(1, len(systems) + 1)
        ranks.append(r)
    if not strengths:
        return RankingWithCI(ranking, {}, {}, 0)
    S, R = np.array(strengths), np.array(ranks)
    lo, hi = np.percentile(S, [2.5, 97.5], axis=0)
    rlo, rhi = np.percentile(R, [2.5, 97.5], axis=0)
    return RankingWithCI(
        ranking, {name: (float(lo[i]), float(hi[i])) for i, name in enumerate(systems)},
        {name: (int(np.floor(rlo[i])), int(np.ceil(rhi[i]))) for i, name in enumerate(systems)}, len(strengths),
    )
