"""The paper audit (reference 002): AI reviewers over LaTeX papers with injected errors. The
corpus is built by injection on Ray (1 clean + 3 injected copies per paper); reviews are
adjudicated (quote matching, judge panels, mechanical checkers) into verdicts, beside the
built-in controls (issue 15); scoring is the paper-level statistics of scoring/papers/."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

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
from audits.summary import PAPER_LEADERBOARD_METRICS, RunSummary, count_outage_answers
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


class PapersConfig(AuditSection):
    """`[papers]`: the papers to inject errors into."""

    identity_fields = ("paths", "seed")
    paths: list[str] = Field(default_factory=list, description="LaTeX project folders, one paper each; relative to the config file")
    seed: int = Field(7, description="Seed of the injection schedule and draws")
    variant: str | None = Field(None, description="Sub-type registry variant (e.g. 'ml')")
    check_compile: bool = Field(True, description="Compile injected copies when a TeX engine is installed")
    proposer_model: str | None = Field(None, description="Gateway model for LLM-proposed injections (None: rule injections only)")
    proposer_api_base: str | None = Field(None, description="API base for the proposer model")
    errata_repos: list[str | dict[str, Any]] = Field(
        default_factory=list,
        description="Natural-error track: paper git repositories whose history holds errata; each a path or "
                    "{repo, folder, main_file, paper_id, max_copies, rev} (corpora/papers/errata.py); relative to the config file",
    )  # fmt: skip

    @field_validator("paths", mode="before")
    @classmethod
    def _paths_relative_to_the_config(cls, value: Any, info: ValidationInfo) -> Any:
        return [config_relative(p, info) for p in value] if isinstance(value, list) else value

    @field_validator("errata_repos", mode="before")
    @classmethod
    def _repos_relative_to_the_config(cls, value: Any, info: ValidationInfo) -> Any:
        # natural-error repositories, like paper folders, are relative to the config
        if not isinstance(value, list):
            return value
        return [config_relative(e, info) if isinstance(e, str) else ({**e, "repo": config_relative(e["repo"], info)}
                if isinstance(e, dict) and isinstance(e.get("repo"), str) else e) for e in value]  # fmt: skip


class AdjudicationConfig(AuditSection):
    """`[adjudication]`: the judges and checkers that turn reviewers' flags into verdicts."""

    identity_fields = ()  # judges read the stored answers: they do not change what the systems audited

    panel: list[str | dict[str, Any]] = Field(default_factory=list, description="Judge models for detection matching (cross-family)")
    escalation: str | dict[str, Any] | None = Field(None, description="Judge given the full paper on a split or unsure panel")
    low_confidence: float = Field(0.7, description="A panel majority below this mean confidence escalates")
    fp_panel: list[str | dict[str, Any]] | None = Field(None, description="General false-positive panel (default: panel)")
    checker_url: str | None = Field(None, description="Checker service URL (default: local sandboxed checks)")
    cited_texts_dir: str | None = Field(None, description="Folder of <bibkey>.txt with cited works' text")


def papers_section(config: RunConfig) -> PapersConfig:
    return section(config, "papers", PapersConfig)


@dataclass
class ScoredPaperRun:
    run: Any  # cluster.run_plan.PlannedRun
    outputs: pa.Table
    metrics: pa.Table
    """This reviewer's METRIC_SCHEMA rows, with its own run id."""
    scores: dict[str, Any]
    outage_items: int = 0
    """Copies reviewed while the reviewer's provider (a model, the checker service) was down."""
    published: bool = True


@dataclass
class PaperScores:
    combined: pa.Table | None
    """Every reviewer's verdicts and the controls', as one table (None without runs)."""
    metrics: pa.Table
    """Every statistic over all reviewers (METRIC_SCHEMA)."""
    runs: list[ScoredPaperRun]
    allow_incomplete: bool = False


