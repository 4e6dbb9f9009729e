"""Audit a corpus with one or more systems on Ray: shard, run, store, score, track, report.

Wiring only: config -> the audit it names (audits/: build corpus -> run systems -> adjudicate ->
score -> publish) -> exit status. Nothing here depends on the audit kind.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from audits.base import Audit
    from cluster.run_config import RunConfig

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # the repository root is the Ray working_dir

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# `--help` must answer at once: ray, pyarrow, mlflow, litellm and the rest are imported only
# after the arguments are parsed (this module is standard library only).
from cluster.systems_flag import SYSTEMS_SYNTAX, parse_systems_flag  # noqa: E402

EXIT_OK, EXIT_INCOMPLETE, EXIT_ERRORED_ITEMS, EXIT_BUDGET, EXIT_BAD_INPUT = 0, 1, 3, 4, 2
EXIT_NOT_TRACKED = 5
EXIT_LEASE_LOST = 6
EXIT_AUDIT_INVALID = 7

EPILOG = """
exit status:
  0  every shard finished and every item was audited
  1  some shards failed after all retries (recorded under <storage>/<run_id>/failed/; run again to retry
     them), or a source or model-provider outage left answers UNCERTAIN and scores were withheld
     (run the same command again to retry just those items; see --allow-incomplete)
     also: storage stayed down (unreachable, full, read-only) past the pause, or failed while the results
     were published (the message names the path); free it and run the same command again: nothing
     finished is recomputed
  2  bad configuration or corpus file (the message names the file and field), or storage, the tracking
     server or the cluster failed its check before any work (the message says what and how to fix it),
     or storage refused the run's lease or plan (the message names the path)
  2  also: another driver owns the run (the message names it; see --wait-for-lease)
  2  also: a bibliographic source refused the credentials (401 / 403; the message names the source): the run
     stopped; fix the key and run the same command again (finished shards are kept)
  3  the run finished but some items are errored (malformed input lines, system errors): see the summary
  4  a system's budget was reached; submit the same run again to resume
  5  the work is done and stored and the leaderboard printed, but the tracking server failed at the end:
     log it later with the printed `python jobs/publish_run.py ...` command
  6  this driver lost the run to another driver (it was frozen, or cut off from storage, for longer than
     the lease's TTL, and the other took the lease over): it stopped handing out shards, no shard it had
     in flight landed after the takeover, and the message names the new owner, who carries the run on
  7  AUDIT INVALID (audits that carry controls): a control (null, random-quote, quote-everything,
     token-quotes or a system's shuffled outputs) reaches a system's detection rate within its 95% CI, or the
     null control detects more than 5% of its injections; in the review audit, review_flag_all reaches a
     detector's F1 or precision within its 95% CI, or review_null scores above 0; everything is stored and the banner above the leaderboard,
     run_summary.json (audit_validity) and MLflow (tag audit_validity) give the reasons. The figures must
     not be published as they are

--systems syntax:
  {SYSTEMS}

examples:
  python jobs/run_corpus.py                                  # bundled corpus, local Ray, ./runs, ./mlruns
  python jobs/run_corpus.py --config configs/sample.toml --workers 4
  source .dev-services/env.sh     # after `bash infra/dev_services.sh start`: RAY_ADDRESS, tracking, S3
  ray job submit --working-dir . -- python jobs/run_corpus.py --config configs/cluster.toml
  python jobs/run_corpus.py --systems 'llm_zero_shot:model=openai/gpt-4o-mini,prescreen'
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="run_corpus.py",
        description="Run citation verifiers over a corpus on Ray, store every output (Parquet), score them "
        "with HALLMARK's metrics and log one MLflow run per system. Running the same run again resumes it: "
        "finished shards are never recomputed. A TOML config describes a run; flags override it.",
        epilog=EPILOG.replace("{SYSTEMS}", SYSTEMS_SYNTAX.replace("\n", "\n  ")),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", help="TOML run config (see configs/*.toml); default: built-in sample run")
    p.add_argument("--list-systems", action="store_true", help="list registered systems and whether each can run here")
    p.add_argument("--probe", action="store_true",
                   help="with --list-systems: also ask each system's online sources (doi.org, Crossref, ...) whether "
                        "they answer, a few seconds at most; without it the listing makes no network request")
    p.add_argument("--verbose", action="store_true",
                   help="with --list-systems: each system's arguments, split into those that change its answers "
                        "(hashed into the run id) and runtime ones (recorded, not hashed: resuming with other values "
                        "continues the same run)")
    p.add_argument("--corpus", dest="corpus_path", help="corpus file: HALLMARK JSONL (full or blind) or .bib")
    p.add_argument("--corpus-format", dest="corpus_format", choices=["auto", "hallmark", "bibtex"], help="corpus format")
    p.add_argument("--corpus-name", dest="corpus_name", help="corpus name used in run ids (default: file stem)")
    p.add_argument("--split", dest="corpus_split", help="split name recorded on items")
    p.add_argument("--systems", help="systems with optional arguments, e.g. 'prescreen,field_match:closed_world=true' "
                   "(replaces the config's systems; syntax below)")
    p.add_argument("--storage", help="output location: a path, file:// or s3://bucket/prefix (default ./runs)")
    p.add_argument("--tracking-uri", help="MLflow tracking URI (default: SCRUTINEER_TRACKING_URI or MLFLOW_TRACKING_URI, "
                   "else sqlite under ./mlruns; 'none' disables)")
    p.add_argument("--experiment", help="MLflow experiment name (default scrutineer/{corpus}: one per corpus)")
    p.add_argument("--snapshot", help="snapshot date YYYY-MM-DD, part of the run id (default: today, UTC)")
    p.add_argument("--workers", type=int, help="number of Ray worker actors (default 2)")
    p.add_argument("--cpus-per-worker", type=float, help="Ray CPUs per worker (default 1; e.g. 0.25 for I/O-bound systems)")
    p.add_argument("--shard-size", type=int, help="items per shard (default 25)")
    p.add_argument("--max-attempts", type=int, help="tries per shard before it is recorded failed (default 3)")
    p.add_argument("--eval-mode", choices=["conservative", "aggressive", "both"], help="how UNCERTAIN and missing count")
    p.add_argument("--bootstrap", type=int, help="bootstrap resamples for CIs (default 1000; 0 disables)")
    p.add_argument("--plugins", help="comma-separated modules that register more systems or audit kinds")
    p.add_argument("--ray-address", help="Ray GCS address host:port, or the dashboard URL http://host:8265 "
                   "(default: RAY_ADDRESS, else a new local Ray)")
    p.add_argument("--allow-incomplete", action="store_true", default=None,
                   help="publish scores even when a source outage left answers UNCERTAIN (the result says so)")
    p.add_argument("--wait-for-lease", action="store_true",
                   help="when another driver owns the run, wait until it is free instead of exiting 2")
    return p.parse_args(argv)


def list_systems(plugins: list[str], verbose: bool = False, probe: bool = False) -> int:
    """Each registered system with its default arguments: can it run here, and if not, why.
    Online sources are asked only with `probe` (a listing makes no network request by default)."""
    from verifiers import load_plugins, registered
    from verifiers.registry import probe_urls, source_urls

    load_plugins(plugins)
    entries = registered()
    if probe:  # every source any system would use, probed at once (short timeout, cached for the listing)
        probe_urls(u for e in entries.values() for u in _online(e, source_urls).values())
    rows = [(name, *_availability(entry, probe, source_urls)) for name, entry in entries.items()]
    width = max(len("system"), *(len(r[0]) for r in rows)) + 2
    print(f"{'system':<{width}}{'available':<11}notes")
    for name, available, notes in rows:
        print(f"{name:<{width}}{available:<11}{notes}")
        if verbose:
            identity, runtime = entries[name].argument_roles()
            print(f"{'':<{width}}  identity: {', '.join(identity) or '(none)'}")
            print(f"{'':<{width}}  runtime:  {', '.join(runtime) or '(none)'}")
    return EXIT_OK


def _online(entry, source_urls) -> dict[str, str]:
    """URL per online service the entry would use: its default sources and `reachable` needs."""
    urls = source_urls(entry.effective_args().get("sources") or ())
    return urls | {r.name: r.name for r in entry.requires if r.kind == "reachable"}


def _availability(entry, probe: bool, source_urls) -> tuple[str, str]:
    reasons = entry.unavailable_reasons(probe=probe)
    if reasons:
        return "no", "; ".join(reasons)
    online = _online(entry, source_urls)
    unprobed = f" (online, not probed: {', '.join(online)}; --probe asks them)" if online and not probe else ""
    return "yes", entry.description + unprobed


def build_config(args: argparse.Namespace) -> RunConfig:
    """The config file with the flags over it, its audit's own sections validated by the audit."""
    from audits import get_audit
    from audits.base import configure
    from cluster.run_config import load_config, override
    from verifiers import load_plugins

    config = load_config(args.config)
    systems = parse_systems_flag(args.systems) if args.systems else None
    plugins = [m.strip() for m in args.plugins.split(",") if m.strip()] if args.plugins else None
    config = override(
        config,
        corpus_path=args.corpus_path, corpus_format=args.corpus_format, corpus_name=args.corpus_name,
        corpus_split=args.corpus_split, systems=systems, storage=args.storage, tracking_uri=args.tracking_uri,
        experiment=args.experiment, snapshot=args.snapshot, workers=args.workers, shard_size=args.shard_size,
        cpus_per_worker=args.cpus_per_worker, max_attempts=args.max_attempts, eval_mode=args.eval_mode,
        bootstrap=args.bootstrap, plugins=plugins, ray_address=args.ray_address, allow_incomplete=args.allow_incomplete,
    )  # fmt: skip
    load_plugins(config.plugins)  # a plug-in may register the audit kind the config names
    return configure(get_audit(config.audit), config)


def init_ray(target) -> None:
    """Connect to (or start) Ray for a target resolved by cluster.ray_address."""
    from ray.job_config import JobConfig

    from cluster.ray_address import in_submitted_job
    from cluster.ray_address import init_ray as connect

    # A submitted job already ships the repository as its working_dir. A driver started here
    # (local Ray, or RAY_ADDRESS to a cluster on this machine) puts the repository on the
    # workers' path instead, so plugin modules import there as they do here.
    job_config = None if in_submitted_job() else JobConfig(code_search_path=[str(REPO_ROOT)])
    connect(target, job_config=job_config, logging_level="WARNING")


def validate_systems(config: RunConfig, audit: Audit) -> list[str]:
    """Every configured system known, reading the audit's kind of item, its arguments accepted by
    its factory, its needs met."""
    from verifiers import get_entry

    problems = []
    for s in config.systems:
        try:
            entry = get_entry(s.name)
        except KeyError as exc:
            problems.append(exc.args[0])
            continue
        if wrong_kind := entry.kind_problem(audit.item_kinds):
            problems.append(f"system '{s.label or s.name}': {wrong_kind}, and audit '{audit.name}' holds "
                            f"{' and '.join(audit.item_kinds)} items")  # fmt: skip
            continue
        reasons = entry.unavailable_reasons(s.args, probe=False)
        problems += [f"system '{s.label or s.name}': {r}" for r in reasons]
        if any(r.startswith("missing argument") for r in reasons):
            problems.append(f"hint: give arguments as --systems '{s.name}:KEY=VALUE,...' or args = {{ KEY = VALUE }} "
                            "under [[systems]] in the config")  # fmt: skip
    return problems


def make_services(config: RunConfig, audit: Audit):
    """The run's one `RunServices`, keyed by what identifies the run (not by runtime settings)."""
    from cluster.services_builder import build_services, resolve_cache_dir, run_key
    from verifiers import SystemSpec

    systems = sorted(SystemSpec(s.name, s.args).config_hash() for s in config.systems)
    # what is audited (the audit says what of its own sections counts), never runtime settings
    key = run_key(config.audit, config.corpus.name or config.corpus.path, *audit.identity(config), config.snapshot,
                  systems)  # fmt: skip
    return build_services(config.llm, key, config.snapshot, cache_dir=resolve_cache_dir(config.llm))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    held: list = []  # the run's services, released whatever happens once they exist
    try:
        return _run(args, started, held)
    finally:
        if held:
            from cluster.services_builder import release_services

            for services in held:
                release_services(services)


def _run(args: argparse.Namespace, started: float, held: list) -> int:
    from audits import UnknownAudit, get_audit
    from cluster.ray_address import RayAddressError, resolve_ray_address
    from cluster.run_config import ConfigError
    from cluster.services_builder import budget_refused

    # Everything a user can get wrong is checked here, before any cluster starts.
    try:
        config = build_config(args)
        if args.list_systems:
            return list_systems(config.plugins, verbose=args.verbose, probe=args.probe)
        audit = get_audit(config.audit)  # the config's plugins are loaded: a plug-in's kind is known
        problems = validate_systems(config, audit)
        if problems:
            for problem in problems:
                print(problem if problem.startswith("hint:") else f"error: {problem}", file=sys.stderr)
            return EXIT_BAD_INPUT
        target, corpus = None, None
        if not audit.corpus_needs_cluster:  # a bad corpus is named before storage is touched
            corpus = audit.build_corpus(config, None)
        problem = preflight(config)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if corpus is None:  # built on Ray (paper injection), with the run's services
            target = resolve_ray_address(config.ray_address)
            init_ray(target)
            held.append(make_services(config, audit))
            corpus = audit.build_corpus(config, held[0])
            if refused := budget_refused(held[0]):  # a corpus missing proposals is another corpus
                print(f"[budget] stopped while building the corpus: {refused}; submit the same run again to resume",
                      flush=True)  # fmt: skip
                return EXIT_BUDGET
    except (ConfigError, RayAddressError, FileNotFoundError, ValueError, ModuleNotFoundError, UnknownAudit) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for err in corpus.errors:
        print(f"[input] {err}", file=sys.stderr)
    print(f"[corpus] {corpus.name}@{corpus.version}: {corpus.num_items} items ({len(corpus.errors)} unreadable)", flush=True)

    from cluster.run_plan import planned_run_ids, resume_conflicts
    from verifiers import SystemSpec

    specs = [SystemSpec(s.name, s.args, s.label) for s in config.systems]
    try:
        run_ids = planned_run_ids(config, corpus, specs)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    conflicts = resume_conflicts(config, corpus, specs)
    if conflicts:
        for conflict in conflicts:
            print(f"error: {conflict}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        target = target or resolve_ray_address(config.ray_address)
    except RayAddressError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return run(audit, config, corpus, specs, run_ids, target, started, held, wait_for_lease=args.wait_for_lease)


def resolve_tracking_uri(config: RunConfig) -> str | None:
    from storage.tracking import default_tracking_uri, tracking_uri_from_environment

    uri = config.tracking_uri or tracking_uri_from_environment() or default_tracking_uri()
    return None if uri.lower() == "none" else uri


def preflight(config: RunConfig) -> str | None:
    """Storage and tracking answer before any work (the cluster's side is checked once Ray is up)."""
    from cluster.preflight import (
        check_storage,
        check_tracking,
        key_needs,
        quick_mlflow_retries,
        register_keys,
    )

    quick_mlflow_retries()
    register_keys(key_needs((s.label or s.name, s.args) for s in config.systems))
    return check_storage(config.storage) or check_tracking(resolve_tracking_uri(config))


def publish_later_hint(config: RunConfig, summary, tracking_uri: str) -> str:
    from storage.redaction import redact_text

    failed = [s for s in summary.systems if s.tracking_error]
    return redact_text(
        f"TRACKING FAILED: {failed[0].tracking_error}\n"
        f"  outputs, scores and the report are stored; log them to MLflow when the server is back with:\n"
        f"  python jobs/publish_run.py --storage {config.storage} --run-ids {','.join(s.run_id for s in failed)} "
        f"--tracking-uri {tracking_uri} --experiment {config.experiment}"
    )


def run(audit: Audit, config: RunConfig, corpus, specs, run_ids: list[str], target, started: float, held: list, *,
        wait_for_lease: bool = False) -> int:  # fmt: skip
    from audits.base import AuditContext, BudgetStopped, finish_run
    from cluster.run_plan import plan_run
    from cluster.runner import WorkerStartError
    from cluster.services_builder import resolve_cache_dir
    from storage.filesystem import StorageError
    from storage.run_lease import LeaseHeld, LeaseLostError, RunLease
    from storage.store import Store
    from verifiers import RunContext

    lease = RunLease(Store(config.storage), run_ids)  # one driver per run
    try:
        lease.acquire(wait=wait_for_lease)
    except LeaseHeld as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (StorageError, OSError) as exc:  # storage failed between the preflight probe and the lease
        print(f"error: storage refused the run lease: {storage_failure(exc, config.storage)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    lease.release_at_exit()
    try:
        init_ray(target)
    except (ConnectionError, ValueError, RuntimeError) as exc:  # e.g. RAY_ADDRESS=auto with no cluster
        print(f"error: could not connect to Ray at {target.given or 'a new local Ray'}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    from cluster.preflight import check_keys_from_workers, check_storage_from_worker, key_needs

    # a node's environment is not the driver's; a local Ray's workers have the driver's (checked above)
    problem = None if target.is_local else (
        check_storage_from_worker(config.storage)
        or check_keys_from_workers(key_needs((s.label or s.name, s.args) for s in config.systems)))
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    cache_dir = resolve_cache_dir(config.llm)
    if not held:
        held.append(make_services(config, audit))
    services = held[0]  # one per run: every system, judge and the proposer share it

    def make_context(run_id: str) -> RunContext:
        return RunContext(run_id, config.snapshot, cache_dir, services)

    try:
        plan = plan_run(config, corpus, specs, make_context=make_context, lease=lease)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (StorageError, OSError) as exc:  # manifest, items or truth could not be written: nothing ran
        print(f"error: storage failed while writing the run plan: {storage_failure(exc, config.storage)}; nothing ran, "
              "run the same command again once storage is back", file=sys.stderr)  # fmt: skip
        return EXIT_BAD_INPUT
    try:
        outcome = audit.run_systems(config, corpus, plan)
    except WorkerStartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INCOMPLETE
    if outcome.lease_lost:
        return lease_lost(outcome.lease_lost, len(outcome.discarded))
    if outcome.auth_refused:  # a configuration mistake found by the first lookup: nothing is scored
        print(f"error: a source refused the run's credentials: {outcome.auth_refused}; fix the key and run the same "
              "command again (finished shards are kept)", file=sys.stderr)  # fmt: skip
        return EXIT_BAD_INPUT
    tracking_uri = resolve_tracking_uri(config)
    from storage.code_revision import current_revision
    from storage.run_publication import Submission

    # this submission's own start, config and code: its MLflow submission run says so (storage/tracking.py)
    submission = Submission(started_at=time.time() - (time.monotonic() - started), config=config.model_dump(),
                            code_revision=current_revision().label)  # fmt: skip
    try:
        lease.confirm()  # publishing is the owner's: a driver that lost the run leaves it to the new one
        with tempfile.TemporaryDirectory(prefix="scrutineer-report-") as tmp:
            summary = finish_run(audit, AuditContext(
                config=config, corpus=corpus, plan=plan, outcome=outcome, services=services, cache_dir=cache_dir,
                tracking_uri=tracking_uri, submission=submission, work_dir=Path(tmp), started=started))  # fmt: skip
    except BudgetStopped as stop:  # verdicts missing votes are not stored
        print(f"[budget] {stop}; submit the same run again to resume", flush=True)
        return EXIT_BUDGET
    except LeaseLostError as lost:
        return lease_lost(str(lost), 0)
    except (StorageError, OSError) as exc:
        if (failure := storage_failure(exc, config.storage, outage_only=True)) is None:
            raise
        print(f"error: storage failed while publishing the results: {failure}; the shards' outputs are kept: "
              "run the same command again once storage is back (nothing is recomputed)", file=sys.stderr)  # fmt: skip
        return EXIT_INCOMPLETE
    if lease.lost:  # taken over while publishing: the new owner publishes again
        return lease_lost(f"run {lease.lost[0]} is no longer this driver's: its lease is held by "
                          f"{lease.lost_to.get(lease.lost[0], 'another driver')}", 0)  # fmt: skip
    print(summary.render(), flush=True)
    status = exit_status(outcome, summary)
    if tracking_uri and any(s.tracking_error for s in summary.systems):
        print(publish_later_hint(config, summary, tracking_uri), file=sys.stderr, flush=True)
        # failed shards and budget stops say more about the work; otherwise the tracking gap is the news
        return EXIT_NOT_TRACKED if status in (EXIT_OK, EXIT_ERRORED_ITEMS) else status
    return status


def lease_lost(why: str, discarded: int) -> int:
    print(f"error: lease lost: {why}. This driver was stalled (frozen, or cut off from storage) past the lease's "
          f"TTL and another driver took the run over; it stopped handing out shards and discarded the writes of "
          f"{discarded} shards in flight. The new owner carries the run on: nothing to do here.",
          file=sys.stderr, flush=True)  # fmt: skip
    return EXIT_LEASE_LOST


_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO}
"""A local disk that cannot take a write (the report's scratch folder too)."""


def storage_failure(exc: BaseException, storage_uri: str, *, outage_only: bool = False) -> str | None:
    """One line for a storage read or write that failed: the path and why. With `outage_only`, None
    for an error that is not storage's (a bug keeps its traceback)."""
    from storage.filesystem import StorageError, classify_storage_error, is_remote

    if isinstance(exc, StorageError):  # the store's own writes say which path already
        return str(exc)
    if isinstance(exc, OSError) and exc.errno in _DISK_ERRNOS:  # a disk full or read-only, the scratch one too
        return f"{exc.filename or storage_uri}: {exc.strerror or exc}"
    if is_remote(storage_uri) and (classified := classify_storage_error(exc, storage_uri, local=False)):
        return str(classified)  # pyarrow's S3 reads: connection refused, 5xx
    if outage_only:
        return None
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:300] if text else ''}"


def exit_status(outcome, summary) -> int:
    if outcome.stopped_by_budget:
        return EXIT_BUDGET
    if not outcome.complete or summary.withheld:
        return EXIT_INCOMPLETE
    if summary.audit_invalid_reasons:  # the controls refute the figures (issue 21)
        return EXIT_AUDIT_INVALID
    return EXIT_ERRORED_ITEMS if summary.errored_items else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
