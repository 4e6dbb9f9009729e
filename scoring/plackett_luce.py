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

    def rank_of(self) -> dict[str, int]:
        return {s: i + 1 for i, s in enumerate(self.systems)}


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
