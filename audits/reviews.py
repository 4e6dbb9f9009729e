"""The review-hallucination audit (HalluPeer, reference 004): detectors over peer reviews.

Corpus (`[reviews]` in the run config): review files ingested by corpora/reviews/ingest.py, then
either the injected track (1 clean + `copies` seeded injected copies per review, HalluPeer §4;
Tasks 1-3) or the natural track (the reviews with their own labels, ReviewCritique's deficient
segments; scored per LLM reviewer and per error type). Items are of kind `review` (payload =
`ReviewCopy`); the truth table's `extra_json` is the `ReviewTruth` plus the review's `reviewer`
and `track`, so scoring needs nothing but the stored records. Labels are compared at scoring time:
no adjudication. Controls: the registered `review_null` (flags nothing) and `review_flag_all` (flags everything)
systems, named in a config; with either present each figure is judged against them (AUDIT INVALID,
scoring/reviews/validity.py).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import pyarrow as pa
from pydantic import Field, ValidationInfo, field_validator

from audits.base import (
    LEGACY_IDENTITY,
    AuditContext,
    AuditSection,
    ShardedAudit,
    Verdicts,
    config_relative,
    section,
)
from audits.summary import RunSummary, count_outage_answers
from storage.run_publication import (
    AuditValidity,
    Submission,
    close_system_run,
    finish_system_runs,
    publish_report,
    track_system_runs,
)
from storage.schemas import METRIC_SCHEMA, table_from_rows
from storage.store import Store

if TYPE_CHECKING:
    from pathlib import Path

    from clients.lent_services import RunServices
    from cluster.run_config import RunConfig
    from corpora.loaded_corpus import LoadedCorpus
    from corpora.reviews.records import ReviewCopy, ReviewTruth
    from scoring.reviews import ReviewScores
    from storage.records import Output

INJECTED_COLUMNS = ("review_f1", "sentence_f1", "type_macro_f1", "token_f1", "type_oracle_macro_f1",
                    "review_f1_unanswered_as_miss", "sentence_f1_unanswered_as_miss")  # fmt: skip
NATURAL_COLUMNS = ("segment_precision", "segment_recall", "segment_f1", "segment_mcc")
_HEADERS = {"review_f1": "revF1", "sentence_f1": "sentF1", "type_macro_f1": "typeF1", "token_f1": "tokF1",
            "type_oracle_macro_f1": "typeF1or", "review_f1_unanswered_as_miss": "revF1miss",
            "sentence_f1_unanswered_as_miss": "sentF1miss",
            "segment_precision": "segP", "segment_recall": "segR", "segment_f1": "segF1", "segment_mcc": "segMCC"}  # fmt: skip


class ReviewsConfig(AuditSection):
    """`[reviews]`: the review-hallucination audit's corpus and track."""

    path: str | None = Field(None, description="Review file (ReviewCritique, generic JSONL or OpenReview export); relative to the config file")
    truth: str | None = Field(None, description="A corpus built by jobs/build_review_corpus.py: path = its items.jsonl, "
                              "truth = its truth.jsonl (used as built: no injection here); relative to the config file")
    format: Literal["auto", "reviewcritique", "generic", "jsonl", "openreview"] = Field(
        "auto", description="reviewcritique | generic (= jsonl) | openreview | auto (by content)")
    track: Literal["injected", "natural"] = Field(
        "injected", description="injected: 1 clean + `copies` injected copies per review (Tasks 1-3); "
                                "natural: the reviews with their own labels (ReviewCritique segment track)")
    seed: int = Field(0, description="Seed of the injection schedule")
    copies: int = Field(1, ge=0, description="Injected copies per review (injected track)")
    min_injections: int = Field(1, ge=1, description="Fewest injections in an injected copy")
    max_injections: int = Field(2, ge=1, description="Most injections in an injected copy")
    anchors: list[str] | None = Field(None, description="Anchors to inject (default: every anchor some injector can make)")
    injector_model: str | None = Field(None, description="Gateway model for the LLM injector (None: rule injectors only)")
    injector_api_base: str | None = Field(None, description="API base for the injector model")
    unanswered: Literal["exclude", "negative"] = Field(
        "exclude", description="Reviews a detector did not answer: left out of a task's denominator, or counted as negatives")

    @field_validator("path", "truth", mode="before")
    @classmethod
    def _relative_to_the_config(cls, value: Any, info: ValidationInfo) -> Any:
        # "$SCRUTINEER_SHARED_DATA/hallupeer/...": the shared benchmark data wherever it lives
        return config_relative(value, info, expand_vars=True)


