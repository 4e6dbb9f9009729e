"""The CiteIntegrity audit's experiments (reference 003) on a built suite, as plain data.

Everything runs on one frozen index of the suite's retained records and one feature matrix:
every instance is exported to BibTeX fields (`exported_fields`, what verifiers read), read back
through `CitationFields`, and scored against the paper's shared candidate (exact DOI lookup with
no title fallback; without a DOI the highest SequenceMatcher title similarity, ties to the smaller
record id). The title search is exact but fast: rapidfuzz's Indel similarity is an upper bound of
SequenceMatcher's ratio (its matching blocks are a common subsequence), so candidates are visited
in decreasing Indel order and the scan stops once that bound falls below the best ratio found.

Analyses (paper section in brackets): primary test metrics with pair-bootstrap intervals and
paired differences [Table 3], per-variant accuracy [Table 4], corruption-family transfer
[Table 5], score extrema and margins [Table 6], 30 alternative partitions [Table 7], 1,000
Dirichlet weight vectors, title-deletion stress [Table 8], reference omission and suffixed DOIs,
the sufficient separation condition (epsilon, delta_t, delta_a, beta_w), pair title-similarity
statistics and the stratum composition [Table 1]. `run_audit` returns one JSON-able dict; the
report is rendered by `scoring.citations.citeintegrity_report`.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from difflib import SequenceMatcher

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import Indel

from clients.bib_record import Author, BibRecord
from corpora.citations.citeintegrity_suite import (
    Suite,
    SuiteConfig,
    audit_suite,
    build_suite,
    exported_fields,
    split_pairs,
)
from corpora.citations.normalization import CitationFields, normalize_text
from verifiers.citations.citeintegrity_rules import (
    RULES,
    SCORED_RULES,
    WEIGHTS,
    Calibration,
    features,
    fit_logistic,
    rule_score,
    select_threshold,
)

STRONG_RULES = ("equal_weights", "weighted", "minimum_field", "logistic")
PARTITION_SEEDS = tuple(range(20261001, 20261031))
WEIGHT_SEED = 20261031
STRESS_SEED = 20261101
BUDGETS = (1, 2, 4, 8, 16)
DOI_SUFFIX = "-citeintegrity-suffix"
WITHHELD = ("title_substitution", "composite_splice")
TITLE_NEGATIVES = ("doi_swap", "title_substitution", "composite_splice")


class SuiteIndex:
    """The frozen reference collection: the suite's records, by DOI and by normalized title."""

    def __init__(self, suite: Suite) -> None:
        self.ids = sorted(suite.records)
        self.records = {rid: BibRecord("suite", c.title, tuple(Author(a) for a in c.authors), c.year, c.venue, c.doi)
                        for rid, c in suite.records.items()}
        self.by_doi = {(c.doi or "").lower(): rid for rid, c in suite.records.items()}
        self.norm_titles = [normalize_text(suite.records[rid].title) for rid in self.ids]

    def best_title(self, title: str | None, exclude: str | None = None) -> tuple[str | None, float]:
        """(record id, similarity) of the highest SequenceMatcher title match; ties: smaller id."""
        query = normalize_text(title)
        if not query:
            return None, 0.0
        bounds = process.cdist([query], self.norm_titles, scorer=Indel.normalized_similarity)[0]
        best_id, best = None, -1.0
        for k in np.argsort(-bounds, kind="stable"):
            if bounds[k] < best - 1e-12:
                break
            rid = self.ids[k]
            if rid == exclude:
                continue
            score = 1.0 if query == self.norm_titles[k] else SequenceMatcher(None, query, self.norm_titles[k], autojunk=False).ratio()
            if score > best or (score == best and best_id is not None and rid < best_id):
                best_id, best = rid, score
        return best_id, max(best, 0.0)

    def candidate(self, cited: CitationFields, exclude: str | None = None) -> tuple[str | None, bool]:
        """(candidate id, DOI in index) by the paper's rule: an explicit DOI is looked up exactly."""
        if cited.doi:
            rid = self.by_doi.get(cited.doi.lower())
            return (None if rid == exclude else rid), rid is not None
        return self.best_title(cited.title, exclude)[0], False


