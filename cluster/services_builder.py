"""What a run lends its systems across the cluster, built once by the driver from the `[llm]`
table of a run config: one `clients.lent_services.RunServices` — the cluster rate limiter (sources
at their polite defaults, models at `[llm.limits]`), the response cache (LLM and source answers;
source answers scoped by snapshot), the outage guard settings, the one budget of the run (systems,
judges and proposer together, across resumptions) and the self-hosted model actors. The driver
hands the same object to every system (through `RunContext.services`), judge and proposer, and
releases what it started with `release_services` when the job ends.

None of this changes a system's answers, so none of it enters run identity. What does change them
enters the cache keys: the snapshot scope of source answers (`replay_snapshot`), a model's API base
and a self-hosted model's weights fingerprint.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from clients.lent_services import RunServices


class RateLimit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rpm: float | None = Field(None, description="requests per minute")
    tpm: float | None = Field(None, description="tokens per minute")


class SelfHostedModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="systems reach it as model 'self/<name>'")
    kind: Literal["llamacpp", "vllm"] = Field(description="llamacpp (CPU nodes) or vllm (GPU nodes)")
    args: dict[str, Any] = Field(default_factory=dict, description="backend arguments (model_path, n_ctx, tensor_parallel_size, ...)")
    accelerator_type: str | None = Field(None, description="Ray accelerator label for GPU actors")
    keep_alive: bool = Field(False, description="leave the actor running after the job (later jobs with the "
                             "same spec and weights share it); default: released when the job ends")


class OutageSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    window_seconds: float = Field(60.0, gt=0, description="how far back lookup outcomes count")
    threshold: float = Field(0.5, gt=0, le=1, description="failed fraction that marks a source down")
    min_events: int = Field(5, ge=1, description="fewest outcomes in the window before deciding")
    cooldown_seconds: float = Field(120.0, gt=0, description="how long a source stays down before a probe")


class LLMConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cache_dir: str = Field("./cache", description="response cache (LLM and bibliographic sources); reused on resume")
    replay_only: bool = Field(False, description="pinned snapshot: answer from the cache only, a miss is an error")
    budget_usd: float | None = Field(None, ge=0, description="dollar budget per run, across resumptions")
    budget_tokens: int | None = Field(None, ge=0, description="token budget per run, across resumptions")
    concurrency: int = Field(8, ge=1, description="requests in flight per worker")
    timeout_s: float = Field(120.0, gt=0, description="seconds one model request may take before it is retried")
    limits: dict[str, RateLimit] = Field(default_factory=dict, description="rate limit per model string")
    self_hosted: list[SelfHostedModel] = Field(default_factory=list, description="open-weights models run as Ray actors")
    replay_snapshot: str | None = Field(None, description="answer bibliographic lookups from the cache of this "
                                        "snapshot date (YYYY-MM-DD) instead of the run's own; replay only")
    sources: list[str] = Field(default_factory=lambda: ["crossref", "openalex", "dblp", "arxiv", "semantic_scholar",
                                                        "doi_org"],
                               description="sources lent to agentic systems that name none")  # fmt: skip
    source_base_urls: dict[str, str] = Field(default_factory=dict, description="base URL per source (mirror, replay server)")
    source_limits: dict[str, RateLimit] = Field(default_factory=dict,
                                                description="rate per source, replacing its polite default (rpm)")
    source_timeout: float = Field(15.0, gt=0, description="seconds per source request attempt")
    outage: OutageSettings = Field(default_factory=OutageSettings, description="outage guard of the run's sources")


def resolve_cache_dir(llm: LLMConfig) -> str:
    """Absolute, so every worker (in its own working directory) uses the same cache. Not created
    here: the caches create it when they first open it, so a run that caches nothing leaves no
    empty ./cache behind."""
    return str(Path(llm.cache_dir).expanduser().resolve())


def run_key(*parts: Any) -> str:
    """A run's deterministic identity for shared state (budget actor, ledger, outage guard): a hash
    of what identifies the run (corpus, snapshot, systems' config hashes), never a random part."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def build_services(llm: LLMConfig, key: str, snapshot: str = "", *, cache_dir: str | None = None,
                   limiter_name: str | None = None) -> RunServices:
    """The one `RunServices` of a run (make it once; give it to every system, judge and proposer).

    The budget is named after `key` and keeps its spending in the cache directory, so a resumed
    run continues from what every component spent and never pays twice or overspends.
    """
    from clients.lent_services import RunServices, snapshot_scope
    from clients.llm_budget import BudgetClient
    from clients.llm_gateway import LLMServices
    from cluster.model_actors import ModelSpec, start_model_actor
    from cluster.rate_limiter import LimiterClient

    cache_dir = cache_dir or resolve_cache_dir(llm)
    limiter = LimiterClient(limiter_name) if limiter_name else LimiterClient()  # one per cluster by default
    budget = None
    if llm.budget_usd is not None or llm.budget_tokens is not None:
        budget = BudgetClient(key, llm.budget_usd, llm.budget_tokens, persist_dir=cache_dir)
        budget.start()
    started = {m.name: (m, start_model_actor(ModelSpec(m.name, m.kind, m.args, m.accelerator_type)))
               for m in llm.self_hosted}  # fmt: skip
    for name, limit in llm.source_limits.items():
        asyncio.run(limiter.configure(name, limit.rpm, limit.tpm))  # replaces the polite default
    replay = llm.replay_snapshot if llm.replay_snapshot and llm.replay_snapshot != snapshot else None
    services = LLMServices(
        limiter=limiter,
        limits={model: (lim.rpm, lim.tpm) for model, lim in llm.limits.items()},
        budget=budget,
        backends={name: backend for name, (_, backend) in started.items()},
        replay_only=llm.replay_only,
        concurrency=llm.concurrency,
        timeout_s=llm.timeout_s,
    )
    return RunServices(
        run_key=key, snapshot=snapshot, cache_dir=cache_dir, limiter=limiter, llm=services,
        source_scope=snapshot_scope(snapshot, replay), source_frozen=llm.replay_only or replay is not None,
        source_names=tuple(llm.sources), source_base_urls=dict(llm.source_base_urls),
        source_timeout=llm.source_timeout, guard_settings=llm.outage.model_dump(),
        model_backends=[backend for m, backend in started.values() if not m.keep_alive],
    )  # fmt: skip


