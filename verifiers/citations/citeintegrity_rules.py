"""The seven CiteIntegrity baselines (reference 003) over one shared candidate, as one system family.

Candidate retrieval (§ "Candidate selection"): a populated DOI is looked up exactly, with no title
fallback overriding it; without a DOI the best title match is taken (ties: smaller record id, as
the index orders them). Features x = (s_t, s_a, s_y, s_v) come from `corpora.citations.normalization`. Rules:

    doi_membership    accept iff the DOI is in the source
    normalized_exact  accept iff all four features are 1
    title_only        s_t >= threshold
    equal_weights     mean(x) >= threshold
    weighted          0.46 s_t + 0.24 s_a + 0.18 s_y + 0.12 s_v >= threshold   (MetaCheck heuristic)
    minimum_field     min(x) >= threshold
    logistic          sigmoid(w.x + b) >= threshold, (w, b) fit with L2, C = 1 (scipy L-BFGS)

Thresholds for the five scored rules come from `select_threshold` on a validation split (maximize
acceptable-class F1 over observed scores plus one above the max; ties: fewer false acceptances,
then the higher threshold). The system maps the paper's binary decision onto the three-outcome
policy: no candidate (DOI absent from the source, no title hit, or a DOI-free best title hit below
`min_candidate_title` similarity, i.e. nothing retrieved that could be the cited work) is
UNCERTAIN, never fabricated; a failed lookup is UNCERTAIN with `detail["outage_sources"]`
(`verifiers.citations.source_set.no_evidence`). Benchmarks reproducing the paper's binary scores use the functions.

`doi_membership` as a system can also say HALLUCINATED, where the evidence supports it: the DOI
resolves to another work (title similarity under `min_candidate_title`), or it is absent from a
source that is the authority on DOIs (`authoritative`, default doi_org) or declared `closed_world`.
`paper_binary=True` keeps the paper's "accept iff the DOI is in the source" (a swapped DOI accepted).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clients.bib_record import BibRecord
from clients.source import BibSource
from corpora.citations.normalization import (
    CitationFields,
    author_similarity,
    normalize_text,
    title_similarity,
    venue_similarity,
    year_similarity,
)
from storage.records import Item, Output
from verifiers.citations.entry import CitationEntry
from verifiers.citations.source_set import (
    CountedSource,
    Lookup,
    bind_sources,
    item_failure,
    no_evidence,
    resolve_sources,
)
from verifiers.registry import system
from verifiers.system import RunContext

RULES = ("doi_membership", "normalized_exact", "title_only", "equal_weights", "weighted", "minimum_field", "logistic")
SCORED_RULES = ("title_only", "equal_weights", "weighted", "minimum_field", "logistic")
WEIGHTS = np.array([0.46, 0.24, 0.18, 0.12])
FEATURES = ("title", "authors", "year", "venue")


@dataclass(frozen=True)
class Candidate:
    """The shared candidate of one citation and its four features (None when no candidate)."""

    record: BibRecord | None
    features: tuple[float, float, float, float] | None
    doi_in_source: bool
    lookups: list[Lookup] = field(default_factory=list)


def features(cited: CitationFields, record: BibRecord) -> tuple[float, float, float, float]:
    """(s_t, s_a, s_y, s_v) of a citation against a candidate record."""
    return (
        title_similarity(cited.title, record.title),
        author_similarity(cited.authors, [a.family for a in record.authors], cited.truncated),
        year_similarity(cited.year, record.year),
        # a citation without a venue makes no venue claim to contradict (the paper's inputs always have one)
        venue_similarity(cited.venue, record.venue) if normalize_text(cited.venue) else 1.0,
    )


async def retrieve(cited: CitationFields, source: CountedSource) -> Candidate:
    """The paper's candidate selection against one source."""
    if cited.doi:
        lookup = await source.doi(cited.doi)
        record = lookup.records[0] if lookup.status == "found" else None
        return Candidate(record, features(cited, record) if record else None, record is not None, [lookup])
    if not cited.title:
        return Candidate(None, None, False)
    lookup = await source.title(cited.title, limit=1)
    record = lookup.records[0] if lookup.status == "found" else None
    return Candidate(record, features(cited, record) if record else None, False, [lookup])


