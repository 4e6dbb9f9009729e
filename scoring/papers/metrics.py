"""The paper-audit statistics of a run as one METRIC_SCHEMA table: `paper_audit_metrics(verdicts, ...)`.

Takes the VERDICT_SCHEMA rows of a paper audit (issue 7 contract: injection verdicts on injected
copies, flag verdicts on clean copies) and returns every statistic of the paper's §3 and
appendices D, E, G, K, L as metric rows (see each module for its metric names and strata):
`scoring.paper_detection` (detection_rate, unscored_injections, detection_diff, sign_reversal,
false_positive_rate, false_positive_count, ambiguous_count), `scoring.paper_trend` (trend_*),
`scoring.paper_agreement` (pearson_r, cohen_kappa, unanimity_rate, first_round_unanimity_rate,
escalation_rate, escalation_reversal_rate, paper_rate_r, mean_paper_rate_r, dispersion_ratio,
mean_dispersion_ratio), `scoring.paper_self_preference`
(self_preference_*, judge_detect_rate, lone_dissenter_same_family_share, loo_*) and
`scoring.paper_coupling` (neighbour_*). All intervals resample papers, seeded: one set of
`n_interval` resamples (2,000) for every interval and one of `n_paired` (10,000) for reviewer
comparisons, so a table is reproducible from the stored verdicts alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from scoring.papers.agreement import (
    grouped_reviewers,
    judge_agreement_rows,
    panel_rate_rows,
    reviewer_agreement_rows,
)
from scoring.papers.bootstrap import N_INTERVAL, N_PAIRED, weights
from scoring.papers.coupling import coupling_rows
from scoring.papers.detection import detection_rows, false_positive_rows, paired_rows
from scoring.papers.self_preference import leave_one_judge_out_rows, self_preference_rows
from scoring.papers.trend import N_PERMUTATIONS, trend_rows
from scoring.papers.verdicts import read_paper_verdicts
from storage.schemas import METRIC_SCHEMA, table_from_rows


def paper_audit_metrics(verdicts: pa.Table, *, run_id: str, families: Mapping[str, str] | None = None,
                        trend_systems: Sequence[str] | None = None,
                        agreement_groups: Mapping[str, Sequence[str]] | None = None, n_interval: int = N_INTERVAL,
                        n_paired: int = N_PAIRED, n_permutations: int = N_PERMUTATIONS, seed: int = 0,
                        alpha: float = 0.05) -> pa.Table:
    """Every paper-audit statistic of `verdicts` as a METRIC_SCHEMA table.

    Args:
        verdicts: VERDICT_SCHEMA rows (other unit kinds are ignored).
        run_id: written into every metric row.
        families: reviewer -> provider family (e.g. {"gpt-structured": "openai"}), for the
            self-preference test; reviewers absent from it (or of a family no judge has) are not tested.
        trend_systems: reviewers pooled in the severity trend test (default all; the paper leaves
            out those with negligible detection).
        agreement_groups: for inter-reviewer agreement only, group name -> member reviewers merged
            into one reviewer that detects an injection when any member does.
        n_interval: paper resamples behind every interval.
        n_paired: paper resamples behind reviewer comparisons (sign-reversal fractions).
        n_permutations: random within-paper relabellings when exact enumeration is too large.
        seed: seeds the resamples and permutations.
        alpha: the Benjamini–Hochberg level of `trend_reject`.
    """
    pv = read_paper_verdicts(verdicts)
    n_papers = len(pv.papers)
    W = weights(n_papers, n_interval, seed)
    W_paired = weights(n_papers, n_paired, seed + 1)
    rows = (detection_rows(pv, run_id, W) + paired_rows(pv, run_id, W_paired) + false_positive_rows(pv, run_id, W)
            + trend_rows(pv, run_id, pooled_systems=trend_systems, alpha=alpha, n_permutations=n_permutations,
                         seed=seed)
            + judge_agreement_rows(pv, run_id, W) + panel_rate_rows(pv, run_id, W)
            + self_preference_rows(pv, run_id, W, families or {}) + leave_one_judge_out_rows(pv, run_id, W)
            + coupling_rows(pv, run_id, W) + reviewer_agreement_rows(grouped_reviewers(pv, agreement_groups or {}), run_id, W))
    return table_from_rows(rows, METRIC_SCHEMA)