def release_services(services: RunServices) -> None:
    """Release what the run started: the budget actor (its spending stays in the cache directory),
    the model actors not marked `keep_alive`, and this process's state of the run (outage guard,
    open cache handles, source clients), so a second run in the same process starts clean."""
    from cluster.model_actors import stop_model_actor

    if services.llm.budget is not None:
        services.llm.budget.kill()
    for backend in services.model_backends:
        stop_model_actor(backend)
    services.forget_process_state()


DRIVER_ANSWERS = "driver-answers"
"""Folder of the run's storage holding what the driver paid for (proposer, judges), per work key."""


@contextmanager
def driver_answers(services: RunServices | None, storage_uri: str, key: str, phase: str) -> Iterator[None]:
    """Around a phase the driver pays for itself (the proposer building the corpus, the judges
    adjudicating): first import the answers exported for `key` into the run's cache, so a resumed
    or replayed run on a node that never saw them asks nothing again; while it runs, export each
    paid answer as it arrives (batch files, `clients/answer_exchange.py: AnswerFlusher`), so a
    driver killed mid-phase loses only the calls on the wire; afterwards (also when the phase stops
    at the budget or fails) export what the phase paid for or read in one file, as a shard does,
    and delete the batch files.

    `key` names the work (e.g. a hash of the papers, seed, proposer and snapshot), not the run's
    runtime settings, so a resubmission finds it."""
    from clients.answer_exchange import AnswerFlusher, export_answers, import_answers
    from clients.response_cache import drain_touched, record_touched
    from storage.store import Store

    directory = services.cache_dir if services is not None else None
    if not directory:
        yield
        return
    store, folder = Store(storage_uri), f"{DRIVER_ANSWERS}/{key}"
    record_touched(directory)
    drain_touched(directory)  # what earlier phases touched is theirs
    imported = import_answers(store, folder, directory)
    for skipped in imported.skipped:
        print(f"[answers] skipped: {skipped}", flush=True)
    flusher = AnswerFlusher(store, folder, phase, [directory])
    try:
        with flusher:
            yield
    finally:
        export_answers(store, folder, phase, [directory])
    flusher.discard_parts()  # the phase's file holds every batch's answers


def budget_refused(services: RunServices | None) -> str | None:
    """Why a driver-side phase is incomplete: the run's budget refused one of its requests (the
    proposer or a judge got `BudgetExhausted`); None when it refused none in this process."""
    budget = services.budget if services is not None else None
    if budget is None or not budget.refusals:
        return None
    status = asyncio.run(budget.status())
    spent = f"${status['spent_usd']:.4f}" + (f" of ${status['usd']:.4f}" if status["usd"] is not None else "")
    return f"{budget.refusals} requests refused by the run's budget (spent {spent}, {status['spent_tokens']} tokens)"
