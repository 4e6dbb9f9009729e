"""Agreement: judges within a panel (appendix D) and reviewers with one another (appendix L).

Pearson r of two binary vectors is the phi coefficient; Cohen's kappa = (p_o - p_e) / (1 - p_e)
with p_e from the two marginal distributions (any number of categories). Both are NaN when
undefined (no shared units, a constant vector for r, p_e = 1 for kappa). Pairwise statistics are
computed from per-paper contingency tables, so their 95% intervals resample papers like every
other interval (the weighted sum of the drawn papers' tables gives each resample's table).

Judges: first-round panel votes only (role "panel"), so escalation does not mix in. Detection
panel: for each pair of judges, the injections both voted on, binary detected votes. False-positive
panel: the flags both voted on; r on "false_positive or not", kappa on the three outcomes. Rows
have system "all", stratum "panel=detection|pair=<a> vs <b>" (or panel=false_positive).
Unanimity and escalation rates per reviewer come from the verdict detail (`unanimous`,
`escalated`), over the units judges were asked about (none: n/a, never 1.000 or 0.000);
`first_round_unanimity_rate` from the panel votes (all first-round votes alike, units
with at least two); and `escalation_reversal_rate`: the escalated verdicts whose final outcome differs
from the first-round panel majority.

Reviewers: per pair, the injections scored by both; r and kappa of their detected vectors, total
and per error type (system "<a> vs <b>"); then the paper-level convergence: each reviewer's
detection rate per paper, the Pearson r between two reviewers' paper-rate columns
(`paper_rate_r`), and their mean over pairs (system "all", `mean_paper_rate_r`, n = pairs); and
each reviewer's `dispersion_ratio` of per-paper detection counts (`mean_dispersion_ratio` over
reviewers). `grouped_reviewers` first merges named groups into one "any member detected" reviewer
(the paper's single-LLM entries pool three providers this way).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from itertools import combinations
from typing import Any

import numpy as np

from scoring.bootstrap import percentile_interval
from scoring.papers.bootstrap import ratio_estimate
from scoring.papers.detection import detection_counts
from scoring.papers.rows import ALL, metric_row, stratum
from scoring.papers.verdicts import ERROR_TYPES, InjectionVerdict, PaperVerdicts


def pearson_r(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation; NaN for fewer than two points or a constant vector."""
    a, b = np.asarray(x, float), np.asarray(y, float)
    if a.size < 2 or a.size != b.size:
        return float("nan")
    da, db = a - a.mean(), b - b.mean()
    denom = math.sqrt(float(da @ da) * float(db @ db))
    return float(da @ db) / denom if denom > 0 else float("nan")


def cohen_kappa(x: Sequence[object], y: Sequence[object]) -> float:
    """Cohen's kappa of two raters' labels on the same units."""
    if len(x) == 0 or len(x) != len(y):
        return float("nan")
    n = len(x)
    cats = sorted({*x, *y}, key=str)
    p_o = sum(a == b for a, b in zip(x, y, strict=True)) / n
    p_e = sum((sum(a == c for a in x) / n) * (sum(b == c for b in y) / n) for c in cats)
    return (p_o - p_e) / (1 - p_e) if p_e < 1 else float("nan")


def dispersion_ratio(detected: np.ndarray, scored: np.ndarray) -> float:
    """Pearson chi-square dispersion ratio of per-paper detection counts against one pooled rate.

    chi2 = sum_p (k_p - n_p q)^2 / (n_p q (1 - q)) over papers with n_p > 0, q = sum k / sum n;
    ratio = chi2 / (papers - 1): about 1 when detections within a paper are independent draws.
    NaN with fewer than two papers or q in {0, 1}.
    """
    ok = scored > 0
    k, n = detected[ok].astype(float), scored[ok].astype(float)
    if k.size < 2:
        return float("nan")
    q = k.sum() / n.sum()
    if q <= 0 or q >= 1:
        return float("nan")
    return float(np.sum((k - n * q) ** 2 / (n * q * (1 - q))) / (k.size - 1))


def kappa_of_table(T: np.ndarray) -> np.ndarray:
    """Cohen's kappa of contingency tables T[..., i, j] (rater a said i, rater b said j); NaN when undefined."""
    n = T.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        p_o = np.trace(T, axis1=-2, axis2=-1) / n
        p_e = np.sum(T.sum(-1) * T.sum(-2), axis=-1) / n**2
        return np.where((n > 0) & (p_e < 1 - 1e-12), (p_o - p_e) / (1 - p_e), np.nan)


