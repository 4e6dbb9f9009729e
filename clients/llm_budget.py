"""A run's spending limit in dollars and tokens, shared by every worker of the run.

Checked before starting (`preflight`: does the estimate of the remaining work fit?) and enforced
while running: the gateway calls `check()` before every paid request and `charge()` after it.
When the budget is reached `check()` raises `BudgetExhausted`; systems turn that into
`Output.failed(item_id, "budget exhausted ...", "budget")` for every item they did not finish, the
runner keeps such shards unpersisted and stops, and a resubmission resumes from the response
cache (nothing paid twice). Requests in flight when the limit is crossed still complete and are
charged, so the overshoot is at most one request per concurrent slot.

`BudgetLedger` holds the numbers (pure Python, thread-safe). `BudgetClient` is what systems hold:
picklable, it talks to one named Ray actor per budget name when Ray is initialized (so N workers
share one budget), else to a per-process ledger.

One budget per run: the name is deterministic (`llm_budget:<run key>`, get-or-create), so every
system, judge and proposer of a run that holds a client of that name draws from the same ledger.
With `persist_dir` (the run's cache directory) the spending is written after every charge and read
back when the ledger is made, so a resumed run continues from what was spent — by systems, judges
and the proposer alike, including requests whose shard never got stored.

Systems run on workers and turn a refusal into budget outputs; the proposer and the judges run in
the driver, whose client counts the refusals it raised (`refusals`), so the driver can tell that
a corpus or a set of verdicts is incomplete and stop the run the same way (exit 4).
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clients.process_state import PROCESS_STATE

__all__ = ["BudgetClient", "BudgetExhausted", "BudgetLedger", "budget_actor_name"]

NAMESPACE = "scrutineer"
_SPENT_FIELDS = ("spent_usd", "spent_tokens", "paid_requests", "unpriced_requests")


def budget_actor_name(name: str) -> str:
    """The Ray actor of budget `name` (deterministic: no random part)."""
    return f"llm_budget:{name}"


class BudgetExhausted(Exception):
    """The run's budget is spent; the message says what was spent against what limit."""


