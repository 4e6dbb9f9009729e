"""`ProcessState`: what one process keeps across the runs and shards it serves, owned by one object.

A Ray worker runs many shards, of one run or several; some state must outlive a shard and be
shared by all of them in that process: the outage guard of each run (one error window for all its
shards), open response-cache handles and source clients, the cache keys a shard read or wrote (what
it exports), the answer files already imported, the local budget ledgers and limiter states (when
no Ray cluster holds them), and the litellm models already warmed up. They used to be eight module
globals in five modules, dropped only piecemeal. Now they are the fields of `PROCESS_STATE`, made
once per process (at import) and emptied by it:

* `forget_run(run_key)` when a run ends in this process (its guard, cache handles, source clients);
* `reset()` to start clean (tests between cases; a process reused for unrelated work).

Nothing here changes an answer: the state saves work and shares error windows; dropping it costs
at most a repeated import or a fresh error window.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clients.http_source import HttpSource
    from clients.llm_budget import BudgetLedger
    from clients.outage_guard import OutageGuard
    from clients.response_cache import ResponseCache

__all__ = ["PROCESS_STATE", "ProcessState"]


@dataclass
class ProcessState:
    """The per-process state (see the module docstring). Each field is guarded by the lock of the
    module that uses it; `reset` and `forget_run` take them all."""

    guards: dict[str, OutageGuard] = field(default_factory=dict)
    """Outage guard per run key (`clients.lent_services.RunServices.outage_guard`)."""
    response_caches: dict[tuple[str, str, bool, str], ResponseCache] = field(default_factory=dict)
    """Open source-answer caches per (run key, directory, frozen, scope)."""
    sources: dict[tuple[str, str, str | None], HttpSource] = field(default_factory=dict)
    """Source clients per (run key, source, base URL)."""
    touched_keys: dict[str, set[str]] = field(default_factory=dict)
    """Cache keys read or written per recorded cache directory (`clients.response_cache`)."""
    written_keys: dict[str, list[str]] = field(default_factory=dict)
    """Cache keys written (paid answers), in order, per watched cache directory."""
    imported_answer_files: set[tuple[str, str, str, str, int, int]] = field(default_factory=set)
    """Answer files imported, per (store, folder, cache directory, path, size, mtime)."""
    budget_ledgers: dict[str, BudgetLedger] = field(default_factory=dict)
    """Local budget ledgers by budget name (no Ray cluster: `clients.llm_budget.BudgetClient`)."""
    limiter_states: dict[str, Any] = field(default_factory=dict)
    """Local limiter states by limiter name (no Ray cluster: `cluster.rate_limiter.LimiterClient`)."""
    warmed_models: set[tuple[str, str | None]] = field(default_factory=set)
    """(model, API base) pairs litellm already warmed up (`clients.llm_litellm`)."""
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    """Taken by `reset` and `forget_run` (the modules' own locks guard their reads and writes)."""

    def forget_run(self, run_key: str) -> None:
        """Drop this process's guard, cache handles and source clients of one run."""
        with self.lock:
            self.guards.pop(run_key, None)
            for key in [k for k in self.response_caches if k[0] == run_key]:
                self.response_caches.pop(key).close()
            for key in [k for k in self.sources if k[0] == run_key]:
                self.sources.pop(key)

    def reset(self) -> None:
        """Empty every field (closing open caches), in place: holders of a field see it empty."""
        with self.lock:
            for cache in self.response_caches.values():
                cache.close()
            for value in (self.guards, self.response_caches, self.sources, self.touched_keys, self.written_keys,
                          self.imported_answer_files, self.budget_ledgers, self.limiter_states, self.warmed_models):
                value.clear()  # fmt: skip

    def sizes(self) -> dict[str, int]:
        """Entries per field (what a long-lived process holds)."""
        return {name: len(getattr(self, name)) for name in self.__dataclass_fields__ if name != "lock"}


PROCESS_STATE = ProcessState()
"""The one per-process state (made at import: each Ray worker process has its own)."""
