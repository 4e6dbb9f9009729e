"""Audit a corpus with one or more systems on Ray: shard, run, store, score, track, report.

Wiring only: config -> corpora -> verifiers registry -> cluster -> storage -> scoring -> MLflow.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # the repository root is the Ray working_dir

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from cluster.run_config import ConfigError, RunConfig, load_config, override  # noqa: E402
from cluster.run_plan import plan_run  # noqa: E402
from cluster.run_services import build_services, release_services, resolve_cache_dir, run_key  # noqa: E402
from cluster.runner import PoolConfig, WorkerStartError, run_shard_tasks  # noqa: E402
from corpora import load_corpus  # noqa: E402
from scoring.run_summary import summarize_citation_runs, summarize_paper_runs  # noqa: E402
from storage.tracking import default_tracking_uri  # noqa: E402
from verifiers import RunContext, SystemSpec, build_system, get_entry, load_plugins, registered  # noqa: E402

EXIT_OK, EXIT_INCOMPLETE, EXIT_ERRORED_ITEMS, EXIT_BUDGET, EXIT_BAD_INPUT = 0, 1, 3, 4, 2

EPILOG = """
exit status:
  0  every shard finished and every item was audited
  1  some shards failed after all retries (recorded under <storage>/<run_id>/failed/; run again to retry
     them), or a source outage left answers UNCERTAIN and scores were withheld (see --allow-incomplete)
  2  bad configuration or corpus file (the message names the file and field)
  3  the run finished but some items are errored (malformed input lines, system errors): see the summary
  4  a system's budget was reached; submit the same run again to resume

examples:
  python jobs/run_corpus.py                                  # bundled corpus, local Ray, ./runs, ./mlruns
  python jobs/run_corpus.py --config configs/sample.toml --workers 4
  ray job submit --address http://127.0.0.1:8265 --working-dir . -- \\
      python jobs/run_corpus.py --config configs/cluster.toml --storage s3://bucket/prefix \\
      --tracking-uri http://127.0.0.1:5000
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="run_corpus.py",
        description="Run citation verifiers over a corpus on Ray, store every output (Parquet), score them "
        "with HALLMARK's metrics and log one MLflow run per system. Running the same run again resumes it: "
        "finished shards are never recomputed. A TOML config describes a run; flags override it.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", help="TOML run config (see configs/*.toml); default: built-in sample run")
    p.add_argument("--list-systems", action="store_true", help="list registered systems and whether each can run here")
    p.add_argument("--corpus", dest="corpus_path", help="corpus file: HALLMARK JSONL (full or blind) or .bib")
    p.add_argument("--corpus-format", dest="corpus_format", choices=["auto", "hallmark", "bibtex"], help="corpus format")
    p.add_argument("--corpus-name", dest="corpus_name", help="corpus name used in run ids (default: file stem)")
    p.add_argument("--split", dest="corpus_split", help="split name recorded on items")
    p.add_argument("--systems", help="comma-separated registered system names (replaces the config's systems)")
    p.add_argument("--storage", help="output location: a path, file:// or s3://bucket/prefix (default ./runs)")
    p.add_argument("--tracking-uri", help="MLflow tracking URI (default: sqlite under ./mlruns; 'none' disables)")
    p.add_argument("--experiment", help="MLflow experiment name (default scrutineer)")
    p.add_argument("--snapshot", help="snapshot date YYYY-MM-DD, part of the run id (default: today, UTC)")
    p.add_argument("--workers", type=int, help="number of Ray worker actors (default 2)")
    p.add_argument("--shard-size", type=int, help="items per shard (default 25)")
    p.add_argument("--max-attempts", type=int, help="tries per shard before it is recorded failed (default 3)")
    p.add_argument("--eval-mode", choices=["conservative", "aggressive", "both"], help="how UNCERTAIN and missing count")
    p.add_argument("--bootstrap", type=int, help="bootstrap resamples for CIs (default 1000; 0 disables)")
    p.add_argument("--plugins", help="comma-separated modules that register more systems")
    p.add_argument("--ray-address", help="Ray address (default: RAY_ADDRESS, else a new local Ray)")
    p.add_argument("--allow-incomplete", action="store_true", default=None,
                   help="publish scores even when a source outage left answers UNCERTAIN (the result says so)")
    return p.parse_args(argv)