def reviews_section(config: RunConfig) -> ReviewsConfig:
    return section(config, "reviews", ReviewsConfig)


@dataclass
class StoredReviewRecords:
    """One run's records as scoring reads them back from the store."""

    copies: dict[str, ReviewCopy]
    truths: list[ReviewTruth]
    reviewer_of: dict[str, str]
    track: str
    outputs: dict[str, Output]


@dataclass
class ScoredReviewRun:
    run: Any  # cluster.run_plan.PlannedRun
    outputs: pa.Table
    score: ReviewScores | None
    metrics: pa.Table
    scores: dict[str, Any]
    """What scores.json holds."""
    first_error: str | None
    outage_items: int
    published: bool


@dataclass
class ReviewAuditScores:
    runs: list[ScoredReviewRun]
    track: str
    allow_incomplete: bool


class ReviewAudit(ShardedAudit):
    name: ClassVar[str] = "reviews"
    corpus_needs_cluster: ClassVar[bool] = False
    sections = {"reviews": ReviewsConfig}
    item_kinds = ("review",)

    def identity(self, config: RunConfig) -> tuple[Any, ...]:
        # the whole section, in the slot it had before the sections moved: the run key is unchanged
        return (*LEGACY_IDENTITY[:2], reviews_section(config).model_dump(mode="json"))

    def build_corpus(self, config: RunConfig, services: RunServices | None) -> LoadedCorpus:
        return build_review_corpus(config)

    def adjudicate(self, ctx: AuditContext) -> Verdicts:
        return {}  # labels and spans are compared by scoring/reviews

    def score(self, ctx: AuditContext, verdicts: Verdicts) -> ReviewAuditScores:
        c = ctx.config
        return score_review_runs(ctx.plan.store, ctx.plan.runs, failed=ctx.failed, bootstrap=c.bootstrap,
                                 unanswered=reviews_section(c).unanswered, allow_incomplete=c.allow_incomplete)  # fmt: skip

    def publish(self, ctx: AuditContext, verdicts: Verdicts, scores: ReviewAuditScores, elapsed_s: float) -> RunSummary:
        return publish_review_runs(ctx.plan.store, ctx.plan.runs, scores, failed=ctx.failed,
                                   tracking_uri=ctx.tracking_uri, experiment=ctx.config.experiment,
                                   work_dir=ctx.work_dir, elapsed_s=elapsed_s, submission=ctx.submission)  # fmt: skip


def build_review_corpus(config: RunConfig) -> LoadedCorpus:
    """The configured review file -> items (kind "review") and truth, on the configured track."""
    from corpora.loaded_corpus import LoadedCorpus, file_version
    from corpora.reviews.corpus_io import corpus_tables
    from corpora.reviews.ingest import load_reviews

    r = reviews_section(config)
    if not r.path:
        raise ValueError("a reviews run needs [reviews] path = \"...\" (a ReviewCritique, generic JSONL or "
                         "OpenReview review file)")  # fmt: skip
    if r.truth:
        return _prebuilt_corpus(config)
    loaded = load_reviews(r.path, "jsonl" if r.format == "generic" else r.format)
    for warning in loaded.warnings:
        print(f"[reviews] warning: {warning}", flush=True)
    if not loaded.reviews:
        raise ValueError(f"{r.path}: no readable review ({len(loaded.errors)} unreadable entries"
                         + (f"; first: {loaded.errors[0]}" if loaded.errors else "") + ")")  # fmt: skip
    reviewer_of = {s.copy.review_id: s.reviewer for s in loaded.reviews}
    if r.track == "natural":
        name = config.corpus.name or "review_natural"
        copies, truths = [s.copy for s in loaded.reviews], [s.truth for s in loaded.reviews]
        version = file_version(_path(r.path))
        print(f"[reviews] natural track: {len(copies)} reviews, "
              f"{sum(sum(t.sentence_labels.values()) for t in truths)} labelled deficient segments", flush=True)
    else:
        name = config.corpus.name or "review_injection"
        corpus = _inject(config, loaded.reviews, name)
        copies, truths, version = corpus.copies, corpus.truths, corpus.version
        counts = corpus.counts.as_dict()["total"]
        print(f"[reviews] injected track (seed {r.seed}): {len(loaded.reviews)} reviews -> {len(copies)} copies, "
              f"{counts['kept']} injections kept of {counts['attempts']} attempts"
              + (f"; anchors unavailable without an LLM: {', '.join(corpus.unavailable_anchors)}"
                 if corpus.unavailable_anchors else ""), flush=True)  # fmt: skip
        for skipped in corpus.skipped:
            print(f"[reviews] {skipped['review_id']}: not emitted: {skipped['reason']}", flush=True)
    items, truth = corpus_tables(copies, truths, name, config.corpus.split, source=r.path)
    # the reviewer and track travel with the truth: scoring reads them from the store, never the file
    base_of = {c.review_id: c.review_id.split("#")[0] for c in copies}
    extra = [json.dumps(json.loads(e) | {"reviewer": reviewer_of.get(base_of[i]), "track": r.track}, ensure_ascii=False)
             for i, e in zip(truth.column("item_id").to_pylist(), truth.column("extra_json").to_pylist(), strict=True)]
    truth = truth.set_column(truth.schema.get_field_index("extra_json"), "extra_json", pa.array(extra, pa.string()))
    return LoadedCorpus(name, version, config.corpus.split, items, truth, list(loaded.errors))