def phi_of_table(T: np.ndarray, positive: np.ndarray) -> np.ndarray:
    """Pearson r of the binary indicators `positive[i]` of both raters, from tables T[..., i, j]."""
    b = positive.astype(float)
    n = T.sum(axis=(-2, -1))
    sx = np.einsum("...ij,i->...", T, b)
    sy = np.einsum("...ij,j->...", T, b)
    sxy = np.einsum("...ij,i,j->...", T, b, b)
    with np.errstate(invalid="ignore", divide="ignore"):
        den = np.sqrt((n * sx - sx**2) * (n * sy - sy**2))
        return np.where(den > 0, (n * sxy - sx * sy) / np.where(den > 0, den, 1), np.nan)


Labels = dict[str, dict[str, tuple[int, object]]]  # rater -> unit -> (paper index, label)


def _pair_rows(run_id: str, system: str, name: str, labels: Labels, positive, n_papers: int,
               W: np.ndarray, pair_in_stratum: bool = True) -> list[dict]:
    """pearson_r (of `positive(label)`) and cohen_kappa for every pair of raters, with paper-bootstrap intervals."""
    rows = []
    for a, b in combinations(sorted(labels), 2):
        shared = sorted(set(labels[a]) & set(labels[b]))
        cats = sorted({labels[a][u][1] for u in shared} | {labels[b][u][1] for u in shared}, key=str)
        ci = {c: i for i, c in enumerate(cats)}
        T = np.zeros((n_papers, len(cats), len(cats)))
        for u in shared:
            T[labels[a][u][0], ci[labels[a][u][1]], ci[labels[b][u][1]]] += 1
        pos = np.array([bool(positive(c)) for c in cats], dtype=bool)
        Tb = np.tensordot(W, T, axes=1)
        st = name
        if pair_in_stratum:
            st = f"{name}|pair={a} vs {b}" if name != ALL else f"pair={a} vs {b}"
        total = T.sum(0)
        rows.append(metric_row(run_id, system, "pearson_r", st, float(phi_of_table(total, pos)),
                               percentile_interval(phi_of_table(Tb, pos)), len(shared)))
        rows.append(metric_row(run_id, system, "cohen_kappa", st, float(kappa_of_table(total)),
                               percentile_interval(kappa_of_table(Tb)), len(shared)))
    return rows


def judge_agreement_rows(pv: PaperVerdicts, run_id: str, W: np.ndarray) -> list[dict[str, Any]]:
    """Pairwise r and kappa between the judges of the detection and the false-positive panels."""
    papers = pv.paper_index()
    det: Labels = defaultdict(dict)
    for v in pv.injections:
        for vote in v.panel_votes():
            det[vote.judge][f"{v.system}\x00{v.unit_id}"] = (papers[v.paper_id], bool(vote.detected))
    fp: Labels = defaultdict(dict)
    for f in pv.flags:
        for vote in f.panel_votes():
            fp[vote.judge][f"{f.system}\x00{f.unit_id}"] = (papers[f.paper_id], vote.outcome)
    return (_pair_rows(run_id, ALL, "panel=detection", det, bool, len(papers), W)
            + _pair_rows(run_id, ALL, "panel=false_positive", fp, lambda o: o == "false_positive", len(papers), W))


