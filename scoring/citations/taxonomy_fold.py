"""Taxonomy folds: re-score with some hallucination modes treated differently, and see how rankings move.

Folds (HALLMARK README, "taxonomy-fold ablation"):

- `as_shipped`: the labels as released.
- `real_work_out`: the four real-work modes left out of the scored set.
- `real_work_negative`: those modes counted as negatives (flagging one is a false positive).
- `neurips_2026`: the seven modes the NeurIPS 2026 criteria leave outside the label, left out.

`fold_entries` returns the refolded `EntryTable`; `fold_ablation` scores every system under every
fold and reports, per fold, the ranking by `metric` (MCC by default) and Kendall's tau against
the as-shipped ranking.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from scoring.citations.entry_table import EntryTable
from scoring.citations.metrics import point_metrics

REAL_WORK_MODES: tuple[str, ...] = ("wrong_venue", "preprint_as_published", "partial_author_list",
                                    "arxiv_version_mismatch")
NEURIPS_2026_MODES: tuple[str, ...] = ("wrong_venue", "preprint_as_published", "arxiv_version_mismatch",
                                       "near_miss_title", "partial_author_list", "fabricated_doi", "future_date")
FOLDS: tuple[str, ...] = ("as_shipped", "real_work_out", "real_work_negative", "neurips_2026")


def fold_entries(entries: EntryTable, fold: str) -> EntryTable:
    """`entries` under `fold`."""
    if fold == "as_shipped":
        return entries
    if fold in ("real_work_out", "neurips_2026"):
        modes = REAL_WORK_MODES if fold == "real_work_out" else NEURIPS_2026_MODES
        return entries.subset(~np.isin(entries.htype, modes))
    if fold == "real_work_negative":
        hit = np.isin(entries.htype, REAL_WORK_MODES)
        return EntryTable(
            item_id=entries.item_id, hallucinated=entries.hallucinated & ~hit, tier=entries.tier,
            htype=np.where(hit, "valid", entries.htype).astype(object), pred=entries.pred,
            confidence=entries.confidence, errored=entries.errored, parse_failed=entries.parse_failed,
            error_kind=entries.error_kind,
        )
    raise ValueError(f"fold must be one of {FOLDS}, got {fold!r}")


@dataclass(frozen=True)
class FoldResult:
    """One fold: each system's metric, the ranking, and its agreement with the as-shipped ranking."""

    fold: str
    values: dict[str, float]
    ranking: list[str]
    kendall_tau: float
    moved: int  # systems whose rank differs from as shipped


def _rank(values: dict[str, float]) -> list[str]:
    return sorted(values, key=lambda s: (-np.nan_to_num(values[s], nan=-np.inf), s))


def fold_ablation(
    systems: dict[str, EntryTable], *, metric: str = "mcc", eval_mode: str = "conservative",
    folds: tuple[str, ...] = FOLDS,
) -> list[FoldResult]:
    """Score every system under every fold; tau compares each fold's ranking with as shipped."""
    results: list[FoldResult] = []
    base_rank: dict[str, int] | None = None
    for fold in ("as_shipped", *[f for f in folds if f != "as_shipped"]):
        vals = {}
        for name, entries in systems.items():
            e = fold_entries(entries, fold)
            vals[name] = point_metrics(e, e.view(eval_mode))[metric]
        ranking = _rank(vals)
        pos = {s: i for i, s in enumerate(ranking)}
        if base_rank is None:
            base_rank = pos
        names = sorted(systems)
        if len(names) >= 2:
            tau = float(stats.kendalltau([base_rank[s] for s in names], [pos[s] for s in names]).statistic)
        else:
            tau = float("nan")
        moved = sum(1 for s in names if base_rank[s] != pos[s])
        if fold in folds:
            results.append(FoldResult(fold, vals, ranking, tau, moved))
    return results
