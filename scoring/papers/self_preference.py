"""Judge self-preference (paper appendix E) and leave-one-judge-out rates, from first-round panel votes.

`families` maps a reviewer (system) to its provider family; judges carry their family in each vote.
A reviewer is tested when its family is one of the judges' families and at least one other judge
family voted. With r_f(s) the share of "detected" votes that judges of family f cast on s's
injections, and r_f their share pooled over every reviewer in the table:

  delta_s          = r_self(s)(s) - mean_{f != self(s)} r_f(s)
  delta_adjusted_s = (r_self(s)(s) - r_self(s)) - mean_{f != self(s)} (r_f(s) - r_f)

Rows: `self_preference_delta` and `self_preference_delta_adjusted` per tested reviewer, their
means over tested reviewers (system "all"; n = tested reviewers; per reviewer n = its injections with
first-round votes), `judge_detect_rate` (n = votes) per judge family (system "all",
stratum "judge_family=<f>"); every interval is a paper-level bootstrap.

Lone dissenters: on panels where all but one judge agree (a 2-1 split of three), the share of splits
whose lone dissenter is the reviewer's own family (`lone_dissenter_same_family_share`; 1/3 under no
preference with three judges), over all splits and per split direction ("split=detected": the
majority detected it; "split=not_detected").

Leave one judge out: for each judge family f, every reviewer's detection rate recomputed from the
first-round panel votes of the other families: detected when more of them say yes than no, a tie
(1-1) counted as missed ("ties=strict") or detected ("ties=lenient"). An injection decided without
panel votes (a mechanical quote match) keeps its outcome. Rows `loo_detection_rate` and `loo_change`
(minus the reported rate, on the same paper resamples), stratum "drop=<f>|ties=<strict|lenient>".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from scoring.bootstrap import percentile_interval
from scoring.papers.bootstrap import paired_difference, ratio_estimate, ratio_samples
from scoring.papers.detection import detection_counts
from scoring.papers.rows import ALL, metric_row, stratum
from scoring.papers.verdicts import InjectionVerdict, PaperVerdicts


def judge_families(pv: PaperVerdicts) -> list[str]:
    """Families of the judges that cast first-round detection votes."""
    return sorted({vote.family for v in pv.injections for vote in v.panel_votes()})


def vote_counts(pv: PaperVerdicts, systems: list[str], fams: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(systems x families x papers) counts of yes votes and of votes."""
    papers = pv.paper_index()
    si, fi = {s: i for i, s in enumerate(systems)}, {f: i for i, f in enumerate(fams)}
    yes = np.zeros((len(systems), len(fams), len(papers)))
    tot = np.zeros_like(yes)
    for v in pv.injections:
        if v.system not in si:
            continue
        for vote in v.panel_votes():
            idx = (si[v.system], fi[vote.family], papers[v.paper_id])
            tot[idx] += 1
            yes[idx] += bool(vote.detected)
    return yes, tot


