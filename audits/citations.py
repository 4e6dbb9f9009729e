"""The citation audit: verifiers over a labelled (or unlabelled) citation corpus, scored with
HALLMARK's metrics (reference 000). Labels are compared at scoring time, so there is no separate
adjudication step; answers that depended on a source outage hold the run's scores back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa

from audits.base import LEGACY_IDENTITY, AuditContext, ShardedAudit, Verdicts
from audits.summary import LEADERBOARD_METRICS, RunSummary, count_outage_answers
from storage.run_publication import (
    Submission,
    close_system_run,
    finish_system_runs,
    publish_report,
    track_system_runs,
)
from storage.store import Store

if TYPE_CHECKING:
    from pathlib import Path

    from clients.lent_services import RunServices
    from cluster.run_config import RunConfig
    from corpora.loaded_corpus import LoadedCorpus
    from scoring.citations.score import CitationScore


@dataclass
class ScoredCitationRun:
    """One system's scores, computed from its stored outputs and the truth."""

    run: Any  # cluster.run_plan.PlannedRun
    outputs: pa.Table
    score: CitationScore
    scores: dict[str, Any]
    """What scores.json holds."""
    first_error: str | None
    """Set when every output errored: the system failed and is not scored."""
    outage_items: int
    published: bool


@dataclass
class CitationScores:
    runs: list[ScoredCitationRun]
    eval_mode: str
    allow_incomplete: bool


class CitationAudit(ShardedAudit):
    name: ClassVar[str] = "citations"
    corpus_needs_cluster: ClassVar[bool] = False
    sections = {}  # the corpus and systems are every run's; nothing of its own
    item_kinds = ("citation",)

    def identity(self, config: RunConfig) -> tuple[Any, ...]:
        return LEGACY_IDENTITY  # the run key as before the sections moved to their audits

    def build_corpus(self, config: RunConfig, services: RunServices | None) -> LoadedCorpus:
        from corpora import load_corpus

        c = config.corpus
        return load_corpus(c.path, c.format, c.name, c.split)

    def adjudicate(self, ctx: AuditContext) -> Verdicts:
        return {}  # labels are compared by scoring (HALLMARK's confusion matrix)

    def score(self, ctx: AuditContext, verdicts: Verdicts) -> CitationScores:
        c = ctx.config
        return score_citation_runs(ctx.plan.store, ctx.plan.runs, ctx.corpus.truth, failed=ctx.failed,
                                   eval_mode=c.eval_mode, bootstrap=c.bootstrap,
                                   allow_incomplete=c.allow_incomplete)  # fmt: skip

    def publish(self, ctx: AuditContext, verdicts: Verdicts, scores: CitationScores, elapsed_s: float) -> RunSummary:
        return publish_citation_runs(ctx.plan.store, ctx.plan.runs, scores, failed=ctx.failed,
                                     tracking_uri=ctx.tracking_uri, experiment=ctx.config.experiment,
                                     work_dir=ctx.work_dir, elapsed_s=elapsed_s, submission=ctx.submission)  # fmt: skip


def score_citation_runs(store: Store, runs: list[Any], truth: pa.Table, *, failed: dict[tuple[str, int], str],
                        eval_mode: str, bootstrap: int, allow_incomplete: bool = False) -> CitationScores:
    """Every system's HALLMARK scores from its stored outputs (reads the store, writes nothing)."""
    from scoring import score_citation_outputs
    from scoring.citations.hallmark_result import run_scores

    scored = []
    for run in runs:
        outputs = store.read_outputs(run.run_id)
        outage_items = count_outage_answers(outputs)
        published = not outage_items or allow_incomplete
        score = score_citation_outputs(truth, outputs, run_id=run.run_id, system=run.system_label,
                                       eval_mode=eval_mode, bootstrap=bootstrap)  # fmt: skip
        first_error = None
        if score.failed:  # every output errored: reported as failed with its first error, never scored
            shard_errors = [e for (rid, _), e in sorted(failed.items()) if rid == run.run_id]
            first_error = score.census.first_error or (shard_errors[0] if shard_errors else "no output")
            scores = {"failed": True, "first_error": first_error, "labelled": score.labelled,
                      "num_errors": score.census.num_errors, "errors_by_kind": score.census.errors_by_kind,
                      "outputs": score.census.as_dict()}  # fmt: skip
        else:
            scores = run_scores(score, truth, outputs, split_name=getattr(run, "split", None) or run.run_id.split("@")[0])
        scored.append(ScoredCitationRun(run, outputs, score, scores, first_error, outage_items, published))
    return CitationScores(scored, eval_mode, allow_incomplete)


def publish_citation_runs(store: Store, runs: list[Any], scored: CitationScores, *,
                          failed: dict[tuple[str, int], str], tracking_uri: str | None, experiment: str,
                          work_dir: Path, elapsed_s: float, submission: Submission | None = None) -> RunSummary:
    """Store each system's metrics and scores, then the report over all of them (written after the
    scores: it states each system's stored status), MLflow, and finally each run's status."""
    from scoring.citations.report import write_run_report
    from scoring.citations.stored_run import report_context

    summary = RunSummary(tracking_uri=tracking_uri, elapsed_s=elapsed_s)
    tracked = []
    eval_mode = scored.eval_mode
    for s in scored.runs:
        system = close_system_run(store, s.run, s.outputs, failed, s.score.metric_rows(), s.scores,
                                  outage_items=s.outage_items, published=s.published,
                                  allow_incomplete=scored.allow_incomplete, first_error=s.first_error)  # fmt: skip
        summary.systems.append(system)
        metric_rows = [r for r in s.score.metric_rows().to_pylist()
                       if r["eval_mode"] in (None, eval_mode, "conservative") or eval_mode == "both"]  # fmt: skip
        tracked.append((system, s.run, s.score.metric_rows(), metric_rows if system.scored else [], {}))
    report_dir = work_dir / "report"
    report_files = write_run_report(report_dir, [s.score for s in scored.runs],
                                    context=report_context(store, [r.run_id for r in runs]))  # fmt: skip
    summary.report_uris, summary.leaderboard_uri = publish_report(store, summary.systems, runs, report_dir,
                                                                  report_files, LEADERBOARD_METRICS)  # fmt: skip
    if tracking_uri:
        track_system_runs(store, tracked, tracking_uri, experiment, work_dir, report_dir, report_files,
                          submission)
    finish_system_runs(store, summary.systems)
    return summary


def summarize_citation_runs(store: Store, runs: list[Any], truth: pa.Table, *, failed: dict[tuple[str, int], str],
                            tracking_uri: str | None, experiment: str, eval_mode: str, bootstrap: int,
                            work_dir: Path, elapsed_s: float, allow_incomplete: bool = False,
                            submission: Submission | None = None) -> RunSummary:
    """Score and publish in one call (the two steps of `CitationAudit`)."""
    scored = score_citation_runs(store, runs, truth, failed=failed, eval_mode=eval_mode, bootstrap=bootstrap,
                                 allow_incomplete=allow_incomplete)  # fmt: skip
    return publish_citation_runs(store, runs, scored, failed=failed, tracking_uri=tracking_uri,
                                 experiment=experiment, work_dir=work_dir, elapsed_s=elapsed_s,
                                 submission=submission)  # fmt: skip


__all__ = ["CitationAudit", "CitationScores", "ScoredCitationRun", "publish_citation_runs", "score_citation_runs",
           "summarize_citation_runs"]