class PaperAudit(ShardedAudit):
    name: ClassVar[str] = "paper_audit"
    corpus_needs_cluster: ClassVar[bool] = True
    sections = {"papers": PapersConfig, "adjudication": AdjudicationConfig}
    item_kinds = ("paper_copy",)

    def identity(self, config: RunConfig) -> tuple[Any, ...]:
        papers = papers_section(config)
        return (papers.paths, papers.seed, *LEGACY_IDENTITY[2:])  # the run key as before the sections moved

    def build_corpus(self, config: RunConfig, services: RunServices | None) -> LoadedCorpus:
        return build_paper_corpus(config, services)

    def adjudicate(self, ctx: AuditContext) -> Verdicts:
        from cluster.services_builder import driver_answers

        # the judges' answers go to the run's storage, so a resumed or replayed run pays none twice
        with driver_answers(ctx.services, ctx.config.storage, ctx.services.run_key, "adjudication"):
            return adjudicate_paper_runs(ctx.config, ctx.plan, ctx.corpus, ctx.cache_dir, ctx.services)

    def score(self, ctx: AuditContext, verdicts: Verdicts) -> PaperScores:
        return score_paper_runs(ctx.plan.store, ctx.plan.runs, verdicts, bootstrap=ctx.config.bootstrap,
                                allow_incomplete=ctx.config.allow_incomplete)  # fmt: skip

    def publish(self, ctx: AuditContext, verdicts: Verdicts, scores: PaperScores, elapsed_s: float) -> RunSummary:
        return publish_paper_runs(ctx.plan.store, ctx.plan.runs, verdicts, scores, failed=ctx.failed,
                                  tracking_uri=ctx.tracking_uri, experiment=ctx.config.experiment,
                                  work_dir=ctx.work_dir, elapsed_s=elapsed_s, submission=ctx.submission)  # fmt: skip


def build_paper_corpus(config: RunConfig, run_services: RunServices | None) -> LoadedCorpus:
    """Inject errors into the configured LaTeX papers: 1 clean + 3 injected copies each."""
    from checkers.equivalence import same_at_sample_points
    from cluster.services_builder import driver_answers, resolve_cache_dir, run_key
    from corpora.papers.audit_corpus import build_paper_audit_corpus
    from corpora.papers.corpus_report import HAND_LABELS, corpus_report
    from corpora.papers.llm_proposer import LLMProposer

    papers = papers_section(config)
    if not papers.paths and not papers.errata_repos:
        raise ValueError("a paper_audit run needs [papers] paths = [...] (LaTeX project folders) "
                         "or errata_repos = [...] (paper git repositories)")
    proposer = None
    if papers.proposer_model:
        from clients.llm_gateway import LLMGateway

        gateway = LLMGateway(papers.proposer_model, run_services.llm, api_base=papers.proposer_api_base,
                             cache_dir=resolve_cache_dir(config.llm))  # fmt: skip
        proposer = LLMProposer(gateway)
    print(f"[papers] injecting errors into {len(papers.paths)} papers (seed {papers.seed})", flush=True)
    # the proposer's answers go to the run's storage, keyed by what makes the corpus (not the systems)
    key = run_key("paper_corpus", papers.paths, papers.seed, papers.variant,
                  papers.proposer_model, papers.proposer_api_base, config.snapshot)  # fmt: skip
    with driver_answers(run_services, config.storage, key, "proposer"):
        corpus = build_paper_audit_corpus(papers.paths, papers.seed, proposer,
                                          corpus=config.corpus.name or "paper_audit", variant=papers.variant,
                                          check_compile=papers.check_compile,
                                          same_maths=same_at_sample_points)  # fmt: skip
    # issue 21: a paper folder that cannot be loaded is that paper's failure (named, counted), not the run's
    report = corpus_report(corpus, HAND_LABELS)
    for line in report.lines():
        print(f"[papers] {line}", flush=True)
    if papers.paths and not corpus.num_items and not papers.errata_repos:
        raise ValueError("no paper of [papers] paths could be loaded: "
                         + "; ".join(f"{f['folder']}: {f['reason']}" for f in report.papers_failed))
    summary = {**corpus.summary, "report": report.as_dict()}
    corpus.summary = summary
    if papers.errata_repos:  # issue 15: the natural-error track, real errata from the papers' histories
        from corpora.papers.errata import add_natural_track

        corpus, scans = add_natural_track(corpus, papers.errata_repos)
        corpus.summary = corpus.summary or summary
        for paper_id, scan in scans.items():
            print(f"[papers] {paper_id}: {len(scan.errata)} errata in {len(scan.by_commit())} fixing commits "
                  f"({scan.commits_scanned} commits read)", flush=True)
    return corpus