def rule_score(rule: str, x: Sequence[float] | None, doi_in_source: bool = False,
               logistic: tuple[Sequence[float], float] | None = None) -> float:
    """Score of `rule` for feature vector x (0 when there is no candidate)."""
    if rule == "doi_membership":
        return 1.0 if doi_in_source else 0.0
    if x is None:
        return 0.0
    v = np.asarray(x, dtype=float)
    if rule == "normalized_exact":
        return 1.0 if bool(np.all(v == 1.0)) else 0.0
    if rule == "title_only":
        return float(v[0])
    if rule == "equal_weights":
        return float(v.mean())
    if rule == "weighted":
        return float(WEIGHTS @ v)
    if rule == "minimum_field":
        return float(v.min())
    if rule == "logistic":
        if logistic is None:
            raise ValueError("the logistic rule needs fitted coefficients (fit_logistic / calibration)")
        w, b = logistic
        return float(1.0 / (1.0 + np.exp(-(np.asarray(w) @ v + b))))
    raise ValueError(f"unknown rule {rule!r}; known: {', '.join(RULES)}")


def select_threshold(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Threshold maximizing acceptable-class F1 (accept iff score >= t) over observed scores plus one
    above the max; ties favour fewer false acceptances, then the higher threshold. Vectorized (the
    1,000-weight-vector and 30-partition analyses call it thousands of times)."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=int)
    if not len(s):
        return 0.5
    grid = np.unique(np.concatenate([s, [s.max() + 1e-6]]))
    pos, neg = np.sort(s[y == 1]), np.sort(s[y == 0])
    tp = len(pos) - np.searchsorted(pos, grid, side="left")
    fp = len(neg) - np.searchsorted(neg, grid, side="left")
    fn = len(pos) - tp
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = np.where(tp > 0, 2 * tp / (2 * tp + fp + fn), 0.0)
    best = np.lexsort((grid, -fp, f1))[-1]  # last key is primary: f1, then fewer fp, then higher t
    return float(grid[best])


def fit_logistic(x: np.ndarray, y: np.ndarray, c: float = 1.0) -> tuple[list[float], float]:
    """L2-regularized logistic regression (sklearn's objective: C * sum log-loss + 0.5 |w|^2, the
    intercept unpenalized), solved with scipy's L-BFGS-B."""
    from scipy.optimize import minimize

    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    sign = 2 * y - 1

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        margin = sign * (x @ w + b)
        loss = np.logaddexp(0.0, -margin)
        grad_m = -sign * 0.5 * (1 - np.tanh(margin / 2))  # d loss / d z, numerically stable sigmoid(-margin)
        grad_w = c * (x.T @ grad_m) + w
        grad_b = c * grad_m.sum()
        return float(c * loss.sum() + 0.5 * w @ w), np.concatenate([grad_w, [grad_b]])

    result = minimize(objective, np.zeros(x.shape[1] + 1), jac=True, method="L-BFGS-B")
    return [float(v) for v in result.x[:-1]], float(result.x[-1])


@dataclass
class Calibration:
    """Thresholds chosen on validation and the logistic model fit on training features."""

    thresholds: dict[str, float]
    logistic_coef: list[float]
    logistic_intercept: float

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=2, sort_keys=True))

    @classmethod
    def load(cls, path: str | Path) -> Calibration:
        return cls(**json.loads(Path(path).read_text()))