@dataclass
class FeatureTable:
    """One row per instance: features against the shared candidate and the instance's bookkeeping."""

    x: np.ndarray
    z: np.ndarray
    doi_in: np.ndarray
    correct: np.ndarray
    variant: np.ndarray
    pair: np.ndarray
    stratum: np.ndarray
    partition: np.ndarray


def feature_table(suite: Suite, index: SuiteIndex) -> FeatureTable:
    rows, doi_in, correct = [], [], []
    for inst in suite.instances:
        cited = CitationFields.from_bibtex_fields(exported_fields(inst.citation))
        rid, in_index = index.candidate(cited)
        rows.append(features(cited, index.records[rid]) if rid else (np.nan,) * 4)
        doi_in.append(in_index)
        correct.append(rid == inst.source_id)
    return FeatureTable(
        np.array(rows, dtype=float), np.array([i.z for i in suite.instances]), np.array(doi_in), np.array(correct),
        np.array([i.variant for i in suite.instances]), np.array([i.pair_id for i in suite.instances]),
        np.array([i.stratum for i in suite.instances]), np.array([i.partition for i in suite.instances]),
    )


# ---- scoring helpers ------------------------------------------------------------------------------


def scores(rule: str, t: FeatureTable, logistic: tuple[Sequence[float], float] | None) -> np.ndarray:
    """`rule_score` over every row at once (rows without a candidate score 0); calibration and
    testing both use this, so a threshold and the scores it is compared with are computed alike."""
    if rule == "doi_membership":
        return t.doi_in.astype(float)
    ok = ~np.isnan(t.x).any(axis=1)
    x = np.where(ok[:, None], t.x, 0.0)
    if rule == "normalized_exact":
        s = (x == 1.0).all(axis=1).astype(float)
    elif rule == "title_only":
        s = x[:, 0]
    elif rule == "equal_weights":
        s = x.mean(axis=1)
    elif rule == "weighted":
        s = _linear(x, WEIGHTS)
    elif rule == "minimum_field":
        s = x.min(axis=1)
    elif rule == "logistic":
        if logistic is None:
            raise ValueError("the logistic rule needs fitted coefficients")
        s = 1.0 / (1.0 + np.exp(-(_linear(x, logistic[0]) + logistic[1])))
    else:
        return np.array([rule_score(rule, None, False)])  # raises the unknown-rule error
    return np.where(ok, s, 0.0)


def _linear(x: np.ndarray, w: Sequence[float]) -> np.ndarray:
    """w . x row by row, summed left to right elementwise: the same bits for a row whatever the
    batch (a BLAS product may sum in another order), so a query scored alone compares with a
    threshold taken from a batch exactly (titles tie at rational similarities such as 12/13)."""
    out = np.zeros(len(x))
    for j, wj in enumerate(w):
        out = out + float(wj) * x[:, j]
    return out


def score_rows(rule: str, rows: Sequence[Sequence[float]], logistic: tuple[Sequence[float], float] | None) -> np.ndarray:
    """`scores` for bare feature rows (stress and omission queries)."""
    x = np.asarray(rows, dtype=float).reshape(-1, 4)
    n = len(x)
    empty = np.array([""] * n)
    return scores(rule, FeatureTable(x, np.zeros(n, int), np.zeros(n, bool), np.zeros(n, bool), empty, empty, empty,
                                     empty), logistic)


def confusion(accept: np.ndarray, z: np.ndarray) -> tuple[int, int, int, int]:
    tp = int((accept & (z == 1)).sum())
    fp = int((accept & (z == 0)).sum())
    fn = int((~accept & (z == 1)).sum())
    return tp, fp, fn, int((~accept & (z == 0)).sum())


