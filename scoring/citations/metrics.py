"""HALLMARK's entry-level metrics, computed for many resamples at once.

Every metric is a function of a count matrix `W` (B resamples x N entries: how often each entry
is drawn) and, for ECE, of the draw order `draws` (B x N entry indices). The point estimate is the
case B = 1, `W` all ones, `draws` = truth order, so one code path serves the estimate and its
bootstrap. Sums that HALLMARK accumulates left to right are accumulated left to right here too
(`np.cumsum`, never pairwise `np.sum`), so point estimates match the released aggregates bit for bit.

Conventions (HALLMARK's, checked against the released aggregates):

- DR = TP / (TP + FN), FPR = FP / (FP + TN), F1 on the HALLUCINATED class as 2PR / (P + R).
- Tier-weighted F1: hallucinated entries weigh their tier (1/2/3) in TP and FN; a false positive
  weighs 1, so only recall is tier-weighted.
- Tier-t metrics score tier-t hallucinated entries against all valid entries.
- ECE: equal-mass bins over the predictions sorted by confidence (stable sort; the first
  `n % bins` bins get one extra entry), or equal-width bins; null when the predictions carry two
  or fewer distinct confidences (a binary tool has no calibration curve to speak of). Equal-mass
  bins cut through ties, so ties keep truth order, in the point estimate and in every resample
  alike: a resample is a multiset of entries, sorted by (confidence, truth position), never by
  draw position. (HALLMARK's bootstrap keeps draw order, which groups ties by stratum; for a
  rule-like tool with one dominant confidence that makes the bins class-pure and the bootstrap
  ECE several times the point ECE — prescreen on dev_public: 0.107, CI [0.430, 0.447]. The
  point estimate is HALLMARK's; the interval is not HALLMARK's stream for such tools.)
- AUROC / AUPRC: score for HALLUCINATED = confidence when flagged else 1 - confidence; entries
  without a definite label and confidence are left out; ties form one ROC step (trapezoid);
  AUPRC is the interpolated average precision.

Undefined values (a zero denominator) are NaN, never 0.0; F1 is 0.0 when there are positives or
flags but no true positive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scoring.citations.entry_table import EntryTable, ModeView
from scoring.citations.metric_catalogue import added

TIER_WEIGHTS: dict[int, float] = {1: 1.0, 2: 2.0, 3: 3.0}
ECE_BINS = 10

#: The built-in metrics, computed together by `metric_batch` (HALLMARK's keys); the catalogue
#: (`scoring/citations/metric_catalogue.py`) describes them and may add more.
BATCH_METRICS: tuple[str, ...] = (
    "detection_rate",
    "false_positive_rate",
    "precision",
    "f1_hallucination",
    "tier_weighted_f1",
    "mcc",
    "macro_f1",
    "tier3_f1",
    "ece",
    "auroc",
    "auprc",
)


@dataclass(frozen=True)
class BatchInputs:
    """What a metric added to the catalogue computes from: the entries, one eval mode's view of
    them, the resample counts `W` (B x N) and draws, and the confusion counts per resample."""

    entries: EntryTable
    view: ModeView
    W: np.ndarray
    draws: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    tn: np.ndarray
    fn: np.ndarray


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def f1_from_counts(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    """F1 as HALLMARK writes it (2PR / (P + R)); NaN only when there is nothing to score."""
    p = np.nan_to_num(_div(tp, tp + fp))
    r = np.nan_to_num(_div(tp, tp + fn))
    s = p + r
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = np.where(s > 0, 2 * p * r / np.where(s > 0, s, 1.0), 0.0)
    return np.where((tp + fp + fn) > 0, f1, np.nan)


def mcc_from_counts(tp: np.ndarray, fp: np.ndarray, tn: np.ndarray, fn: np.ndarray) -> np.ndarray:
    """Matthews correlation; NaN when a margin is empty."""
    tp, fp, tn, fn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, tn, fn))
    den = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, (tp * tn - fp * fn) / np.where(den > 0, den, 1.0) ** 0.5, np.nan)


def confusion_counts(view: ModeView, y: np.ndarray, W: np.ndarray, mask: np.ndarray | None = None):
    """(tp, fp, tn, fn) per resample, each of shape (B,)."""
    base = view.in_matrix if mask is None else (view.in_matrix & mask)
    f = view.flagged
    vecs = np.stack([base & y & f, base & ~y & f, base & ~y & ~f, base & y & ~f], axis=1).astype(np.float64)
    c = W @ vecs
    return c[:, 0], c[:, 1], c[:, 2], c[:, 3]


def ece_batch(view: ModeView, y: np.ndarray, draws: np.ndarray, n_bins: int = ECE_BINS, adaptive: bool = True):
    """ECE per resample (rows of `draws`); NaN where the row has <= 2 distinct confidences."""
    has = view.has_confidence[draws]
    conf = np.where(has, view.confidence[draws], np.inf)
    correct = (view.flagged == y)[draws] & has
    # Ties in confidence keep truth order (the draw's entry position), not draw order: a resample
    # is a multiset of entries, scored exactly as the point estimate scores the entries it has.
    order = np.lexsort((draws, conf), axis=1)
    conf = np.take_along_axis(conf, order, axis=1)
    correct = np.take_along_axis(correct, order, axis=1).astype(np.float64)
    total = has.sum(axis=1)
    B, N = conf.shape
    finite = np.where(np.isfinite(conf), conf, 0.0)
    distinct = np.ones(B, dtype=np.int64)
    if N > 1:
        distinct = distinct + ((conf[:, 1:] != conf[:, :-1]) & np.isfinite(conf[:, 1:])).sum(axis=1)
    distinct = np.where(total > 0, distinct, 0)
    if adaptive:
        k = np.arange(n_bins + 1)
        base, rem = total // n_bins, total % n_bins
        bounds = k[None, :] * base[:, None] + np.minimum(k[None, :], rem[:, None])
    else:
        edges = np.minimum((finite * n_bins).astype(np.int64), n_bins - 1)
        edges = np.where(np.isfinite(conf), edges, n_bins)
        bounds = np.stack([(edges < b).sum(axis=1) for b in range(n_bins + 1)], axis=1)
    ece = np.zeros(B)
    if B == 1:  # the point estimate: per-bin sums left to right, as HALLMARK does
        for b in range(n_bins):
            lo, hi = int(bounds[0, b]), int(bounds[0, b + 1])
            size = hi - lo
            if size <= 0:
                continue
            avg_conf = math.fsum(finite[0, lo:hi].tolist()) / size
            acc = float(correct[0, lo:hi].sum()) / size
            ece[0] += (size / total[0]) * abs(acc - avg_conf)
    else:
        zero = np.zeros((B, 1))
        cconf = np.concatenate([zero, np.cumsum(finite, axis=1)], axis=1)
        ccorr = np.concatenate([zero, np.cumsum(correct, axis=1)], axis=1)
        for b in range(n_bins):
            lo, hi = bounds[:, b], bounds[:, b + 1]
            size = hi - lo
            sconf = np.take_along_axis(cconf, hi[:, None], 1)[:, 0] - np.take_along_axis(cconf, lo[:, None], 1)[:, 0]
            scorr = np.take_along_axis(ccorr, hi[:, None], 1)[:, 0] - np.take_along_axis(ccorr, lo[:, None], 1)[:, 0]
            safe = np.where(size > 0, size, 1)
            term = (size / np.where(total > 0, total, 1)) * np.abs(scorr / safe - sconf / safe)
            ece += np.where(size > 0, term, 0.0)
    return np.where(distinct > 2, ece, np.nan)


def hallucination_scores(view: ModeView) -> np.ndarray:
    """Score for HALLUCINATED: confidence if flagged, else 1 - confidence; NaN without one."""
    s = np.where(view.flagged, view.confidence, 1.0 - view.confidence)
    return np.where(view.has_confidence, s, np.nan)


def ranking_batch(view: ModeView, y: np.ndarray, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(AUROC, AUPRC) per resample; NaN when a class is absent among scored entries."""
    score = hallucination_scores(view)
    ok = ~np.isnan(score)
    uniq = np.unique(score[ok])[::-1]  # distinct scores, descending: one ROC step each
    B = W.shape[0]
    if uniq.size == 0:
        return np.full(B, np.nan), np.full(B, np.nan)
    pos = np.zeros((y.shape[0], uniq.size))
    idx = np.searchsorted(-uniq, -score[ok])
    rows = np.flatnonzero(ok)
    pos[rows[y[ok]], idx[y[ok]]] = 1.0
    neg = np.zeros_like(pos)
    neg[rows[~y[ok]], idx[~y[ok]]] = 1.0
    cp = np.cumsum(W @ pos, axis=1)
    cn = np.cumsum(W @ neg, axis=1)
    npos, nneg = cp[:, -1:], cn[:, -1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr = cp / npos
        fpr = cn / nneg
        prev_t = np.concatenate([np.zeros((B, 1)), tpr[:, :-1]], axis=1)
        prev_f = np.concatenate([np.zeros((B, 1)), fpr[:, :-1]], axis=1)
        auroc = np.cumsum((fpr - prev_f) * (tpr + prev_t) / 2.0, axis=1)[:, -1]
        auroc = np.where((npos[:, 0] > 0) & (nneg[:, 0] > 0), auroc, np.nan)
        prec = np.where(cp + cn > 0, cp / np.where(cp + cn > 0, cp + cn, 1.0), 0.0)
        interp = np.flip(np.maximum.accumulate(np.flip(prec, axis=1), axis=1), axis=1)
        rec = cp / npos
        prev_r = np.concatenate([np.zeros((B, 1)), rec[:, :-1]], axis=1)
        auprc = np.cumsum(interp * (rec - prev_r), axis=1)[:, -1]
        auprc = np.where(npos[:, 0] > 0, auprc, np.nan)
    return auroc, auprc


def metric_batch(entries: EntryTable, view: ModeView, W: np.ndarray, draws: np.ndarray) -> dict[str, np.ndarray]:
    """All of `BATCH_METRICS` and the catalogue's added metrics for each resample (row of `W` / `draws`)."""
    y = entries.hallucinated
    tp, fp, tn, fn = confusion_counts(view, y, W)
    out: dict[str, np.ndarray] = {
        "detection_rate": _div(tp, tp + fn),
        "false_positive_rate": _div(fp, fp + tn),
        "precision": _div(tp, tp + fp),
        "f1_hallucination": f1_from_counts(tp, fp, fn),
        "mcc": mcc_from_counts(tp, fp, tn, fn),
    }
    f1_valid = f1_from_counts(tn, fn, fp)
    out["macro_f1"] = (out["f1_hallucination"] + f1_valid) / 2
    w = np.array([TIER_WEIGHTS.get(int(t), 1.0) for t in entries.tier]) * y
    m = view.in_matrix
    wtp = W @ (w * (m & view.flagged))
    wfn = W @ (w * (m & ~view.flagged))
    out["tier_weighted_f1"] = _tw_f1(wtp, wfn, fp)
    t3 = ~y | (entries.tier == 3)
    tp3, fp3, _, fn3 = confusion_counts(view, y, W, mask=t3)
    out["tier3_f1"] = f1_from_counts(tp3, fp3, fn3)
    out["ece"] = ece_batch(view, y, draws)
    out["auroc"], out["auprc"] = ranking_batch(view, y, W)
    extra = added()
    if extra:
        inputs = BatchInputs(entries, view, W, draws, tp, fp, tn, fn)
        out.update({d.name: np.asarray(d.compute(inputs), dtype=np.float64) for d in extra})  # type: ignore[misc]
    return out


def _tw_f1(wtp: np.ndarray, wfn: np.ndarray, fp: np.ndarray) -> np.ndarray:
    return f1_from_counts(wtp, fp, wfn)


def point_metrics(entries: EntryTable, view: ModeView) -> dict[str, float]:
    """All metrics (`metric_batch`) on the entries as given (the point estimate)."""
    W = np.ones((1, entries.n))
    draws = np.arange(entries.n)[None, :]
    return {k: float(v[0]) for k, v in metric_batch(entries, view, W, draws).items()}