@dataclass
class BudgetLedger:
    """Spent and allowed dollars and tokens. A limit of None is no limit."""

    usd: float | None = None
    tokens: int | None = None
    spent_usd: float = 0.0
    spent_tokens: int = 0
    paid_requests: int = 0
    unpriced_requests: int = 0
    """Requests whose model has no listed price (their tokens still count)."""
    persist: tuple[str, str] | None = None
    """(directory, name): where spending is kept across resumptions (None: in memory only)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if self.persist is not None:
            import diskcache

            with diskcache.Cache(self.persist[0]) as store:
                saved = store.get(f"budget:{self.persist[1]}") or {}
            for name in _SPENT_FIELDS:
                setattr(self, name, saved.get(name, getattr(self, name)))

    def _save(self) -> None:
        if self.persist is not None:
            import diskcache

            with diskcache.Cache(self.persist[0]) as store:
                store.set(f"budget:{self.persist[1]}", {n: getattr(self, n) for n in _SPENT_FIELDS})

    def set_limits(self, usd: float | None, tokens: int | None) -> None:
        with self._lock:
            self.usd, self.tokens = usd, tokens

    def exhausted_reason(self) -> str | None:
        with self._lock:
            if self.usd is not None and self.spent_usd >= self.usd:
                return f"spent ${self.spent_usd:.4f} of ${self.usd:.4f}"
            if self.tokens is not None and self.spent_tokens >= self.tokens:
                return f"spent {self.spent_tokens} of {self.tokens} tokens"
            return None

    def charge(self, usd: float | None, tokens: int) -> None:
        with self._lock:
            self.paid_requests += 1
            self.spent_tokens += tokens
            if usd is None:
                self.unpriced_requests += 1
            else:
                self.spent_usd += usd
            self._save()

    def preflight(self, estimate_usd: float | None, estimate_tokens: int) -> dict[str, Any]:
        """Does an estimate of the remaining work fit what is left? (fraction that fits, 0..1)."""
        with self._lock:
            fractions = [1.0]
            if self.usd is not None and estimate_usd:
                fractions.append(max(0.0, self.usd - self.spent_usd) / estimate_usd)
            if self.tokens is not None and estimate_tokens:
                fractions.append(max(0, self.tokens - self.spent_tokens) / estimate_tokens)
            fits = min(fractions)
            return {"fits": fits >= 1.0, "fraction_fits": min(1.0, fits), "estimate_usd": estimate_usd,
                    "estimate_tokens": estimate_tokens, **self._status()}  # fmt: skip

    def _status(self) -> dict[str, Any]:
        return {"usd": self.usd, "tokens": self.tokens, "spent_usd": self.spent_usd,
                "spent_tokens": self.spent_tokens, "paid_requests": self.paid_requests,
                "unpriced_requests": self.unpriced_requests}  # fmt: skip

    def status(self) -> dict[str, Any]:
        with self._lock:
            return self._status()


class BudgetActor:
    """One ledger behind a named Ray actor (never blocks)."""

    def __init__(self, usd: float | None, tokens: int | None, persist: tuple[str, str] | None = None) -> None:
        self.ledger = BudgetLedger(usd, tokens, persist=persist)

    async def set_limits(self, usd: float | None, tokens: int | None) -> dict[str, Any]:
        self.ledger.set_limits(usd, tokens)
        return self.ledger.status()

    async def exhausted_reason(self) -> str | None:
        return self.ledger.exhausted_reason()

    async def charge(self, usd: float | None, tokens: int) -> None:
        self.ledger.charge(usd, tokens)

    async def preflight(self, estimate_usd: float | None, estimate_tokens: int) -> dict[str, Any]:
        return self.ledger.preflight(estimate_usd, estimate_tokens)

    async def status(self) -> dict[str, Any]:
        return self.ledger.status()


_LOCAL_LOCK = threading.Lock()


class BudgetClient:
    """What a system holds. Picklable; the first holder to resolve a name sets its limits.

    Args:
        name: budget identity (use the run id): one ledger per name across the cluster.
        usd: dollar limit (None: none).
        tokens: token limit, input plus output (None: none).
        local: force the per-process ledger (True) or the Ray actor (False); None: the actor
            when Ray is initialized in this process.
        persist_dir: directory whose diskcache keeps the spending across resumptions (None: none).
    """

    def __init__(self, name: str, usd: float | None = None, tokens: int | None = None, *,
                 local: bool | None = None, persist_dir: str | None = None) -> None:  # fmt: skip
        self.name, self.usd, self.tokens, self.local = name, usd, tokens, local
        self.persist_dir = persist_dir
        self.refusals = 0
        """Requests this process's copy refused (`check()` raised): a driver-side phase (proposer,
        judges) that saw one is incomplete and must stop the run as a system's shard does."""
        self._ledger: BudgetLedger | None = None
        self._handle: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_ledger": None, "_handle": None, "refusals": 0}

    def _resolve(self) -> tuple[BudgetLedger | None, Any]:
        if self._ledger is None and self._handle is None:
            ray = sys.modules.get("ray")
            use_local = not (ray is not None and ray.is_initialized()) if self.local is None else self.local
            if use_local:
                with _LOCAL_LOCK:
                    ledger = PROCESS_STATE.budget_ledgers.get(self.name)
                    if ledger is None:
                        ledger = PROCESS_STATE.budget_ledgers[self.name] = BudgetLedger(self.usd, self.tokens, persist=self._persist())
                    self._ledger = ledger
            else:
                import ray

                self._handle = ray.remote(BudgetActor).options(
                    name=budget_actor_name(self.name), namespace=NAMESPACE, get_if_exists=True,
                    lifetime="detached", num_cpus=0,
                ).remote(self.usd, self.tokens, self._persist())  # fmt: skip
        return self._ledger, self._handle

    def _persist(self) -> tuple[str, str] | None:
        return None if self.persist_dir is None else (str(Path(self.persist_dir).resolve()), self.name)

    def start(self) -> dict[str, Any]:
        """Create (or find) the ledger now and give it this client's limits, so an actor left by an
        interrupted driver takes the limits configured for this submission. Returns its status."""
        ledger, handle = self._resolve()
        if ledger is not None:
            ledger.set_limits(self.usd, self.tokens)
            return ledger.status()
        import ray

        return ray.get(handle.set_limits.remote(self.usd, self.tokens))

    async def check(self) -> None:
        """Raise `BudgetExhausted` when nothing is left."""
        ledger, handle = self._resolve()
        reason = ledger.exhausted_reason() if ledger is not None else await handle.exhausted_reason.remote()
        if reason:
            self.refusals += 1
            raise BudgetExhausted(f"budget exhausted: {reason}")

    async def charge(self, usd: float | None, tokens: int) -> None:
        ledger, handle = self._resolve()
        if ledger is not None:
            ledger.charge(usd, tokens)
        else:
            await handle.charge.remote(usd, tokens)

    async def preflight(self, estimate_usd: float | None, estimate_tokens: int) -> dict[str, Any]:
        ledger, handle = self._resolve()
        if ledger is not None:
            return ledger.preflight(estimate_usd, estimate_tokens)
        return await handle.preflight.remote(estimate_usd, estimate_tokens)

    async def status(self) -> dict[str, Any]:
        ledger, handle = self._resolve()
        return ledger.status() if ledger is not None else await handle.status.remote()

    def kill(self) -> None:
        """Remove the shared actor (after the run finished for good)."""
        _, handle = self._resolve()
        if handle is not None:
            import ray

            ray.kill(handle)
        with _LOCAL_LOCK:
            PROCESS_STATE.budget_ledgers.pop(self.name, None)