def list_systems(plugins: list[str]) -> int:
    load_plugins(plugins)
    print(f"{'system':<22} {'available':<10} notes")
    for name, entry in registered().items():
        reasons = entry.unavailable_reasons()
        print(f"{name:<22} {'yes' if not reasons else 'no':<10} {'; '.join(reasons) or entry.description}")
    return EXIT_OK


def build_config(args: argparse.Namespace) -> RunConfig:
    config = load_config(args.config)
    systems = [{"name": s.strip()} for s in args.systems.split(",") if s.strip()] if args.systems else None
    plugins = [m.strip() for m in args.plugins.split(",") if m.strip()] if args.plugins else None
    return override(
        config,
        corpus_path=args.corpus_path, corpus_format=args.corpus_format, corpus_name=args.corpus_name,
        corpus_split=args.corpus_split, systems=systems, storage=args.storage, tracking_uri=args.tracking_uri,
        experiment=args.experiment, snapshot=args.snapshot, workers=args.workers, shard_size=args.shard_size,
        max_attempts=args.max_attempts, eval_mode=args.eval_mode, bootstrap=args.bootstrap, plugins=plugins,
        ray_address=args.ray_address, allow_incomplete=args.allow_incomplete,
    )  # fmt: skip


def init_ray(address: str | None) -> None:
    import ray
    from ray.job_config import JobConfig

    if ray.is_initialized():
        return
    # A submitted job already ships the repository as its working_dir. A driver started here
    # (local Ray, or RAY_ADDRESS to a cluster on this machine) puts the repository on the
    # workers' path instead, so plugin modules import there as they do here.
    in_submitted_job = "RAY_JOB_CONFIG_JSON_ENV_VAR" in os.environ
    job_config = None if in_submitted_job else JobConfig(code_search_path=[str(REPO_ROOT)])
    if address or os.environ.get("RAY_ADDRESS"):
        ray.init(address=address or None, logging_level="WARNING", job_config=job_config)
    else:
        ray.init(include_dashboard=False, logging_level="WARNING", job_config=job_config)


def make_services(config: RunConfig):
    """The run's one `RunServices`, keyed by what identifies the run (not by runtime settings)."""
    systems = sorted(SystemSpec(s.name, s.args).config_hash() for s in config.systems)
    key = run_key(config.audit, config.corpus.name or config.corpus.path, config.papers.paths, config.papers.seed,
                  config.snapshot, systems)  # fmt: skip
    return build_services(config.llm, key, config.snapshot, cache_dir=resolve_cache_dir(config.llm))


def build_paper_corpus(config: RunConfig, run_services):
    """Inject errors into the configured LaTeX papers: 1 clean + 3 injected copies each."""
    from corpora.paper_audit_corpus import build_paper_audit_corpus
    from corpora.paper_llm_proposer import LLMProposer

    if not config.papers.paths:
        raise ValueError("a paper_audit run needs [papers] paths = [...] (LaTeX project folders)")
    proposer = None
    if config.papers.proposer_model:
        from clients.llm_gateway import LLMGateway

        gateway = LLMGateway(config.papers.proposer_model, run_services.llm, api_base=config.papers.proposer_api_base,
                             cache_dir=resolve_cache_dir(config.llm))  # fmt: skip
        proposer = LLMProposer(gateway)
    print(f"[papers] injecting errors into {len(config.papers.paths)} papers (seed {config.papers.seed})", flush=True)
    return build_paper_audit_corpus(config.papers.paths, config.papers.seed, proposer,
                                    corpus=config.corpus.name or "paper_audit", variant=config.papers.variant,
                                    check_compile=config.papers.check_compile)  # fmt: skip