def f1_of(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def auroc(s: np.ndarray, z: np.ndarray) -> float:
    pos, neg = s[z == 1], s[z == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    order = np.sort(neg)
    greater = np.searchsorted(order, pos, side="left").sum()
    ties = (np.searchsorted(order, pos, side="right") - np.searchsorted(order, pos, side="left")).sum()
    return float((greater + 0.5 * ties) / (len(pos) * len(neg)))


def _calibrate(t: FeatureTable, partition: np.ndarray, keep: np.ndarray | None = None) -> Calibration:
    """`citeintegrity_rules.calibrate`, vectorized: logistic fit on training rows with a candidate,
    every scored rule's threshold selected on validation."""
    keep = np.ones(len(t.z), bool) if keep is None else keep
    tr, va = (partition == "train") & keep, (partition == "validation") & keep
    ok = tr & ~np.isnan(t.x).any(axis=1)
    coef, intercept = fit_logistic(t.x[ok], t.z[ok])
    thresholds = {"doi_membership": 0.5, "normalized_exact": 0.5}
    for rule in SCORED_RULES:
        thresholds[rule] = select_threshold(scores(rule, t, (coef, intercept))[va], t.z[va])
    return Calibration(thresholds, coef, intercept)


def _rule_scores(t: FeatureTable, cal: Calibration) -> dict[str, np.ndarray]:
    logistic = (cal.logistic_coef, cal.logistic_intercept)
    return {rule: scores(rule, t, logistic) for rule in RULES}


# ---- analyses -----------------------------------------------------------------------------------


def primary(t: FeatureTable, bootstrap: int = 2000, seed: int = 20260921) -> dict:
    """Tables 3, 4 and 6 plus pair-bootstrap intervals of F1 and paired differences."""
    cal = _calibrate(t, t.partition)
    s = _rule_scores(t, cal)
    test = t.partition == "test"
    z = t.z[test]
    out: dict = {"thresholds": cal.thresholds, "logistic_coef": cal.logistic_coef,
                 "logistic_intercept": cal.logistic_intercept, "rules": {}, "per_variant": {}}
    accepts = {rule: s[rule][test] >= cal.thresholds[rule] for rule in RULES}
    for rule in RULES:
        ts, acc = s[rule][test], accepts[rule]
        tp, fp, fn, tn = confusion(acc, z)
        out["rules"][rule] = {
            "threshold": cal.thresholds[rule], "precision": tp / (tp + fp) if tp + fp else float("nan"),
            "recall": tp / (tp + fn) if tp + fn else float("nan"), "f1": f1_of(tp, fp, fn),
            "far": fp / max(1, fp + tn), "auroc": auroc(ts, z), "false_accepts": fp, "false_rejects": fn,
            "min_acceptable": float(ts[z == 1].min()), "max_inconsistent": float(ts[z == 0].max()),
            "margin": float(ts[z == 1].min() - ts[z == 0].max()),
        }
    for variant in dict.fromkeys(t.variant[test]):
        m = t.variant[test] == variant
        out["per_variant"][variant] = {rule: float((accepts[rule][m] == (z[m] == 1)).mean()) for rule in RULES}
    # stratified pair bootstrap: whole test pairs resampled with replacement within each stratum
    pairs_by_stratum: dict[str, list[str]] = defaultdict(list)
    for p, st in sorted(set(zip(t.pair[test], t.stratum[test], strict=True))):
        pairs_by_stratum[st].append(p)
    rows_of = defaultdict(list)
    for k, p in enumerate(t.pair[test]):
        rows_of[p].append(k)
    per_pair = {rule: {p: confusion(accepts[rule][ix], z[ix])[:3] for p, ix in rows_of.items()} for rule in RULES}
    rng = np.random.default_rng(seed)
    draws = {rule: [] for rule in RULES}
    for _ in range(bootstrap):
        chosen = [p for ps in pairs_by_stratum.values() for p in (ps[i] for i in rng.integers(0, len(ps), len(ps)))]
        for rule in RULES:
            tp, fp, fn = np.sum([per_pair[rule][p] for p in chosen], axis=0)
            draws[rule].append(f1_of(int(tp), int(fp), int(fn)))
    for rule in RULES:
        out["rules"][rule]["f1_ci"] = ([float(np.percentile(draws[rule], 2.5)), float(np.percentile(draws[rule], 97.5))]
                                       if bootstrap else None)
    diffs = {}
    for i, a in enumerate(STRONG_RULES):
        for b in STRONG_RULES[i + 1:]:
            d = np.array(draws[a]) - np.array(draws[b])
            diffs[f"{a} - {b}"] = [float(np.percentile(d, 2.5)), float(np.percentile(d, 97.5))] if bootstrap else None
    out["paired_differences"] = diffs
    out["bootstrap"] = {"replicates": bootstrap, "test_pairs": sum(map(len, pairs_by_stratum.values()))}
    out["test_instances"] = int(test.sum())
    out["test_sources"] = int(test.sum() // 10)
    out["calibration"] = cal
    return out


def family_transfer(t: FeatureTable) -> dict:
    """Table 5: calibrate without both title-substitution families; test the acceptable variants and
    the two withheld families of the held-out pairs."""
    keep = ~np.isin(t.variant, WITHHELD)
    cal = _calibrate(t, t.partition, keep)
    s = _rule_scores(t, cal)
    test = (t.partition == "test") & ((t.z == 1) | np.isin(t.variant, WITHHELD))
    out = {}
    for rule in RULES:
        acc = s[rule][test] >= cal.thresholds[rule]
        z = t.z[test]
        tp, fp, fn, _ = confusion(acc, z)
        out[rule] = {"threshold": cal.thresholds[rule], "f1": f1_of(tp, fp, fn),
                     "acceptable_recall": tp / max(1, tp + fn), "withheld_acceptance": fp / max(1, int((z == 0).sum()))}
    return {"rules": out, "test_instances": int(test.sum())}


def partitions(t: FeatureTable, suite: Suite, seeds: Sequence[int] = PARTITION_SEEDS) -> dict:
    """Table 7: re-split the pairs with each seed, refit and reselect, record test F1 per rule."""
    raw = [(p.stratum, p.first, p.second, p.title_similarity) for p in suite.pairs]
    runs = []
    for seed in seeds:
        assignment = {p.pair_id: p.partition for p in split_pairs(raw, replace(suite.config, seed=seed))}
        part = np.array([assignment[p] for p in t.pair])
        cal = _calibrate(t, part)
        s = _rule_scores(t, cal)
        test = part == "test"
        run = {"seed": seed}
        for rule in RULES:
            tp, fp, fn, _ = confusion(s[rule][test] >= cal.thresholds[rule], t.z[test])
            run[rule] = {"f1": f1_of(tp, fp, fn), "false_accepts": fp, "false_rejects": fn}
        runs.append(run)
    summary = {}
    for rule in RULES:
        f1s = [r[rule]["f1"] for r in runs]
        summary[rule] = {"perfect": sum(r[rule]["false_accepts"] == r[rule]["false_rejects"] == 0 for r in runs),
                         "runs": len(runs), "min_f1": min(f1s), "median_f1": float(np.median(f1s)), "max_f1": max(f1s),
                         "max_false_rejects": max(r[rule]["false_rejects"] for r in runs),
                         "max_false_accepts": max(r[rule]["false_accepts"] for r in runs)}
    return {"summary": summary, "runs": runs}


def weight_vectors(t: FeatureTable, n: int = 1000, seed: int = WEIGHT_SEED) -> dict:
    """1,000 Dirichlet(1,1,1,1) weight vectors, each with a validation-selected threshold."""
    ok = ~np.isnan(t.x).any(axis=1)
    x = np.where(ok[:, None], t.x, 0.0)
    val, test = t.partition == "validation", t.partition == "test"
    w_all = np.random.default_rng(seed).dirichlet(np.ones(4), size=n)
    perfect = gap = 0
    f1s = []
    for w in w_all:
        s = np.where(ok, x @ w, 0.0)
        thr = select_threshold(s[val], t.z[val])
        tp, fp, fn, _ = confusion(s[test] >= thr, t.z[test])
        f1s.append(f1_of(tp, fp, fn))
        perfect += fp == fn == 0
        zt = t.z[test]
        gap += s[test][zt == 1].min() > s[test][zt == 0].max()
    return {"vectors": n, "seed": seed, "perfect": int(perfect), "positive_gap": int(gap),
            "min_f1": float(min(f1s)), "max_f1": float(max(f1s))}


def delete_budget(title: str, budget: int, source_id: str) -> str:
    """Delete `budget` alphabetic characters of the normalized title at positions from a list
    shuffled with seed 20261101 + the source's id (its hash for a non-numeric id); budgets are
    nested; one letter always stays."""
    norm = normalize_text(title)
    letters = [i for i, c in enumerate(norm) if c.isalpha()]
    ident = int(source_id) if source_id.isdigit() else int(hashlib.sha256(source_id.encode()).hexdigest()[:8], 16)
    rng = random.Random(STRESS_SEED + ident)
    rng.shuffle(letters)
    drop = set(letters[: min(budget, len(letters) - 1)])
    return "".join(c for i, c in enumerate(norm) if i not in drop)


def stress(suite: Suite, index: SuiteIndex, cal) -> list[dict]:  # noqa: ANN001
    """Table 8: DOI-free degraded-title queries of the held-out sources, frozen thresholds."""
    logistic = (cal.logistic_coef, cal.logistic_intercept)
    sources = sorted({i.source_id for i in suite.instances if i.partition == "test"})
    out = []
    for budget in BUDGETS:
        retrieved = 0
        right: Counter = Counter()
        wrong: Counter = Counter()
        for sid in sources:
            rec = suite.records[sid]
            cited = CitationFields(None, delete_budget(rec.title, budget, sid), rec.authors, rec.year, rec.venue, False)
            rid, _ = index.best_title(cited.title)
            if rid is None:
                continue
            retrieved += rid == sid
            f = features(cited, index.records[rid])
            for rule in STRONG_RULES:
                if score_rows(rule, [f], logistic)[0] >= cal.thresholds[rule]:
                    (right if rid == sid else wrong)[rule] += 1
        out.append({"budget": budget, "queries": len(sources), "correct_retrieval": retrieved,
                    "accepted_correct": {r: right[r] for r in STRONG_RULES},
                    "accepted_wrong": {r: wrong[r] for r in STRONG_RULES}})
    return out


def omission(suite: Suite, index: SuiteIndex, t: FeatureTable, cal) -> dict:  # noqa: ANN001
    """Retrieval of DOI-free test instances with and without their source in the index."""
    queries = retrieved = accepted = 0
    for k, inst in enumerate(suite.instances):
        if inst.partition != "test" or inst.variant not in ("doi_omitted", "title_typo"):
            continue
        queries += 1
        retrieved += bool(t.correct[k])
        cited = CitationFields.from_bibtex_fields(exported_fields(inst.citation))
        rid, _ = index.best_title(cited.title, exclude=inst.source_id)
        if rid is not None:
            accepted += score_rows("weighted", [features(cited, index.records[rid])], None)[0] >= cal.thresholds["weighted"]
    suffixed = sum(f"{(c.doi or '').lower()}{DOI_SUFFIX}" not in index.by_doi for c in suite.records.values())
    return {"queries": queries, "correct_retrieval_full_index": retrieved, "weighted_accepts_substitute": int(accepted),
            "suffixed_dois": len(suite.records), "suffixed_unresolved": suffixed}


def sufficient_condition(t: FeatureTable, weights: Sequence[float] = tuple(WEIGHTS)) -> dict:
    """Eq. (5)-(6) on the test features: epsilon, delta_t, delta_a, whether year shifts have s_y = 0,
    whether acceptable rows have s_a = s_y = s_v = 1, beta_w and the condition w_t eps < beta_w."""
    test = (t.partition == "test") & ~np.isnan(t.x).any(axis=1)
    acc = test & (t.z == 1)
    x = t.x
    eps = float((1 - x[acc, 0]).max())
    delta_t = float((1 - x[test & np.isin(t.variant, TITLE_NEGATIVES), 0]).min())
    delta_a = float((1 - x[test & (t.variant == "author_swap"), 1]).min())
    w_t, w_a, w_y, _ = (float(w) for w in weights)
    beta = min(w_t * delta_t, w_a * delta_a, w_y)
    return {"epsilon": eps, "delta_t": delta_t, "delta_a": delta_a, "beta_w": beta,
            "weighted_acceptable_deficit_bound": w_t * eps, "holds": w_t * eps < beta,
            "acceptable_other_fields_one": bool((x[acc, 1:] == 1).all()),
            "year_shift_year_zero": bool((x[test & (t.variant == "year_shift"), 2] == 0).all()),
            "minimum_field_holds": eps < min(delta_t, delta_a, 1.0)}


def pair_similarity(suite: Suite) -> dict:
    sims = np.array([p.title_similarity for p in suite.pairs])
    if not len(sims):
        return {"pairs": 0}
    closest = max(suite.pairs, key=lambda p: p.title_similarity)
    return {"pairs": len(sims), "median": float(np.median(sims)), "q1": float(np.percentile(sims, 25)),
            "q3": float(np.percentile(sims, 75)), "max": float(sims.max()),
            "closest_pair": closest.pair_id, "closest_partition": closest.partition}


def composition(suite: Suite) -> list[dict]:
    """Table 1: records, venues, the largest venue and its share per stratum."""
    out = []
    for stratum in sorted(set(suite.strata.values())):
        venues = Counter(suite.records[r].venue for r, s in suite.strata.items() if s == stratum)
        top, count = venues.most_common(1)[0]
        total = sum(venues.values())
        out.append({"stratum": stratum, "records": total, "venues": len(venues), "largest_venue": top,
                    "share": count / total})
    return out


def core(suite: Suite, bootstrap: int = 2000, weights: int = 1000,
         partition_seeds: Sequence[int] = PARTITION_SEEDS) -> dict:
    """Every analysis on one suite; the calibration object is dropped from the result."""
    index = SuiteIndex(suite)
    t = feature_table(suite, index)
    result = {"records": len(suite.records), "pairs": len(suite.pairs), "instances": len(suite.instances),
              "no_candidate": int(np.isnan(t.x).any(axis=1).sum()),
              "excluded": dict(Counter(reason.split(" to ")[0] for _, reason in suite.excluded)),
              "audit": {k: len(v) for k, v in audit_suite(suite).checks.items()},
              "pair_similarity": pair_similarity(suite), "composition": composition(suite)}
    prim = primary(t, bootstrap)
    cal = prim.pop("calibration")
    result["primary"] = prim
    result["family_transfer"] = family_transfer(t)
    result["sufficient_condition"] = sufficient_condition(t)
    result["omission"] = omission(suite, index, t, cal)
    result["stress"] = stress(suite, index, cal)
    if weights:
        result["weights"] = weight_vectors(t, weights)
    if partition_seeds:
        result["partitions"] = partitions(t, suite, partition_seeds)
    return result


def run_audit(records: Sequence, config: SuiteConfig | None = None, bootstrap: int = 2000, weights: int = 1000,
              near_title_ablation: bool = True, partition_seeds: Sequence[int] = PARTITION_SEEDS) -> dict:
    """The whole audit: the primary suite and, optionally, the suite without the near-title cutoff
    (same seeds, its own calibration and the 30 partitions)."""
    config = config or SuiteConfig()
    suite = build_suite(records, config)
    out = {"config": {"seed": config.seed, "near_title_cutoff": config.near_title_cutoff,
                      "year_window": list(config.year_window) if config.year_window else None,
                      "input_records": len(records)},
           "primary_suite": core(suite, bootstrap, weights, partition_seeds)}
    if near_title_ablation and config.near_title_cutoff is not None:
        ablated = build_suite(records, replace(config, near_title_cutoff=None))
        out["near_title_ablation"] = core(ablated, bootstrap=min(bootstrap, 200), weights=0, partition_seeds=partition_seeds)
    return out


__all__ = ["BUDGETS", "PARTITION_SEEDS", "STRONG_RULES", "FeatureTable", "SuiteIndex", "composition", "core",
           "delete_budget", "family_transfer", "feature_table", "omission", "pair_similarity", "partitions",
           "primary", "run_audit", "stress", "sufficient_condition", "weight_vectors"]
