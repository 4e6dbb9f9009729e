"""Neighbour-severity coupling (paper appendix K): does an error's detection depend on its neighbours?

For every scored injection verdict, the neighbours are the other injections of the same copy
(`item_id`; their severities are read from every verdict of the table, whichever reviewer it
belongs to), and the neighbour severity is the highest of theirs (S1 < S2 < S3). Pooled over
reviewers (system "all"): `neighbour_detection_rate` per highest neighbour severity, overall
("neighbour=S3") and within each target severity ("severity=S1|neighbour=S3"); and
`neighbour_diff`, the blatant-minus-clear contrast (neighbour S3 minus neighbour S2) with its
paper-level bootstrap interval and sign-reversal fraction as `neighbour_sign_reversal`.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from scoring.papers.bootstrap import paired_difference, ratio_estimate
from scoring.papers.rows import ALL, metric_row, stratum
from scoring.papers.verdicts import SEVERITIES, InjectionVerdict, PaperVerdicts


def neighbour_severity(pv: PaperVerdicts) -> dict[tuple[str, str], str | None]:
    """(item_id, unit_id) -> highest severity among the other injections of that copy (None if none)."""
    per_copy: dict[str, dict[str, str]] = defaultdict(dict)
    for v in pv.injections:
        if v.severity in SEVERITIES:
            per_copy[v.item_id][v.unit_id] = v.severity
    out: dict[tuple[str, str], str | None] = {}
    for item, units in per_copy.items():
        for unit in units:
            others = [SEVERITIES.index(s) for u, s in units.items() if u != unit]
            out[(item, unit)] = SEVERITIES[max(others)] if others else None
    return out


def _counts(pv: PaperVerdicts, nb: dict, keep) -> tuple[np.ndarray, np.ndarray]:
    papers = pv.paper_index()
    num, den = np.zeros(len(papers)), np.zeros(len(papers))
    for v in pv.injections:
        if v.scored and keep(v, nb.get((v.item_id, v.unit_id))):
            den[papers[v.paper_id]] += 1
            num[papers[v.paper_id]] += v.detected
    return num, den


def coupling_rows(pv: PaperVerdicts, run_id: str, W: np.ndarray) -> list[dict[str, Any]]:
    """Detection rate by highest neighbour severity, and the S3-minus-S2 neighbour contrast."""
    nb = neighbour_severity(pv)
    rows = []
    for target in (None, *SEVERITIES):
        def own(v: InjectionVerdict, target=target) -> bool:
            return target is None or v.severity == target
        for n_sev in SEVERITIES:
            est = ratio_estimate(*_counts(pv, nb, lambda v, s, n_sev=n_sev, own=own: own(v) and s == n_sev), W)
            rows.append(metric_row(run_id, ALL, "neighbour_detection_rate", stratum(severity=target, neighbour=n_sev),
                                   est.value, est.ci, est.n))
        hi = _counts(pv, nb, lambda v, s, own=own: own(v) and s == "S3")
        mid = _counts(pv, nb, lambda v, s, own=own: own(v) and s == "S2")
        diff = paired_difference(*hi, *mid, W)
        n = int(hi[1].sum() + mid[1].sum())
        name = stratum(severity=target, contrast="S3-S2")
        rows.append(metric_row(run_id, ALL, "neighbour_diff", name, diff.value, diff.ci, n))
        rows.append(metric_row(run_id, ALL, "neighbour_sign_reversal", name, diff.sign_reversal, n=n))
    return rows