def adjudicate_paper_runs(config: RunConfig, plan, corpus, cache_dir: str, run_services) -> dict:
    """Each reviewer's stored outputs -> verdicts (quote matching, judge panels, checkers)."""
    from adjudication.paper_audit import PaperAdjudicationConfig, adjudicate_paper_run

    adj = config.adjudication
    settings = PaperAdjudicationConfig(panel=list(adj.panel), escalation=adj.escalation,
                                       low_confidence=adj.low_confidence, fp_panel=adj.fp_panel,
                                       checker_url=adj.checker_url, cited_texts_dir=adj.cited_texts_dir)  # fmt: skip
    verdicts = {}
    for run in plan.runs:
        print(f"[adjudication] {run.system_label}: matching flags against injections", flush=True)
        verdicts[run.run_id] = adjudicate_paper_run(corpus.items, corpus.truth, plan.store.read_outputs(run.run_id),
                                                    settings, services=run_services.llm, cache_dir=cache_dir)  # fmt: skip
    return verdicts


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    held: list = []  # the run's services, released whatever happens once they exist
    try:
        return _run(args, started, held)
    finally:
        for services in held:
            release_services(services)


def _run(args: argparse.Namespace, started: float, held: list) -> int:
    try:
        config = build_config(args)
        if args.list_systems:
            return list_systems(config.plugins)
        load_plugins(config.plugins)
        if config.audit == "paper_audit":
            init_ray(config.ray_address)
            held.append(make_services(config))
            corpus = build_paper_corpus(config, held[0])
        else:
            corpus = load_corpus(config.corpus.path, config.corpus.format, config.corpus.name, config.corpus.split)
    except (ConfigError, FileNotFoundError, ValueError, ModuleNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for err in corpus.errors:
        print(f"[input] {err}", file=sys.stderr)
    print(f"[corpus] {corpus.name}@{corpus.version}: {corpus.num_items} items ({len(corpus.errors)} unreadable)", flush=True)

    specs = [SystemSpec(s.name, s.args, s.label) for s in config.systems]
    for spec in specs:
        try:
            reasons = get_entry(spec.name).unavailable_reasons()
        except KeyError as exc:
            print(f"error: {exc.args[0]}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if reasons:
            print(f"error: system '{spec.name}' cannot run here: {'; '.join(reasons)}", file=sys.stderr)
            return EXIT_BAD_INPUT
    init_ray(config.ray_address)
    cache_dir = resolve_cache_dir(config.llm)
    if not held:
        held.append(make_services(config))
    services = held[0]  # one per run: every system, judge and the proposer share it

    def make_context(run_id: str) -> RunContext:
        return RunContext(run_id, config.snapshot, cache_dir, services)

    try:
        plan = plan_run(config, corpus, specs, make_context=make_context)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        outcome = run_shard_tasks(
            plan.tasks,
            corpus.items,
            build=functools.partial(build_system, plugins=tuple(config.plugins)),
            store_uri=config.storage,
            pool=PoolConfig(workers=config.workers, cpus_per_worker=config.cpus_per_worker, max_attempts=config.max_attempts),
        )
    except WorkerStartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INCOMPLETE
    tracking_uri = config.tracking_uri or default_tracking_uri()
    tracking_uri = None if tracking_uri.lower() == "none" else tracking_uri
    with tempfile.TemporaryDirectory(prefix="scrutineer-report-") as tmp:
        if config.audit == "paper_audit":
            verdicts = adjudicate_paper_runs(config, plan, corpus, cache_dir, services)
            summary = summarize_paper_runs(
                plan.store, plan.runs, verdicts, failed=outcome.failed, tracking_uri=tracking_uri,
                experiment=config.experiment, bootstrap=config.bootstrap, work_dir=Path(tmp),
                elapsed_s=time.monotonic() - started,
            )  # fmt: skip
        else:
            summary = summarize_citation_runs(
                plan.store, plan.runs, corpus.truth, failed=outcome.failed, tracking_uri=tracking_uri,
                experiment=config.experiment, eval_mode=config.eval_mode, bootstrap=config.bootstrap,
                work_dir=Path(tmp), elapsed_s=time.monotonic() - started, allow_incomplete=config.allow_incomplete,
            )  # fmt: skip
    print(summary.render(), flush=True)
    if outcome.stopped_by_budget:
        return EXIT_BUDGET
    if not outcome.complete or summary.withheld:
        return EXIT_INCOMPLETE
    return EXIT_ERRORED_ITEMS if summary.errored_items else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