def adjudicate_paper_runs(config: RunConfig, plan, corpus: LoadedCorpus, cache_dir: str, run_services) -> Verdicts:
    """Each reviewer's stored outputs -> verdicts (quote matching, judge panels, checkers)."""
    from adjudication.papers.adjudicate import PaperAdjudicationConfig, adjudicate_calibrated

    adj = section(config, "adjudication", AdjudicationConfig)
    settings = PaperAdjudicationConfig(panel=list(adj.panel), escalation=adj.escalation,
                                       low_confidence=adj.low_confidence, fp_panel=adj.fp_panel,
                                       checker_url=adj.checker_url, cited_texts_dir=adj.cited_texts_dir)  # fmt: skip
    if not plan.runs:
        return {}
    # issue 15 and 21: null, random-quote, quote-everything, token-quote and shuffled-review controls,
    # adjudicated alike and first, so that judges that credit them are excluded from every verdict
    print("[adjudication] controls (null, random-quote, quote-everything, token-quotes, shuffled reviews), then "
          f"{', '.join(r.system_label for r in plan.runs)}: matching flags against injections", flush=True)
    verdicts, excluded = adjudicate_calibrated(
        corpus.items, corpus.truth, {r.run_id: plan.store.read_outputs(r.run_id) for r in plan.runs}, settings,
        services=run_services.llm, cache_dir=cache_dir)  # fmt: skip
    for judge in sorted(excluded):
        print(f"[adjudication] judge {judge} is uncalibrated (it credited the controls): its votes are recorded, "
              "not counted", flush=True)  # fmt: skip
    return verdicts


def score_paper_runs(store: Store, runs: list[Any], verdicts: Verdicts, *, bootstrap: int,
                     allow_incomplete: bool = False) -> PaperScores:  # fmt: skip
    """Each reviewer's verdicts -> detection and false-positive statistics per reviewer (reads the
    stored outputs for error counts; writes nothing)."""
    from scoring.papers.metrics import (
        CONTROL_PREFIX,
        audit_invalid_reasons,
        paper_audit_metrics,
        reviewer_audit_rows,
    )

    replicates = max(bootstrap, 100)
    # "controls": the built-in control reviewers' verdicts (issue 15), reported beside the reviewers.
    extra = [verdicts["controls"]] if "controls" in verdicts else []
    combined = pa.concat_tables([verdicts[r.run_id] for r in runs] + extra) if runs else None
    # the corpus truth (stored with each run) gives the injection-validity counts
    truth = store.read_table(runs[0].run_id, "truth") if runs else None
    all_metrics = paper_audit_metrics(combined, run_id="+".join(r.run_id for r in runs), n_interval=replicates,
                                      n_paired=replicates, n_permutations=replicates, truth=truth)  # fmt: skip
    all_rows = all_metrics.to_pylist()
    scored = []
    for run in runs:
        outputs = store.read_outputs(run.run_id)
        own = [r | {"run_id": run.run_id} for r in all_rows if r["system"] == run.system_label]
        # issue 15: its controls, the audit's validity, resample and injection-validity counts go on its own run
        mine = table_from_rows(own + reviewer_audit_rows(all_rows, run.system_label, run.run_id), METRIC_SCHEMA)
        headline = {r["metric"]: r["value"] for r in mine.to_pylist() if r["stratum"] == "all"}
        # the natural-error track's headline apart (issue 15): never mixed into the injected rate
        headline |= {f"natural_{r['metric']}": r["value"] for r in mine.to_pylist() if r["stratum"] == "track=natural"
                     and r["metric"] in ("detection_rate", "detection_over_all", "undecided_injections")}
        outcomes = verdicts[run.run_id].column("outcome").to_pylist()
        details = verdicts[run.run_id].column("detail_json").to_pylist()
        natural = [json.loads(d or "{}").get("track") == "natural" for d in details]
        scores = {
            **headline,
            "num_injections": sum(o in ("detected", "missed") and not n for o, n in zip(outcomes, natural, strict=True)),
            "num_natural_errata": sum(o in ("detected", "missed") and n for o, n in zip(outcomes, natural, strict=True)),
            "num_undecided": outcomes.count("undecided"),
            "num_flags_adjudicated": sum(o in ("confirmed_issue", "false_positive", "ambiguous") for o in outcomes),
            "num_unscored": outcomes.count("unscored"),
            "num_errors": sum(1 for e in outputs.column("error").to_pylist() if e is not None),
        }
        if any(r["system"] == CONTROL_PREFIX + "null" for r in all_rows):  # issue 21: the controls judge the figure
            scores["audit_invalid_reasons"] = audit_invalid_reasons(all_rows, run.system_label)
        # copies answered during an outage are unscored (adjudication) and retried on resubmission
        outage_items = count_outage_answers(outputs)
        scored.append(ScoredPaperRun(run, outputs, mine, scores, outage_items, not outage_items or allow_incomplete))
    return PaperScores(combined, all_metrics, scored, allow_incomplete)


