"""One detector's review-audit scores: HalluPeer Tasks 1-3 and the ReviewCritique segment track.

Inputs are records only: the truths, the blind copies (for sentence indices and review text) and
the detector's outputs keyed by review id (`Output.detail["review"]` = `ReviewPrediction`).

What is scored, and what is counted beside it (never silently dropped):
- A review whose output is missing or errored (provider, parse, budget, ...) has no prediction;
  a review whose prediction leaves a task `None` did not answer that task. With
  `unanswered="exclude"` (default) such reviews leave that task's denominator and are counted in
  `coverage`; with `unanswered="negative"` they count as "nothing hallucinated, no type, no span"
  (for the tasks the detector answers on some review; a task it never answers, e.g. oracle typing
  for a detector without it, stays undefined and is listed in `coverage["tasks_not_answered"]`).
  Whatever the policy, the headline metrics are also given with errored reviews counted as misses
  (`MISS_METRICS`, named `<metric>_unanswered_as_miss`).
- A sentence absent from an answered `sentence_labels` dict was not flagged (False).
- Gold sentence labels: an injected sentence, or `ReviewTruth.sentence_labels[i]` (natural labels).

Intervals: paper-level bootstrap (`scoring.papers.bootstrap.weights`: whole papers resampled with
replacement, one seeded set of resamples for every metric), percentile intervals over the finite
resamples (`scoring.bootstrap.percentile_interval`). Every metric here is a function of summed
per-paper counts, so a resample is a weighted sum of those counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from corpora.reviews.records import ANCHORS, ReviewCopy, ReviewPrediction, ReviewTruth, Span
from scoring.bootstrap import percentile_interval
from scoring.papers.bootstrap import N_INTERVAL, weights
from scoring.reviews.detection import BINARY_METRICS, binary_metrics, undefined_reason
from scoring.reviews.localization import match_spans, token_counts, tokenize
from scoring.reviews.metric_value import MetricValue
from scoring.reviews.type_classification import type_counts, type_metrics
from storage.outages import OUTAGE_KEY
from storage.records import Output

Unanswered = Literal["exclude", "negative"]


@dataclass
class ReviewScores:
    """Every metric of one detector on one corpus, plus what was not scored and why."""

    metrics: list[MetricValue]
    coverage: dict[str, Any] = field(default_factory=dict)

    def get(self, metric: str, stratum: str = "all") -> MetricValue:
        for m in self.metrics:
            if (m.metric, m.stratum) == (metric, stratum):
                return m
        raise KeyError(f"no metric {metric!r} in stratum {stratum!r}")

    def value(self, metric: str, stratum: str = "all") -> float | None:
        return self.get(metric, stratum).value

    def rows(self, run_id: str, system: str) -> list[dict[str, Any]]:
        """METRIC_SCHEMA rows (undefined values as NaN with n = 0)."""
        return [m.row(run_id, system) for m in self.metrics]


def prediction_of(output: Output | None) -> ReviewPrediction | str:
    """The prediction an output carries, or why there is none ("missing", an error kind)."""
    if output is None:
        return "missing"
    if output.error is not None:
        return output.error_kind or "system"
    if OUTAGE_KEY in (output.detail or {}):
        return "outage"  # UNCERTAIN-by-outage: no answer, retried on resume
    review = (output.detail or {}).get("review")
    if not isinstance(review, dict):
        return "no_review_detail"
    return ReviewPrediction.from_detail(review)


def gold_sentence_labels(truth: ReviewTruth, copy: ReviewCopy) -> dict[int, bool]:
    injected = {inj.sentence_index for inj in truth.injections}
    return {s.index: s.index in injected or bool(truth.sentence_labels.get(s.index, False)) for s in copy.sentences}


def gold_sentence_types(truth: ReviewTruth) -> dict[int, str]:
    types = {inj.sentence_index: inj.anchor for inj in reversed(truth.injections)}  # first injection wins
    return {**truth.sentence_types, **types}


def _confusion(gold: bool, pred: bool) -> np.ndarray:
    return np.array([gold and pred, pred and not gold, gold and not pred, not gold and not pred], dtype=float)


class _Estimator:
    """Point values and paper-bootstrap intervals from per-paper count arrays."""

    def __init__(self, n_papers: int, n_resamples: int, seed: int, confidence: float) -> None:
        self.W = weights(n_papers, n_resamples, seed)
        self.confidence = confidence

    def _interval(self, samples: np.ndarray) -> tuple[float | None, float | None]:
        lo, hi = percentile_interval(samples, self.confidence)
        return (None, None) if not np.isfinite(lo) else (lo, hi)

    def binary(self, counts: np.ndarray, prefix: str, stratum: str) -> list[MetricValue]:
        total = counts.sum(axis=0)
        point = binary_metrics(*total)
        boot = binary_metrics(*np.moveaxis(self.W @ counts, -1, 0))
        out = []
        for name in BINARY_METRICS:
            reason = undefined_reason(name, *total)
            value = None if reason else float(point[name])
            lo, hi = (None, None) if reason else self._interval(boot[name])
            out.append(MetricValue(f"{prefix}_{name}", value, int(total.sum()), reason, lo, hi, stratum))
        return out

    def ratio_f1(self, counts: np.ndarray, metric: str, reason_if_empty: str,
                 f: Callable[[np.ndarray], np.ndarray], n_of: Callable[[np.ndarray], float]) -> MetricValue:  # fmt: skip
        total = counts.sum(axis=0)
        value = f(total)
        if not np.isfinite(value):
            return MetricValue(metric, None, int(n_of(total)), reason_if_empty)
        lo, hi = self._interval(f(np.moveaxis(self.W @ counts, -1, 0)))
        return MetricValue(metric, float(value), int(n_of(total)), None, lo, hi)


def _f1_tp_fp_fn(c: np.ndarray) -> np.ndarray:
    den = 2 * c[0] + c[1] + c[2]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, 2 * c[0] / np.where(den > 0, den, 1.0), np.nan)


def _f1_matched(c: np.ndarray) -> np.ndarray:
    den = c[1] + c[2]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, 2 * c[0] / np.where(den > 0, den, 1.0), np.nan)


MISS_SUFFIX = "_unanswered_as_miss"
MISS_METRICS: tuple[str, ...] = ("review_recall", "review_f1", "review_mcc", "sentence_recall", "sentence_f1",
                                 "sentence_mcc", "type_micro_f1", "type_oracle_micro_f1", "token_f1",
                                 "overlap_span_f1")  # fmt: skip
"""Headline metrics also given with every errored or missing review counted as a miss (`<name>` +
`MISS_SUFFIX`), whatever the `unanswered` policy: a detector that fails exactly on the injected
reviews cannot look good by leaving them out of the denominator."""

_TASKS = ("review", "sentence", "type", "type_oracle", "span", "span_label_conditioned")


@dataclass
class _Counts:
    review: np.ndarray
    sentence: np.ndarray
    types: dict[str, np.ndarray]  # setting ("", "oracle_") -> (P, L, 3)
    spans: dict[str, np.ndarray]  # prefix ("", "lc_") -> (P, 3, 3): token, exact, overlap counts
    errored: Counter[str]
    skipped: Counter[str]
    answered: set[str] = field(default_factory=set)
    untyped_gold: int = 0


def _answered_tasks(pred: ReviewPrediction) -> set[str]:
    fields = (pred.review_hallucinated, pred.sentence_labels, pred.sentence_types, pred.oracle_types, pred.spans,
              pred.label_spans)  # fmt: skip
    return {task for task, value in zip(_TASKS, fields, strict=True) if value is not None}


def _said_nothing(tasks: set[str]) -> ReviewPrediction:
    """The prediction "nothing hallucinated, no type, no span" for `tasks`, no answer for the others."""
    return ReviewPrediction(False if "review" in tasks else None, {} if "sentence" in tasks else None,
                            {} if "type" in tasks else None, () if "span" in tasks else None,
                            {} if "type_oracle" in tasks else None, {} if "span_label_conditioned" in tasks else None)  # fmt: skip


def _span_counts(tokens: Sequence[Span], gold: Sequence[Span], pred: Sequence[Span]) -> np.ndarray:
    return np.array([token_counts(tokens, gold, pred),
                     (len(match_spans(tokens, gold, pred, "exact")), len(pred), len(gold)),
                     (len(match_spans(tokens, gold, pred, "overlap")), len(pred), len(gold))], dtype=float)  # fmt: skip


def _count(truths: Sequence[ReviewTruth], copies: Mapping[str, ReviewCopy], outputs: Mapping[str, Output],
           labels: Sequence[str], pidx: Mapping[str, int], unanswered: Unanswered | Literal["errors_as_misses"]) -> _Counts:  # fmt: skip
    P, L = len(pidx), len(labels)
    c = _Counts(np.zeros((P, 4)), np.zeros((P, 4)), {k: np.zeros((P, L, 3)) for k in ("", "oracle_")},
                {k: np.zeros((P, 3, 3)) for k in ("", "lc_")}, Counter(), Counter())  # fmt: skip
    preds = {t.review_id: prediction_of(outputs.get(t.review_id)) for t in truths}
    # the tasks this detector answers at all: an errored review counts as a miss on those only
    answered = set().union(*(_answered_tasks(p) for p in preds.values() if not isinstance(p, str)))
    c.answered = answered
    negative = unanswered == "negative"
    for truth in truths:
        copy = copies.get(truth.review_id)
        if copy is None:
            raise KeyError(f"review {truth.review_id}: no copy given (needed for its sentences and text)")
        p = pidx[truth.paper_id]
        pred = preds[truth.review_id]
        if isinstance(pred, str):
            c.errored[pred] += 1
            if unanswered == "exclude":
                continue
            pred = ReviewPrediction(None) if unanswered == "negative" else _said_nothing(answered)

        def skip(task: str, value: object) -> bool:
            """True when `task` is not scored on this review; counted when the detector answers it elsewhere."""
            if value is not None or (negative and task in answered):
                return False
            if task in answered:
                c.skipped[task] += 1
            return True

        # Task 1, review level
        if not skip("review", pred.review_hallucinated):
            c.review[p] += _confusion(truth.hallucinated, bool(pred.review_hallucinated))
        gold_s = gold_sentence_labels(truth, copy)
        # Task 1, sentence level
        if not skip("sentence", pred.sentence_labels):
            said = pred.sentence_labels or {}
            for i, g in gold_s.items():
                c.sentence[p] += _confusion(g, bool(said.get(i, False)))
        # Task 2, on gold-hallucinated sentences only: end to end (types of flagged sentences) and
        # oracle (the type given each gold-hallucinated sentence when told it is hallucinated)
        gold_t = gold_sentence_types(truth)
        typed = [(gold_t[i], i) for i, g in gold_s.items() if g and i in gold_t]
        c.untyped_gold += sum(1 for i, g in gold_s.items() if g and i not in gold_t)
        for setting, said_types, task in (("", pred.sentence_types, "type"), ("oracle_", pred.oracle_types, "type_oracle")):
            if not typed or skip(task, said_types):
                continue
            c.types[setting][p] += type_counts(((g, (said_types or {}).get(i)) for g, i in typed), labels)
        # Task 3, end to end
        tokens: list[Span] | None = None
        gold_sp = [Span(inj.start, inj.end) for inj in truth.injections]
        if not skip("span", pred.spans):
            tokens = tokenize(copy.review_text)
            c.spans[""][p] += _span_counts(tokens, gold_sp, list(pred.spans or ()))
        # Task 3, label-conditioned (fig. 21): for each gold type of the review, the spans marked when
        # asked for that type, matched against that type's gold spans; tokens over the review
        gold_types = sorted({inj.anchor for inj in truth.injections})
        if not gold_types:
            continue
        if skip("span_label_conditioned", pred.label_spans):
            continue
        tokens = tokens if tokens is not None else tokenize(copy.review_text)
        by_label = pred.label_spans or {}
        marked = [sp for t in gold_types for sp in by_label.get(t, ())]
        lc = _span_counts(tokens, gold_sp, marked)
        for row in (1, 2):  # span matches within each type
            lc[row, 0] = sum(len(match_spans(tokens, [Span(i.start, i.end) for i in truth.injections if i.anchor == t],
                                             list(by_label.get(t, ())), "exact" if row == 1 else "overlap"))
                             for t in gold_types)  # fmt: skip
        c.spans["lc_"][p] += lc
    return c


def _metrics(est: _Estimator, c: _Counts, labels: Sequence[str]) -> list[MetricValue]:
    metrics = est.binary(c.review, "review", "all") + est.binary(c.sentence, "sentence", "all")
    for setting in ("", "oracle_"):
        metrics += _type_values(est, c.types[setting], labels, setting)
    for prefix in ("", "lc_"):
        sp = c.spans[prefix]
        metrics.append(est.ratio_f1(sp[:, 0], f"{prefix}token_f1", "no gold or predicted span tokens", _f1_tp_fp_fn,
                                    lambda c: c[0] + c[1] + c[2]))  # fmt: skip
        for row, name in ((1, "exact_span_f1"), (2, "overlap_span_f1")):
            metrics.append(est.ratio_f1(sp[:, row], f"{prefix}{name}", "no gold and no predicted spans", _f1_matched,
                                        lambda c: c[1] + c[2]))  # fmt: skip
    return metrics


def score_reviews(truths: Sequence[ReviewTruth], copies: Mapping[str, ReviewCopy], outputs: Mapping[str, Output],
                  *, labels: Sequence[str] = ANCHORS, unanswered: Unanswered = "exclude",
                  n_resamples: int = N_INTERVAL, seed: int = 0, confidence: float = 0.95) -> ReviewScores:  # fmt: skip
    """HalluPeer Tasks 1-3 for one detector.

    Metric names: review_{accuracy,precision,recall,f1,mcc}, sentence_{...} (Task 1). Task 2, on
    gold-hallucinated sentences with a gold type, in two settings: end to end, type_{macro,micro}_f1
    (the type the detector gave the sentences it flagged; an unflagged one is a miss) and oracle,
    type_oracle_{macro,micro}_f1 (the paper's fig. 20: the type it gives each gold-hallucinated
    sentence when told it is hallucinated); per label `type_f1` / `type_oracle_f1` in stratum
    "type=<label>"; macro-F1 averaged over the labels gold or predicted (`type_macro_f1`) and over the
    labels with gold support (`type_macro_f1_gold`). Task 3: token_f1, exact_span_f1, overlap_span_f1
    (the spans of the detection answer) and lc_token_f1, lc_exact_span_f1, lc_overlap_span_f1 (the
    label-conditioned setting, fig. 21, on hallucinated reviews). Then `MISS_METRICS` + `MISS_SUFFIX`.
    """
    papers = sorted({t.paper_id for t in truths})
    pidx = {p: i for i, p in enumerate(papers)}
    c = _count(truths, copies, outputs, labels, pidx, unanswered)
    est = _Estimator(len(papers), n_resamples, seed, confidence)
    metrics = _metrics(est, c, labels)
    as_miss = {m.metric: m for m in _metrics(est, _count(truths, copies, outputs, labels, pidx, "errors_as_misses"), labels)
               if m.stratum == "all"}  # fmt: skip
    for name in MISS_METRICS:
        m = as_miss[name]
        metrics.append(MetricValue(name + MISS_SUFFIX, m.value, m.n, m.reason, m.ci_low, m.ci_high))
    coverage = {"reviews": len(truths), "papers": len(papers), "errored": dict(c.errored), "unanswered": dict(c.skipped),
                "gold_hallucinated_sentences_without_type": c.untyped_gold, "policy": unanswered,
                "tasks_not_answered": [t for t in _TASKS if t not in c.answered]}  # fmt: skip
    return ReviewScores(metrics, coverage)


def _type_values(est: _Estimator, counts: np.ndarray, labels: Sequence[str], setting: str = "") -> list[MetricValue]:
    total = counts.sum(axis=0)
    point = type_metrics(total)
    boot = type_metrics(np.einsum("bp,plk->blk", est.W, counts))
    n_units = int(total[:, 0].sum() + total[:, 2].sum())  # every gold-typed unit is a TP or an FN of its label
    missing = [lab for lab, f in zip(labels, point["per_label_f1"], strict=True) if not np.isfinite(f)]
    gold_labels = [lab for lab, row in zip(labels, total, strict=True) if row[0] + row[2] > 0]
    out = []
    for name in ("macro_f1", "micro_f1", "macro_f1_gold"):
        metric = f"type_{setting}{name}"
        if not np.isfinite(point[name]):
            out.append(MetricValue(metric, None, n_units, "no gold-hallucinated sentence with a type"))
            continue
        lo, hi = est._interval(boot[name])
        reason = None
        if name == "macro_f1" and missing:
            reason = f"averaged over {len(labels) - len(missing)} labels (gold or predicted); undefined (never gold nor predicted): {', '.join(missing)}"
        if name == "macro_f1_gold" and len(gold_labels) < len(labels):
            reason = f"averaged over the {len(gold_labels)} labels with gold support: {', '.join(gold_labels)}"
        out.append(MetricValue(metric, float(point[name]), n_units, reason, lo, hi))
    for j, label in enumerate(labels):
        f = point["per_label_f1"][j]
        n = int(total[j, 0] + total[j, 2])
        if not np.isfinite(f):
            out.append(MetricValue(f"type_{setting}f1", None, n, "label neither gold nor predicted", stratum=f"type={label}"))
            continue
        lo, hi = est._interval(boot["per_label_f1"][:, j])
        out.append(MetricValue(f"type_{setting}f1", float(f), n, None, lo, hi, f"type={label}"))
    return out


def score_segments(truths: Sequence[ReviewTruth], copies: Mapping[str, ReviewCopy], outputs: Mapping[str, Output],
                   reviewer_of: Mapping[str, str], *, unanswered: Unanswered = "exclude",
                   n_resamples: int = N_INTERVAL, seed: int = 0, confidence: float = 0.95) -> ReviewScores:  # fmt: skip
    """ReviewCritique track: deficient-segment detection scored with the Task 1 metrics at segment
    level (`segment_{accuracy,...,mcc}`), in strata "all", "reviewer=<LLM reviewer>" (from
    `reviewer_of[review_id]`) and "error_type=<type>". An error-type stratum holds the deficient
    segments of that type and every non-deficient segment (the shared negatives), so its recall is
    the type's detection rate and its precision is against the same false alarms."""
    papers = sorted({t.paper_id for t in truths})
    pidx = {p: i for i, p in enumerate(papers)}
    strata: dict[str, np.ndarray] = {}
    errored: Counter[str] = Counter()
    skipped = 0

    def add(stratum: str, p: int, gold: bool, pred: bool) -> None:
        strata.setdefault(stratum, np.zeros((len(papers), 4)))[p] += _confusion(gold, pred)

    error_types = sorted({t for truth in truths for i, t in truth.sentence_types.items()
                          if truth.sentence_labels.get(i)})  # fmt: skip
    for truth in truths:
        copy = copies[truth.review_id]
        p = pidx[truth.paper_id]
        pred = prediction_of(outputs.get(truth.review_id))
        if isinstance(pred, str):
            errored[pred] += 1
            if unanswered == "exclude":
                continue
            pred = ReviewPrediction(None)
        if pred.sentence_labels is None and unanswered == "exclude":
            skipped += 1
            continue
        said = pred.sentence_labels or {}
        reviewer = reviewer_of.get(truth.review_id, "unknown")
        for i, gold in gold_sentence_labels(truth, copy).items():
            flagged = bool(said.get(i, False))
            add("all", p, gold, flagged)
            add(f"reviewer={reviewer}", p, gold, flagged)
            for t in error_types:
                if not gold or truth.sentence_types.get(i) == t:
                    add(f"error_type={t}", p, gold, flagged)
    est = _Estimator(len(papers), n_resamples, seed, confidence)
    metrics: list[MetricValue] = []
    for stratum in sorted(strata, key=lambda s: (s != "all", s)):
        metrics += est.binary(strata[stratum], "segment", stratum)
    coverage = {"reviews": len(truths), "papers": len(papers), "errored": dict(errored),
                "unanswered": {"sentence": skipped}, "policy": unanswered}  # fmt: skip
    return ReviewScores(metrics, coverage)
