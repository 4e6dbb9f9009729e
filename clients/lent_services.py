"""`RunServices`: what one run lends every system, judge and proposer, typed.

One object per run, made by the driver (`cluster/services_builder.py: build_services`) and handed
to every component through `RunContext.services`:

* `limiter` — the cluster-wide limiter (one named Ray actor): per source (and API key) with each
  source's polite default (`clients.source_catalog.POLITE_RPM`, overridable per run), per model
  (and server, and key) for LLMs. N workers together send at the configured rate, not N times it.
* the response cache — one diskcache directory for model answers (keyed by model, server,
  weights, messages, parameters) and source answers (keyed by request and the snapshot policy
  `source_scope`: a new snapshot date asks the sources again, a resumed run asks nothing). Each
  node has its own directory; what every node shares is the run's storage: a finished shard exports
  the entries it touched to `<run_id>/answers/` and a worker imports them before each shard
  (`clients/answer_exchange.py`), so a lost node loses no paid answer.
* the outage guard — one per run in each worker process (`outage_guard()`), so every shard a
  worker runs for the run shares its error window; outputs that depended on a refused or failed
  lookup carry `outage_sources`, which is how the driver learns the run is incomplete.
* `llm` — the gateway's services, holding the run's one `budget` (systems, judges and the
  proposer draw from it; see `clients/llm_budget.py`).
* the bibliographic sources by name for agentic systems (`bib_source`, `bib_sources`).

Nothing here changes what a system answers, so none of it enters run identity; what does change
answers (snapshot scope, model server, weights) enters the cache keys. The object is picklable
and rebuilds its per-process parts (cache handles, guard, source clients) in each worker.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from clients.http import HttpOptions
from clients.http_source import HttpSource
from clients.limiter import Limiter
from clients.llm_gateway import LLMServices
from clients.outage_guard import OutageGuard, OutageReport
from clients.process_state import PROCESS_STATE
from clients.response_cache import ResponseCache
from clients.source_catalog import SOURCE_CLASSES, make_source

__all__ = ["RunServices", "snapshot_scope"]

# Per-process state of a run lives in `PROCESS_STATE`, keyed by the run key: shared by every shard a worker runs.
_LOCK = PROCESS_STATE.lock


def snapshot_scope(snapshot: str, replay_snapshot: str | None = None) -> str:
    """The cache scope of source answers: the run's snapshot, or the date it replays."""
    return f"snapshot:{replay_snapshot or snapshot}"


@dataclass
class RunServices:
    """The run's shared services (see the module docstring), typed; the only form
    `RunContext.services` takes (an isolated run gets one with no limiter, cache or budget)."""

    run_key: str
    """Identity of the run for shared state (budget actor, outage guard): deterministic, so a
    resubmission finds the same budget."""
    snapshot: str
    """The run's snapshot date."""
    cache_dir: str | None = None
    """The response cache directory (LLM and source answers); None: no cache."""
    limiter: Limiter | None = None
    """The cluster-wide limiter (`cluster.rate_limiter.LimiterClient`)."""
    llm: LLMServices = field(default_factory=LLMServices)
    """What the LLM gateway uses: the same limiter, the run's budget, self-hosted backends."""
    source_scope: str = ""
    """Snapshot policy of cached source answers (`snapshot:<date>`); empty: the run's snapshot."""
    source_frozen: bool = False
    """Source answers from the cache only (a replayed snapshot, or `replay_only`)."""
    source_names: tuple[str, ...] = tuple(SOURCE_CLASSES)
    """Sources an agentic system gets when it names none."""
    source_base_urls: dict[str, str] = field(default_factory=dict)
    """Base URL per source (mirrors, 127.0.0.1 replay servers); a URL does not change answers."""
    source_timeout: float = 15.0
    """Seconds per source request attempt."""
    guard_settings: dict[str, float] = field(default_factory=dict)
    """`OutageGuard` settings (window_seconds, threshold, min_events, cooldown_seconds)."""
    model_backends: list[Any] = field(default_factory=list)
    """Self-hosted model actors this run started (released when the run ends)."""
    lent_sources: dict[str, Any] = field(default_factory=dict)
    """Source objects lent as they are, before the catalogue's (in-process runs: recorded or
    in-memory sources); name them in `source_names` to make them the default set."""

    @property
    def budget(self) -> Any:
        """The run's one budget (`clients.llm_budget.BudgetClient`), or None."""
        return self.llm.budget

    # -- per-process parts ----------------------------------------------------------------------
    def _scope(self) -> str:
        return self.source_scope or snapshot_scope(self.snapshot)

    def outage_guard(self) -> OutageGuard:
        """This process's guard for the run (one error window per source for all its shards)."""
        with _LOCK:
            guard = PROCESS_STATE.guards.get(self.run_key)
            if guard is None:
                guard = PROCESS_STATE.guards[self.run_key] = OutageGuard(**self.guard_settings)
            return guard

    def outage_report(self) -> OutageReport:
        """What this process's guard saw for the run."""
        return self.outage_guard().report()

    def response_cache(self) -> ResponseCache | None:
        """The source-answer view of the run's cache (scoped by the snapshot policy)."""
        if not self.cache_dir:
            return None
        key = (self.run_key, self.cache_dir, self.source_frozen, self._scope())
        with _LOCK:
            cache = PROCESS_STATE.response_caches.get(key)
            if cache is None:
                cache = ResponseCache(self.cache_dir, frozen=self.source_frozen, scope=self._scope())
                PROCESS_STATE.response_caches[key] = cache
            return cache

    def http_options(self, base: HttpOptions | None = None) -> HttpOptions:
        """HTTP options of a source in this run: the run's limiter, cache and guard, filled into
        whatever the system configured (a system's own transport, retry or guard is kept)."""
        base = base or HttpOptions(timeout=self.source_timeout)
        return dataclasses.replace(
            base, limiter=base.limiter or self.limiter, cache=base.cache or self.response_cache(),
            guard=base.guard or self.outage_guard(),
        )  # fmt: skip

    def lends(self, name: str) -> bool:
        """Whether `bib_source(name)` answers: a lent source or one of the catalogue's."""
        return name in self.lent_sources or name in SOURCE_CLASSES

    def bib_source(self, name: str, base_url: str | None = None, http: HttpOptions | None = None) -> HttpSource:
        """The named source: a lent one, else the catalogue's online source bound to this run's
        services (one per process, per base URL, when the system configured no HTTP options of its own)."""
        if name in self.lent_sources:
            return self.lent_sources[name]
        url = base_url or self.source_base_urls.get(name)
        if http is not None:
            return make_source(name, self.http_options(http), base_url=url)
        key = (self.run_key, name, url)
        with _LOCK:
            source = PROCESS_STATE.sources.get(key)
        if source is None:
            source = make_source(name, self.http_options(), base_url=url)
            with _LOCK:
                source = PROCESS_STATE.sources.setdefault(key, source)
        return source

    def bib_sources(self, names: list[str] | tuple[str, ...] | None = None) -> dict[str, HttpSource]:
        """Sources by name for agentic systems (default: the run's `source_names`)."""
        return {n: self.bib_source(n) for n in (names or self.source_names)}

    def network_calls(self) -> dict[str, int]:
        """Requests this process's run sources sent, per source (cache hits excluded)."""
        with _LOCK:
            return {name: s.network_calls for (key, name, _), s in PROCESS_STATE.sources.items() if key == self.run_key}

    def forget_process_state(self) -> None:
        """Drop this process's guard, cache handles and source clients of the run."""
        PROCESS_STATE.forget_run(self.run_key)