def publish_paper_runs(store: Store, runs: list[Any], verdicts: Verdicts, scored: PaperScores, *,
                       failed: dict[tuple[str, int], str], tracking_uri: str | None, experiment: str,
                       work_dir: Path, elapsed_s: float, submission: Submission | None = None) -> RunSummary:
    """Store each reviewer's verdicts, metrics and scores, one report over all reviewers, MLflow
    per reviewer, then each run's status."""
    from scoring.papers.report import write_paper_report
    from scoring.report_context import report_context

    summary = RunSummary(tracking_uri=tracking_uri, elapsed_s=elapsed_s, columns=PAPER_LEADERBOARD_METRICS)
    tracked = []
    for s in scored.runs:
        run = s.run
        store.write_table(run.run_id, "verdicts", verdicts[run.run_id])
        system = close_system_run(store, run, s.outputs, failed, s.metrics, s.scores, outage_items=s.outage_items,
                                  published=s.published, allow_incomplete=scored.allow_incomplete)  # fmt: skip
        if "audit_invalid_reasons" in s.scores:
            system.validity = AuditValidity(True, tuple(s.scores["audit_invalid_reasons"]))
        summary.systems.append(system)
        tracked.append((system, run, s.metrics, s.metrics.to_pylist(), {"verdicts.parquet": verdicts[run.run_id]}))
    report_dir = work_dir / "report"
    context = report_context(store, [r.run_id for r in runs])  # after close_system_run: states each status
    report_files = write_paper_report(report_dir, scored.combined, metrics=scored.metrics,
                                      context=context) if runs else []  # fmt: skip
    summary.report_uris, summary.leaderboard_uri = publish_report(store, summary.systems, runs, report_dir,
                                                                  report_files, PAPER_LEADERBOARD_METRICS)  # fmt: skip
    if tracking_uri:
        track_system_runs(store, tracked, tracking_uri, experiment, work_dir, report_dir, report_files,
                          submission)
    finish_system_runs(store, summary.systems)
    return summary


def summarize_paper_runs(store: Store, runs: list[Any], verdicts: Verdicts, *, failed: dict[tuple[str, int], str],
                         tracking_uri: str | None, experiment: str, bootstrap: int, work_dir: Path,
                         elapsed_s: float, submission: Submission | None = None) -> RunSummary:
    """Score and publish in one call (the two steps of `PaperAudit`)."""
    scored = score_paper_runs(store, runs, verdicts, bootstrap=bootstrap)
    return publish_paper_runs(store, runs, verdicts, scored, failed=failed, tracking_uri=tracking_uri,
                              experiment=experiment, work_dir=work_dir, elapsed_s=elapsed_s,
                              submission=submission)  # fmt: skip


__all__ = ["PaperAudit", "PaperScores", "ScoredPaperRun", "adjudicate_paper_runs", "build_paper_corpus",
           "publish_paper_runs", "score_paper_runs", "summarize_paper_runs"]
