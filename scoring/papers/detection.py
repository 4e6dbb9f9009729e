"""Detection and false-positive rates of reviewers, with paper-level bootstrap intervals.

Detection rate (paper §3.1): detected / scored injections, where scored = detected or missed; an
injection on a copy the reviewer errored on is `unscored`, out of the denominator and counted in
its own row (`unscored_injections`, value = count, n = all injection verdicts); an injection the
judges could not decide (`undecided`: failed/unsure escalation, evidence not in the review) is
likewise out of the denominator and counted beside every rate (`undecided_injections`). Stratum
"visible=yes": over the injections the reviewer could see (a reviewer given a truncated paper
records what it was shown), with `invisible_injections` counting the others. Strata: all, each
error type, each severity, each type x severity; every known type and severity gets a row (NaN,
n = 0 when empty). Intervals: 2,000 paper resamples.

Paired comparisons (appendix G): for each pair of reviewers, the difference of their rates on the
same 10,000 paper resamples and its sign-reversal fraction, total and per error type. System
column "<a> vs <b>", n = papers with scored injections of both.

False-positive rate (§3.2): false_positive / all adjudicated flags on clean copies (ambiguous and
confirmed flags stay in the denominator), total and per flag type, with the FP, ambiguous and
undecided counts beside it. A flag no independent adjudicator could rate (`undecided`: no panel
configured, no check of another kind) is out of the denominator, so a review whose flags nobody
independent judged has a NaN rate ("n/a" in reports), never 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from scoring.papers.bootstrap import paired_difference, ratio_estimate
from scoring.papers.rows import metric_row, stratum
from scoring.papers.verdicts import ERROR_TYPES, SEVERITIES, FlagVerdict, InjectionVerdict, PaperVerdicts


def detection_counts(injections: Sequence[InjectionVerdict], papers: dict[str, int],
                     keep: Callable[[InjectionVerdict], bool] = lambda v: True) -> tuple[np.ndarray, np.ndarray]:
    """Per-paper (detected, scored) counts of the injections `keep` selects."""
    num, den = np.zeros(len(papers)), np.zeros(len(papers))
    for v in injections:
        if v.scored and keep(v):
            p = papers[v.paper_id]
            den[p] += 1
            num[p] += v.detected
    return num, den


def _strata(types: Sequence[str], severities: Sequence[str]):
    yield stratum(), lambda v: True
    for t in types:
        yield stratum(type=t), lambda v, t=t: v.error_type == t
    for s in severities:
        yield stratum(severity=s), lambda v, s=s: v.severity == s
    for t in types:
        for s in severities:
            yield stratum(type=t, severity=s), lambda v, t=t, s=s: v.error_type == t and v.severity == s


def _types(pv: PaperVerdicts) -> tuple[list[str], list[str]]:
    types = list(ERROR_TYPES) + sorted({v.error_type for v in pv.injections if v.error_type} - set(ERROR_TYPES))
    sevs = list(SEVERITIES) + sorted({v.severity for v in pv.injections if v.severity} - set(SEVERITIES))
    return types, sevs


def detection_rows(pv: PaperVerdicts, run_id: str, W: np.ndarray) -> list[dict[str, Any]]:
    """detection_rate per reviewer and stratum, and unscored_injections per reviewer."""
    papers = pv.paper_index()
    types, sevs = _types(pv)
    rows = []
    for system in sorted({v.system for v in pv.injections}):
        mine = [v for v in pv.injections if v.system == system]
        for name, keep in _strata(types, sevs):
            est = ratio_estimate(*detection_counts(mine, papers, keep), W)
            rows.append(metric_row(run_id, system, "detection_rate", name, est.value, est.ci, est.n))
        # Over the injections the reviewer could see (its paper was cut to fit its context) beside all.
        est = ratio_estimate(*detection_counts(mine, papers, lambda v: v.visible is not False), W)
        rows.append(metric_row(run_id, system, "detection_rate", stratum(visible="yes"), est.value, est.ci, est.n))
        rows.append(metric_row(run_id, system, "invisible_injections", stratum(), sum(v.visible is False for v in mine),
                               n=len(mine)))
        unscored = sum(v.outcome not in ("detected", "missed", "undecided") for v in mine)
        rows.append(metric_row(run_id, system, "unscored_injections", stratum(), unscored, n=len(mine)))
        undecided = sum(v.outcome == "undecided" for v in mine)
        rows.append(metric_row(run_id, system, "undecided_injections", stratum(), undecided, n=len(mine)))
    return rows


def paired_rows(pv: PaperVerdicts, run_id: str, W: np.ndarray) -> list[dict[str, Any]]:
    """detection_diff and sign_reversal for every pair of reviewers, total and per error type."""
    papers = pv.paper_index()
    types, _ = _types(pv)
    systems = sorted({v.system for v in pv.injections})
    by_sys = {s: [v for v in pv.injections if v.system == s] for s in systems}
    rows = []
    for a, b in combinations(systems, 2):
        for name, keep in [(stratum(), lambda v: True)] + [
                (stratum(type=t), lambda v, t=t: v.error_type == t) for t in types]:
            na, da = detection_counts(by_sys[a], papers, keep)
            nb, db = detection_counts(by_sys[b], papers, keep)
            diff = paired_difference(na, da, nb, db, W)
            n_papers = int(np.sum((da > 0) & (db > 0)))
            pair = f"{a} vs {b}"
            rows.append(metric_row(run_id, pair, "detection_diff", name, diff.value, diff.ci, n_papers))
            rows.append(metric_row(run_id, pair, "sign_reversal", name, diff.sign_reversal, n=n_papers))
    return rows


def fp_counts(flags: Sequence[FlagVerdict], papers: dict[str, int], outcome: str,
              keep: Callable[[FlagVerdict], bool] = lambda f: True) -> tuple[np.ndarray, np.ndarray]:
    """Per-paper (flags with `outcome`, all flags) counts of the flags `keep` selects."""
    num, den = np.zeros(len(papers)), np.zeros(len(papers))
    for f in flags:
        if keep(f):
            p = papers[f.paper_id]
            den[p] += 1
            num[p] += f.outcome == outcome
    return num, den


def false_positive_rows(pv: PaperVerdicts, run_id: str, W: np.ndarray) -> list[dict[str, Any]]:
    """false_positive_rate (with interval), false_positive_count and ambiguous_count per reviewer and flag type."""
    papers = pv.paper_index()
    flag_types = list(ERROR_TYPES) + sorted({f.flag_type for f in pv.flags if f.flag_type} - set(ERROR_TYPES))
    rows = []
    systems = sorted({f.system for f in pv.flags} | {v.system for v in pv.injections})
    for system in systems:
        mine = [f for f in pv.flags if f.system == system]
        decided = [f for f in mine if f.outcome != "undecided"]
        for name, keep in [(stratum(), lambda f: True)] + [
                (stratum(type=t), lambda f, t=t: f.flag_type == t) for t in flag_types]:
            num, den = fp_counts(decided, papers, "false_positive", keep)
            est = ratio_estimate(num, den, W)
            n = int(den.sum())
            rows.append(metric_row(run_id, system, "false_positive_rate", name, est.value, est.ci, est.n))
            undecided = sum(f.outcome == "undecided" and keep(f) for f in mine)
            if n:
                amb, _ = fp_counts(decided, papers, "ambiguous", keep)
                rows.append(metric_row(run_id, system, "false_positive_count", name, num.sum(), n=n))
                rows.append(metric_row(run_id, system, "ambiguous_count", name, amb.sum(), n=n))
            if undecided or name == stratum():
                rows.append(metric_row(run_id, system, "undecided_flags", name, undecided, n=n + undecided))
    return rows