def calibrate(train_x: np.ndarray, train_y: np.ndarray, val_x: np.ndarray, val_y: np.ndarray,
              val_doi: Sequence[bool] | None = None) -> Calibration:
    """Fit the logistic rule on training rows and pick every scored rule's threshold on validation.
    Rows without a candidate carry NaN features and score 0 under every rule."""
    train_x = np.asarray(train_x, dtype=float)
    ok = ~np.isnan(train_x).any(axis=1)
    coef, intercept = fit_logistic(train_x[ok], np.asarray(train_y)[ok])
    thresholds = {"doi_membership": 0.5, "normalized_exact": 0.5}
    for rule in SCORED_RULES:
        scores = [rule_score(rule, None if np.isnan(row).any() else row, logistic=(coef, intercept)) for row in val_x]
        thresholds[rule] = select_threshold(scores, val_y)
    return Calibration(thresholds, coef, intercept)


def _predicted_type(x: Sequence[float]) -> str | None:
    worst = int(np.argmin(x))
    if x[worst] >= 1.0:
        return None
    return {0: "near_miss_title" if x[0] >= 0.8 else "chimeric_title", 1: "swapped_authors", 2: None,
            3: "wrong_venue"}[worst]


class CiteIntegrityRule:
    """One of the seven rules as a system: VALID (accepted), HALLUCINATED (candidate contradicts),
    UNCERTAIN (no candidate to compare with)."""

    def __init__(self, rule: str, sources: Sequence[BibSource], threshold: float | None = None,
                 logistic: tuple[Sequence[float], float] | None = None, max_concurrency: int = 8,
                 min_candidate_title: float = 0.75, authoritative: Sequence[str] = ("doi_org",),
                 closed_world: bool = False, paper_binary: bool = False) -> None:
        if rule not in RULES:
            raise ValueError(f"unknown rule {rule!r}; known: {', '.join(RULES)}")
        if threshold is None and rule in SCORED_RULES:
            raise ValueError(f"rule {rule!r} needs a validation-selected threshold (or calibration_path)")
        if rule == "logistic" and logistic is None:
            raise ValueError("rule 'logistic' needs logistic_coef and logistic_intercept (or calibration_path)")
        self.name = f"citeintegrity_{rule}"
        self.rule = rule
        self.source = self.configured_source = sources[0]
        self.threshold = 0.5 if threshold is None else threshold
        self.logistic = logistic
        self.max_concurrency = max_concurrency
        self.min_candidate_title = min_candidate_title
        self.authoritative, self.closed_world, self.paper_binary = set(authoritative), closed_world, paper_binary

    def _doi_evidence(self, item_id: str, cited: CitationFields, record: BibRecord | None, source: str,
                      **common: Any) -> Output | None:
        """doi_membership's HALLUCINATED cases: a DOI that does not exist, or resolves to another work."""
        if self.paper_binary or not cited.doi:
            return None
        if record is None and (self.closed_world or source in self.authoritative):
            return Output(item_id, "HALLUCINATED", 0.8, f"DOI {cited.doi} does not exist at {source}",
                          predicted_type="fabricated_doi", subtests={"doi_resolves": False}, **common)
        if record is not None and record.title and cited.title:
            similarity = title_similarity(cited.title, record.title)
            short, full = sorted((normalize_text(cited.title), normalize_text(record.title)), key=len)
            if similarity < self.min_candidate_title and not full.startswith(short + " "):  # not a main title only
                return Output(item_id, "HALLUCINATED", 0.8,
                              f"DOI {cited.doi} resolves to another work: {record.title!r} (title similarity "
                              f"{similarity:.2f})", predicted_type="hybrid_fabrication",
                              subtests={"doi_resolves": True}, **common)
        return None

    async def _one(self, item: Item, limit: asyncio.Semaphore) -> Output:
        if item.load_error:
            return Output.failed(item.item_id, item.load_error, "input")
        cited = CitationFields.from_bibtex_fields(CitationEntry.from_item(item).fields)
        counted = CountedSource(self.source)
        async with limit:
            candidate = await retrieve(cited, counted)
        common: dict[str, Any] = {"api_sources_queried": [counted.name], "api_calls": counted.calls}
        if any(lk.status == "error" for lk in candidate.lookups):
            return no_evidence(item.item_id, candidate.lookups, 0.5, **common,
                               detail={"lookups": [lk.summary() for lk in candidate.lookups]})
        score = rule_score(self.rule, candidate.features, candidate.doi_in_source, self.logistic)
        record = candidate.record
        detail = {
            "rule": self.rule, "score": score, "threshold": self.threshold,
            "features": dict(zip(FEATURES, candidate.features, strict=True)) if candidate.features else None,
            "candidate": None if record is None else {"title": record.title, "doi": record.doi, **record.raw},
        }
        subtests = {"doi_resolves": candidate.doi_in_source if cited.doi else None}
        if self.rule == "doi_membership":
            decided = self._doi_evidence(item.item_id, cited, record, counted.name, detail=detail, **common)
            if decided is not None:
                return decided
        weak = not cited.doi and candidate.features is not None and candidate.features[0] < self.min_candidate_title
        if record is None or weak or (self.rule == "doi_membership" and not cited.doi):
            reason = (f"DOI {cited.doi} not in {counted.name}" if cited.doi else
                      "no DOI supplied" if self.rule == "doi_membership" else
                      f"best title candidate below {self.min_candidate_title} similarity" if weak else
                      "no title candidate retrieved")
            return Output(item.item_id, "UNCERTAIN", 0.5, f"insufficient evidence: {reason}", subtests=subtests,
                          detail=detail, **common)
        accept = score >= self.threshold
        margin = abs(score - self.threshold)
        confidence = (score if accept else 1 - score) if self.rule == "logistic" else 0.5 + 0.45 * min(1.0, margin / 0.05)
        if self.rule in ("doi_membership", "normalized_exact"):
            confidence = 0.8
        confidence = min(max(confidence, 0.5), 1.0)
        if accept:
            return Output(item.item_id, "VALID", confidence, f"{self.rule} score {score:.4f} >= {self.threshold:.4f}",
                          subtests=subtests, detail=detail, **common)
        return Output(item.item_id, "HALLUCINATED", confidence,
                      f"{self.rule} score {score:.4f} < {self.threshold:.4f} against {record.doi or record.title!r}",
                      predicted_type=_predicted_type(candidate.features) if candidate.features else None,
                      subtests=subtests, detail=detail, **common)

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        self.source = bind_sources([self.configured_source], ctx)[0]  # the run's limiter, cache and guard
        limit = asyncio.Semaphore(self.max_concurrency)
        return list(await asyncio.gather(*(item_failure(i.item_id, self._one(i, limit)) for i in items)))