def panel_rate_rows(pv: PaperVerdicts, run_id: str, W: np.ndarray) -> list[dict[str, Any]]:
    """unanimity_rate, escalation_rate and escalation_reversal_rate per reviewer (and "all")."""
    papers = pv.paper_index()
    rows = []
    systems = sorted({v.system for v in pv.injections})
    for system in [*systems, ALL]:
        # Undecided verdicts count too (a failed escalation is still an escalation).
        mine = [v for v in pv.injections if (v.scored or v.outcome == "undecided") and (system == ALL or v.system == system)]
        una_num, una_den = np.zeros(len(papers)), np.zeros(len(papers))
        first_num, first_den = np.zeros(len(papers)), np.zeros(len(papers))
        esc_num, esc_den = np.zeros(len(papers)), np.zeros(len(papers))
        rev_num, rev_den = np.zeros(len(papers)), np.zeros(len(papers))
        for v in mine:
            p = papers[v.paper_id]
            if v.unanimous is not None:
                una_den[p] += 1
                una_num[p] += v.unanimous
            if any(x.role in ("panel", "escalation") for x in v.votes):  # no judge asked: n/a, not 0
                esc_den[p] += 1
                esc_num[p] += v.escalated
            votes = v.panel_votes()
            if len(votes) >= 2:
                first_den[p] += 1
                first_num[p] += len({bool(x.detected) for x in votes}) == 1
            if v.escalated and votes and v.scored:
                yes = sum(bool(x.detected) for x in votes)
                if 2 * yes != len(votes):
                    rev_den[p] += 1
                    rev_num[p] += (2 * yes > len(votes)) != v.detected
        for metric, num, den in (("unanimity_rate", una_num, una_den), ("first_round_unanimity_rate", first_num,
                                                                          first_den),
                                 ("escalation_rate", esc_num, esc_den),
                                 ("escalation_reversal_rate", rev_num, rev_den)):
            est = ratio_estimate(num, den, W)
            rows.append(metric_row(run_id, system, metric, stratum(), est.value, est.ci, est.n))
    return rows


def grouped_reviewers(pv: PaperVerdicts, groups: Mapping[str, Sequence[str]]) -> PaperVerdicts:
    """Replace each group's members by one reviewer that detects an injection when any member did.

    A group's verdict on an injection is scored when any member's is; members absent from the
    table are ignored. Reviewers in no group pass unchanged.
    """
    member_of = {m: g for g, members in groups.items() for m in members}
    merged: dict[tuple[str, str], list[InjectionVerdict]] = defaultdict(list)
    kept = []
    for v in pv.injections:
        if v.system in member_of:
            merged[(member_of[v.system], v.unit_id)].append(v)
        else:
            kept.append(v)
    for (group, _), vs in sorted(merged.items()):
        scored = [v for v in vs if v.scored]
        outcome = ("detected" if any(v.detected for v in scored) else "missed") if scored else "unscored"
        kept.append(replace(vs[0], system=group, outcome=outcome, votes=()))
    return PaperVerdicts(kept, pv.flags)


def reviewer_agreement_rows(pv: PaperVerdicts, run_id: str, W: np.ndarray) -> list[dict[str, Any]]:
    """Per-injection r and kappa between reviewers (total and per type), then paper-rate correlations."""
    rows = []
    papers = pv.paper_index()
    for name, types in [(ALL, None)] + [(stratum(type=t), {t}) for t in ERROR_TYPES]:
        labels: Labels = defaultdict(dict)
        for v in pv.injections:
            if v.scored and (types is None or v.error_type in types):
                labels[v.system][v.unit_id] = (papers[v.paper_id], v.detected)
        for a, b in combinations(sorted(labels), 2):
            rows += _pair_rows(run_id, f"{a} vs {b}", name, {a: labels[a], b: labels[b]}, bool, len(papers), W,
                               pair_in_stratum=False)
    rates = {}
    for s in sorted({v.system for v in pv.injections}):
        num, den = detection_counts([v for v in pv.injections if v.system == s], papers)
        with np.errstate(invalid="ignore", divide="ignore"):
            rates[s] = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    ratios = []
    for s in sorted(rates):
        num, den = detection_counts([v for v in pv.injections if v.system == s], papers)
        d = dispersion_ratio(num, den)
        rows.append(metric_row(run_id, s, "dispersion_ratio", stratum(), d, n=int((den > 0).sum())))
        if np.isfinite(d):
            ratios.append(d)
    rows.append(metric_row(run_id, ALL, "mean_dispersion_ratio", stratum(), float(np.mean(ratios)) if ratios
                           else math.nan, n=len(ratios)))
    rs = []
    for a, b in combinations(sorted(rates), 2):
        ok = np.isfinite(rates[a]) & np.isfinite(rates[b])
        r = pearson_r(rates[a][ok], rates[b][ok])
        rows.append(metric_row(run_id, f"{a} vs {b}", "paper_rate_r", stratum(), r, n=int(ok.sum())))
        if np.isfinite(r):
            rs.append(r)
    rows.append(metric_row(run_id, ALL, "mean_paper_rate_r", stratum(), float(np.mean(rs)) if rs else math.nan,
                           n=len(rs)))
    return rows