def _prebuilt_corpus(config: RunConfig) -> LoadedCorpus:
    """items.jsonl + truth.jsonl as jobs/build_review_corpus.py writes them, used as they are."""
    import hashlib

    from corpora.loaded_corpus import LoadedCorpus, LoadError
    from corpora.reviews.corpus_io import corpus_tables, read_jsonl

    r = reviews_section(config)
    copies, truth_by_id, errors = read_jsonl(_path(r.path), _path(r.truth))
    missing = [c.review_id for c in copies if c.review_id not in truth_by_id]
    errors += [LoadError(str(r.truth), 0, f"no truth line for review {m}", m) for m in missing]
    copies = [c for c in copies if c.review_id in truth_by_id]
    if not copies:
        raise ValueError(f"{r.path}: no review copy with a truth line in {r.truth}")
    truths = [truth_by_id[c.review_id] for c in copies]
    name = config.corpus.name or _path(r.path).parent.name or "review_corpus"
    version = hashlib.sha256(_path(r.path).read_bytes() + _path(r.truth).read_bytes()).hexdigest()[:12]
    items, truth = corpus_tables(copies, truths, name, config.corpus.split, source=r.path)
    extra = [json.dumps(json.loads(e) | {"track": r.track}, ensure_ascii=False) for e in truth.column("extra_json").to_pylist()]
    truth = truth.set_column(truth.schema.get_field_index("extra_json"), "extra_json", pa.array(extra, pa.string()))
    print(f"[reviews] prebuilt corpus: {len(copies)} copies ({r.track} track) from {r.path}", flush=True)
    return LoadedCorpus(name, version, config.corpus.split, items, truth, errors)


def _path(path: str):
    from pathlib import Path

    return Path(path)


def _inject(config: RunConfig, sources: list, name: str):
    from corpora.reviews.corpus_builder import BuildConfig, ReviewInjectionBuilder
    from corpora.reviews.equivalence import EquivalenceVerifier

    r = reviews_section(config)
    build = BuildConfig(seed=r.seed, injected_copies=r.copies, injections_per_copy=(r.min_injections, r.max_injections),
                        anchors=tuple(r.anchors) if r.anchors else None, llm_model=r.injector_model)  # fmt: skip
    injector = None
    if r.injector_model:
        from clients.llm_gateway import LLMGateway
        from cluster.services_builder import resolve_cache_dir
        from corpora.reviews.llm_injector import LLMInjector

        gateway = LLMGateway(r.injector_model, api_base=r.injector_api_base, cache_dir=resolve_cache_dir(config.llm))
        injector = LLMInjector(gateway, {"seed": r.seed})
    builder = ReviewInjectionBuilder(config=build, llm_injector=injector, verifier=EquivalenceVerifier())
    return builder.build(sources, name)


def read_review_records(store: Store, run_id: str) -> StoredReviewRecords:
    """A run's copies, truths, reviewers and outputs, from its stored items, truth and shards."""
    from corpora.reviews.corpus_io import truth_from_dict
    from corpora.reviews.records import ReviewCopy
    from storage.records import Output

    items = store.read_table(run_id, "items")
    truth = store.read_table(run_id, "truth")
    if items is None or truth is None:
        raise ValueError(f"run {run_id}: items or truth missing in {store.uri}")
    copies = {r["item_id"]: ReviewCopy.from_payload(json.loads(r["payload_json"]))
              for r in items.to_pylist() if r["payload_json"]}  # fmt: skip
    truths, reviewer_of, tracks = [], {}, set()
    for row in truth.to_pylist():
        extra = json.loads(row["extra_json"])
        truths.append(truth_from_dict(extra))
        reviewer_of[row["item_id"]] = extra.get("reviewer") or "unknown"
        tracks.add(extra.get("track") or "injected")
    outputs = {}
    for r in store.read_outputs(run_id).to_pylist():
        outputs[r["item_id"]] = Output(r["item_id"], r["label"], r["confidence"],
                                       detail=json.loads(r["detail_json"]) if r["detail_json"] else None,
                                       error=r["error"], error_kind=r["error_kind"])  # fmt: skip
    return StoredReviewRecords(copies, truths, reviewer_of, tracks.pop() if len(tracks) == 1 else "injected", outputs)