@system("citeintegrity", accepts=("citation",), description="CiteIntegrity's seven baselines (rule=...) over one shared candidate",
        runtime_args=("max_concurrency", "client_options"))
def build_citeintegrity(rule: str = "weighted", sources: Sequence[str | BibSource] = ("offline_index",),
                        index_path: str | None = None, threshold: float | None = None,
                        logistic_coef: Sequence[float] | None = None, logistic_intercept: float | None = None,
                        calibration_path: str | None = None, client_options: dict[str, Any] | None = None,
                        max_concurrency: int = 8, min_candidate_title: float = 0.75,
                        authoritative: Sequence[str] = ("doi_org",), closed_world: bool = False,
                        paper_binary: bool = False) -> CiteIntegrityRule:
    """One CiteIntegrity rule. Runtime arguments (recorded, not in run identity): `max_concurrency`,
    `client_options` (timeouts, retries, `base_urls`); everything else changes answers."""
    logistic = (list(logistic_coef), float(logistic_intercept or 0.0)) if logistic_coef is not None else None
    if calibration_path:
        calibration = Calibration.load(calibration_path)
        threshold = calibration.thresholds.get(rule) if threshold is None else threshold
        logistic = logistic or (calibration.logistic_coef, calibration.logistic_intercept)
    resolved = resolve_sources(sources, index_path, client_options)
    return CiteIntegrityRule(rule, resolved, threshold, logistic, max_concurrency, min_candidate_title,
                             authoritative, closed_world, paper_binary)