def _ratio_all(yes: np.ndarray, tot: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        s, t = yes.sum(-1), tot.sum(-1)
        return np.where(t > 0, s / np.where(t > 0, t, 1), np.nan)


def _deltas(rates: np.ndarray, pooled: np.ndarray, tested: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """rates (..., systems, fams), pooled (..., fams) -> delta and adjusted delta (..., len(tested))."""
    d, a = [], []
    for s, f in tested:
        others = [g for g in range(rates.shape[-1]) if g != f]
        d.append(rates[..., s, f] - np.mean(rates[..., s, others], axis=-1))
        adj = rates[..., s, :] - pooled
        a.append(adj[..., f] - np.mean(adj[..., others], axis=-1))
    return np.stack(d, -1), np.stack(a, -1)


def self_preference_rows(pv: PaperVerdicts, run_id: str, W: np.ndarray,
                         families: Mapping[str, str]) -> list[dict[str, Any]]:
    """Delta_s, adjusted Delta_s, their means, judge pooled rates and lone-dissenter shares."""
    fams = judge_families(pv)
    systems = sorted({v.system for v in pv.injections})
    yes, tot = vote_counts(pv, systems, fams)
    rows = []
    for j, f in enumerate(fams):
        est = ratio_estimate(yes[:, j].sum(0), tot[:, j].sum(0), W)
        rows.append(metric_row(run_id, ALL, "judge_detect_rate", stratum(judge_family=f), est.value, est.ci, est.n))
    tested = [(i, fams.index(families[s])) for i, s in enumerate(systems)
              if families.get(s) in fams and len(fams) > 1]
    if tested:
        rates = _ratio_all(yes, tot)
        pooled = _ratio_all(yes.sum(0), tot.sum(0))
        d, a = _deltas(rates, pooled, tested)
        # resampled: (B, systems, fams)
        rates_b = np.stack([np.stack([ratio_samples(yes[s, g], tot[s, g], W) for g in range(len(fams))], -1)
                            for s in range(len(systems))], 1)
        pooled_b = np.stack([ratio_samples(yes[:, g].sum(0), tot[:, g].sum(0), W) for g in range(len(fams))], -1)
        db, ab = _deltas(rates_b, pooled_b, tested)
        n_units = {s: sum(1 for v in pv.injections if v.system == s and v.panel_votes()) for s in systems}
        for k, (s, _) in enumerate(tested):
            n = n_units[systems[s]]
            rows.append(metric_row(run_id, systems[s], "self_preference_delta", stratum(), d[k],
                                   percentile_interval(db[:, k]), n))
            rows.append(metric_row(run_id, systems[s], "self_preference_delta_adjusted", stratum(), a[k],
                                   percentile_interval(ab[:, k]), n))
        rows.append(metric_row(run_id, ALL, "self_preference_delta_mean", stratum(), float(np.mean(d)),
                               percentile_interval(np.mean(db, axis=1)), len(tested)))
        rows.append(metric_row(run_id, ALL, "self_preference_delta_adjusted_mean", stratum(), float(np.mean(a)),
                               percentile_interval(np.mean(ab, axis=1)), len(tested)))
    rows += _lone_dissenter_rows(pv, run_id, W, families, fams)
    return rows


def lone_dissenter(v: InjectionVerdict) -> tuple[str, bool] | None:
    """(family of the lone dissenter, majority detected?) when all but one of >= 3 panel votes agree."""
    votes = v.panel_votes()
    if len(votes) < 3:
        return None
    yes = [x for x in votes if x.detected]
    no = [x for x in votes if not x.detected]
    if len(no) == 1 and len(yes) >= 2:
        return no[0].family, True
    if len(yes) == 1 and len(no) >= 2:
        return yes[0].family, False
    return None


def _lone_dissenter_rows(pv: PaperVerdicts, run_id: str, W: np.ndarray, families: Mapping[str, str],
                         fams: list[str]) -> list[dict[str, Any]]:
    papers = pv.paper_index()
    systems = sorted({v.system for v in pv.injections if families.get(v.system) in fams})
    rows = []
    for system in [*systems, ALL] if systems else []:
        counts = {k: (np.zeros(len(papers)), np.zeros(len(papers))) for k in (None, True, False)}
        for v in pv.injections:
            if v.system not in systems or (system != ALL and v.system != system):
                continue
            split = lone_dissenter(v)
            if split is None:
                continue
            same = split[0] == families[v.system]
            for key in (None, split[1]):
                counts[key][0][papers[v.paper_id]] += same
                counts[key][1][papers[v.paper_id]] += 1
        for key, name in ((None, stratum()), (True, stratum(split="detected")), (False, stratum(split="not_detected"))):
            est = ratio_estimate(*counts[key], W)
            rows.append(metric_row(run_id, system, "lone_dissenter_same_family_share", name, est.value, est.ci,
                                   est.n))
    return rows


def loo_outcome(v: InjectionVerdict, drop: str, lenient: bool) -> bool:
    """Detected with judge family `drop` removed from the first-round panel."""
    votes = v.panel_votes()
    if not votes:
        return v.detected
    kept = [x for x in votes if x.family != drop]
    yes = sum(bool(x.detected) for x in kept)
    no = len(kept) - yes
    return yes > no or (yes == no and lenient)


def leave_one_judge_out_rows(pv: PaperVerdicts, run_id: str, W: np.ndarray) -> list[dict[str, Any]]:
    """loo_detection_rate and loo_change per reviewer, dropped judge family and tie rule."""
    papers = pv.paper_index()
    rows = []
    for system in sorted({v.system for v in pv.injections}):
        mine = [v for v in pv.injections if v.system == system and v.scored]
        base_num, base_den = detection_counts(mine, papers)
        for drop in judge_families(pv):
            for ties, lenient in (("strict", False), ("lenient", True)):
                num = np.zeros(len(papers))
                for v in mine:
                    num[papers[v.paper_id]] += loo_outcome(v, drop, lenient)
                est = ratio_estimate(num, base_den, W)
                name = stratum(drop=drop, ties=ties)
                rows.append(metric_row(run_id, system, "loo_detection_rate", name, est.value, est.ci, est.n))
                diff = paired_difference(num, base_den, base_num, base_den, W)
                rows.append(metric_row(run_id, system, "loo_change", name, diff.value, diff.ci, est.n))
    return rows