def score_records(records: StoredReviewRecords, *, n_resamples: int, unanswered: str = "exclude") -> ReviewScores:
    """Tasks 1-3 (injected track) or the segment track (natural), as scoring/reviews defines them."""
    from scoring.reviews import score_reviews, score_segments

    if records.track == "natural":
        return score_segments(records.truths, records.copies, records.outputs, records.reviewer_of,
                              unanswered=unanswered, n_resamples=n_resamples)  # type: ignore[arg-type]
    return score_reviews(records.truths, records.copies, records.outputs, unanswered=unanswered,
                         n_resamples=n_resamples)  # type: ignore[arg-type]


def _number(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def score_review_runs(store: Store, runs: list[Any], *, failed: dict[tuple[str, int], str], bootstrap: int,
                      unanswered: str = "exclude", allow_incomplete: bool = False) -> ReviewAuditScores:  # fmt: skip
    """Every detector's review scores from its stored records (reads the store, writes nothing)."""
    replicates = max(bootstrap, 100)  # the paper-level interval needs resamples even when CIs are off elsewhere
    scored, track = [], "injected"
    for run in runs:
        records = read_review_records(store, run.run_id)
        track = records.track
        outputs = store.read_outputs(run.run_id)
        errors = [e for e in outputs.column("error").to_pylist() if e is not None]
        outage_items = count_outage_answers(outputs)
        published = not outage_items or allow_incomplete
        if outputs.num_rows == 0 or len(errors) == outputs.num_rows:  # said nothing at all: failed, never scored
            shard_errors = [e for (rid, _), e in sorted(failed.items()) if rid == run.run_id]
            first_error = errors[0] if errors else (shard_errors[0] if shard_errors else "no output")
            scores = {"failed": True, "first_error": first_error, "num_errors": len(errors), "track": track,
                      "labelled": True}  # fmt: skip
            scored.append(ScoredReviewRun(run, outputs, None, METRIC_SCHEMA.empty_table(), scores, first_error,
                                          outage_items, published))  # fmt: skip
            continue
        score = score_records(records, n_resamples=replicates, unanswered=unanswered)
        metrics = table_from_rows(score.rows(run.run_id, run.system_label), METRIC_SCHEMA)
        headline = {m.metric: m.value for m in score.metrics if m.stratum == "all"}
        errored = sum(score.coverage["errored"].values())
        scores = {**headline, "track": track, "labelled": True, "num_reviews": len(records.truths),
                  "num_scored": len(records.truths) - errored, "num_errors": len(errors),
                  "num_hallucinated": sum(t.hallucinated for t in records.truths),
                  "decided_fraction": (len(records.truths) - errored) / len(records.truths) if records.truths else None,
                  "coverage": score.coverage,
                  "undefined": {m.metric: m.reason for m in score.metrics if m.stratum == "all" and m.value is None}}  # fmt: skip
        if track == "natural":  # per LLM reviewer, as the segment track defines it
            scores["per_reviewer"] = {m.stratum.removeprefix("reviewer="): m.value for m in score.metrics
                                      if m.metric == "segment_f1" and m.stratum.startswith("reviewer=")}  # fmt: skip
        scored.append(ScoredReviewRun(run, outputs, score, metrics, scores, None, outage_items, published))
    _judge_by_controls(scored, track)
    return ReviewAuditScores(scored, track, allow_incomplete)


def _judge_by_controls(scored: list[ScoredReviewRun], track: str) -> None:
    """With a control among the systems, every scored run's scores say which of its figures the
    controls invalidate (`audit_invalid_reasons`, empty when none)."""
    from scoring.reviews.validity import CONTROL_SYSTEMS, review_invalid_reasons

    controls = {s.run.system_label: CONTROL_SYSTEMS[name] for s in scored
                if (name := s.run.manifest["system"]["name"]) in CONTROL_SYSTEMS}  # fmt: skip
    if not controls:
        return
    rows = [r for s in scored if s.first_error is None for r in s.metrics.to_pylist()]
    for s in scored:
        if s.first_error is None:
            s.scores["audit_invalid_reasons"] = review_invalid_reasons(rows, controls, track=track,
                                                                       system=s.run.system_label)  # fmt: skip


class ReviewRunSummary(RunSummary):
    """The console leaderboard of a review audit (Task 1-3 headline or the segment track)."""

    track: str = "injected"

    def _render(self) -> str:
        injected = self.track != "natural"
        title = ("Review audit (HalluPeer Tasks 1-3): review/sentence detection F1, type macro-F1 end to end, "
                 "token F1, type macro-F1 oracle (fig. 20), review/sentence F1 with errored reviews as misses"
                 if injected else "Review audit (ReviewCritique segment track): deficient-segment detection")  # fmt: skip
        counts = (("reviews", "num_reviews"), ("scored", "num_scored"), ("errored", "num_errors"))
        width = max(7, *(len(_HEADERS.get(m, m)) for m in self.columns))
        head = f"{'system':<20} " + " ".join(f"{_HEADERS.get(m, m):>{width}}" for m in self.columns)
        head += " " + " ".join(f"{label:>9}" for label, _ in counts) + "  status"
        lines = ["", title, head]
        key = self.columns[2]  # sentence F1 / segment F1: the finest level every detector answers
        ranked = sorted(self.systems, key=lambda s: (s.scored, _number(s.scores.get(key)) or -1.0), reverse=True)
        for s in ranked:
            cells = " ".join(f"{_fmt(s.scores.get(m) if s.published and s.scored else None):>{width}}" for m in self.columns)
            tallies = " ".join(f"{s.scores.get(k) or 0:>9}" for _, k in counts)
            lines.append(f"{s.system:<20} {cells} {tallies}  {s.status}")
        return "\n".join(lines + self._footer())


def _fmt(value: Any) -> str:
    return "n/a" if _number(value) is None else f"{value:.3f}"


def publish_review_runs(store: Store, runs: list[Any], scored: ReviewAuditScores, *,
                        failed: dict[tuple[str, int], str], tracking_uri: str | None, experiment: str,
                        work_dir: Path, elapsed_s: float, submission: Submission | None = None) -> RunSummary:
    """Store each detector's metrics and scores, one report over all of them, MLflow per
    (corpus, system, snapshot), then each run's status."""
    from scoring.report_context import report_context
    from scoring.reviews.report import write_review_report

    columns = NATURAL_COLUMNS if scored.track == "natural" else INJECTED_COLUMNS
    summary = ReviewRunSummary(tracking_uri=tracking_uri, elapsed_s=elapsed_s, columns=columns)
    summary.track = scored.track
    tracked = []
    for s in scored.runs:
        system = close_system_run(store, s.run, s.outputs, failed, s.metrics, s.scores, outage_items=s.outage_items,
                                  published=s.published, allow_incomplete=scored.allow_incomplete,
                                  first_error=s.first_error)  # fmt: skip
        if "audit_invalid_reasons" in s.scores:
            system.validity = AuditValidity(True, tuple(s.scores["audit_invalid_reasons"]))
        summary.systems.append(system)
        tracked.append((system, s.run, s.metrics, s.metrics.to_pylist() if system.scored else [], {}))
    report_dir = work_dir / "report"
    rows = [r for s in scored.runs if s.published for r in s.metrics.to_pylist()]
    corpus = runs[0].manifest["corpus"] if runs else {"name": "reviews", "version": "?"}
    intro = (f"Corpus `{corpus['name']}@{corpus['version']}` ({scored.track} track), "
             f"{len(scored.runs)} detectors. Every number is recomputed from the stored outputs and truth "
             "(`review_metrics.csv`); intervals are paper-level bootstrap 95%.")  # fmt: skip
    context = report_context(store, [r.run_id for r in runs])  # after close_system_run: states each status
    warning = "\n".join(summary.audit_invalid_reasons) or None
    report_files = write_review_report(report_dir, rows, track=scored.track, intro=intro, context=context,
                                       warning=warning) if runs else []  # fmt: skip
    summary.report_uris, summary.leaderboard_uri = publish_report(store, summary.systems, runs, report_dir,
                                                                  report_files, columns)  # fmt: skip
    if tracking_uri:
        track_system_runs(store, tracked, tracking_uri, experiment, work_dir, report_dir, report_files, submission)
    finish_system_runs(store, summary.systems)
    return summary


__all__ = ["ReviewAudit", "ReviewAuditScores", "ScoredReviewRun", "build_review_corpus", "publish_review_runs",
           "read_review_records", "score_records", "score_review_runs"]
