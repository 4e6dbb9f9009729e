"""The one rate limiter for the whole Ray cluster: token buckets per key, in one named actor.

Keys name whatever a limit applies to: a source (`crossref`), a source and key
(`semantic_scholar:key=ab12…` — hash it, never put the key itself), a provider and model
(`openai/gpt-4o`). Each key may have a requests-per-minute and a tokens-per-minute bucket.

Reservations, not sleeps: `reserve` debits the buckets at once (they may go negative, i.e. into
the future) and returns how long the caller must wait before sending; the caller sleeps locally.
The actor therefore never blocks, and N workers sharing a key are spaced exactly as one would be.

Paced under the limit, never bursting at start: the limiter spaces requests at `headroom` (98 %)
of the configured rate, and a newly configured key's request bucket holds one request, not a full
burst. A server counting at exactly the limit sees every late request bunch with the next on-time
one (send overhead varies by tens to hundreds of milliseconds on a loaded host); at 100 % each such
bunch spends the server's slack for good and the run ends in 429s, and a full client bucket at
start spends that slack at once (a server whose own bucket is the same size sees twice its rate in
the first second). The 2 % gives the server's bucket its slack back; measured with 8 workers on
two hosts (tests/multihost/test_multihost_rate_limits.py, bench/bench_multihost_rate.py).

Adaptive: a 429 episode multiplies the key's effective rate by `backoff` (0.7) (down to `min_factor` of the configured
rate) and pushes the bucket's timeline past `retry_after`; the rate then recovers linearly to the
configured value over `recovery_seconds`. A report with `rate_limited=False` and a `retry_after`
(a rate-limit header at zero, with a reset time) pauses the key without the penalty. An
`announced_rpm` from response headers lowers the configured limit when it is stricter.

One code path: `LimiterState` holds the buckets. `RateLimiterActor` (async Ray actor, named
`rate_limiter` in namespace `scrutineer`, get-or-create, detached) wraps one; `LimiterClient`
talks to the actor when Ray is initialized and to a per-process `LimiterState` otherwise.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from clients.process_state import PROCESS_STATE

__all__ = [
    "DEFAULT_BURST_SECONDS",
    "DEFAULT_HEADROOM",
    "DEFAULT_NAME",
    "NAMESPACE",
    "KeyLimits",
    "LimiterClient",
    "LimiterState",
    "TokenBucket",
]

NAMESPACE = "scrutineer"
DEFAULT_NAME = "rate_limiter"
DEFAULT_HEADROOM = 0.98
"""Share of a configured limit the cluster limiter paces at (see the module docstring)."""
DEFAULT_BURST_SECONDS = 0.5
"""Bucket size of a key the cluster limiter is told no other, in seconds of its rate: smaller
than the server's own allowance (commonly one second's worth). After an idle spell both buckets
are full; a client bucket as large as the server's spends all of the server's slack in one burst,
and the next late request is refused (measured: 429s in every pause between shards at 1.0 s)."""


@dataclass
class TokenBucket:
    """A refilling bucket whose level may go negative (reservations ahead of time)."""

    capacity: float
    """Most tokens that can accumulate (the allowed burst)."""
    level: float
    """Tokens available now; negative = already promised to reservations in the future."""
    stamp: float
    """Monotonic time `level` was last brought up to date."""

    def refill(self, now: float, rate: float) -> None:
        if now > self.stamp:
            self.level = min(self.capacity, self.level + (now - self.stamp) * rate)
            self.stamp = now

    def reserve(self, amount: float, now: float, rate: float) -> float:
        """Debit `amount`; return seconds until it is covered (0 if available now)."""
        self.refill(now, rate)
        self.level -= amount
        return 0.0 if self.level >= 0 else -self.level / rate

    def push_back(self, seconds: float, now: float, rate: float) -> None:
        """Make the next reservation wait at least `seconds` from now (used after a 429).

        At least, not in addition: reservations already further out stay where they are, so a
        burst of 429s answered with the same Retry-After pauses the key once, not once per 429.
        """
        self.refill(now, rate)
        self.level = min(self.level, -seconds * rate)


@dataclass
class KeyLimits:
    """Limits and adaptive state of one key."""

    rpm: float | None = None
    """Configured requests per minute (None: unlimited)."""
    tpm: float | None = None
    """Configured tokens per minute (None: unlimited)."""
    burst_seconds: float = 1.0
    """Bucket capacity in seconds of the rate (at least one request)."""
    factor: float = 1.0
    """Fraction of the configured rate in force right after the last penalty."""
    penalized_at: float | None = None
    blocked_until: float = 0.0
    requests: TokenBucket | None = None
    tokens: TokenBucket | None = None
    rate_limited_reports: int = 0
    reservations: int = 0

    def current_factor(self, now: float, recovery_seconds: float) -> float:
        if self.penalized_at is None:
            return 1.0
        recovered = self.factor + (now - self.penalized_at) / recovery_seconds
        return min(1.0, recovered)


@dataclass
class LimiterState:
    """Every key's buckets. Pure Python, thread-safe; used in the actor and in-process alike."""

    headroom: float = 1.0
    """Share of the configured rate actually paced (the cluster limiter uses DEFAULT_HEADROOM;
    1.0 keeps this class's arithmetic exact)."""
    min_factor: float = 0.1
    """Adaptive backoff never goes below this fraction of the configured rate."""
    backoff: float = 0.7
    """Multiplier applied to the effective rate on each 429 episode."""
    recovery_seconds: float = 30.0
    """Seconds to climb linearly from factor 0 back to the configured rate (0.7 -> 1 takes 9 s)."""
    coalesce_seconds: float = 1.0
    """429s reported within this long of the last penalty are one episode: penalized once (N
    workers bounced by the same burst must not divide the rate by 2**N)."""
    default_penalty: float = 1.0
    """Pause applied on a 429 that carried no Retry-After, seconds."""
    max_pause: float = 300.0
    """Cap on any pause taken from a server header, seconds."""
    keys: dict[str, KeyLimits] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _key(self, key: str) -> KeyLimits:
        limits = self.keys.get(key)
        if limits is None:
            limits = self.keys[key] = KeyLimits()
        return limits

    def _rates(self, limits: KeyLimits, now: float) -> tuple[float | None, float | None]:
        f = max(self.min_factor, limits.current_factor(now, self.recovery_seconds)) * self.headroom
        rps = limits.rpm / 60.0 * f if limits.rpm else None
        tps = limits.tpm / 60.0 * f if limits.tpm else None
        return rps, tps

    def configure(self, key: str, rpm: float | None = None, tpm: float | None = None,
                  burst_seconds: float = 1.0, now: float | None = None, *, if_unset: bool = False) -> None:  # fmt: skip
        """Set a key's limits. `if_unset`: only when the key has none yet (a client's defaults
        never override what the run configured)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            limits = self._key(key)
            if if_unset and (limits.rpm is not None or limits.tpm is not None):
                return
            if (limits.rpm, limits.tpm, limits.burst_seconds) == (rpm, tpm, burst_seconds) and (
                limits.requests is not None or limits.tokens is not None
            ):
                return  # every worker may configure at start-up: same limits keep their buckets
            limits.rpm, limits.tpm, limits.burst_seconds = rpm, tpm, burst_seconds
            # One request to start, not a full burst: the server's own bucket keeps its slack.
            limits.requests = TokenBucket(max(1.0, rpm / 60.0 * burst_seconds), 1.0, now) if rpm else None
            limits.tokens = (
                TokenBucket(tpm / 60.0 * burst_seconds, tpm / 60.0 * burst_seconds, now) if tpm else None
            )

    def reserve(self, key: str, requests: float = 1, tokens: float = 0, now: float | None = None) -> float:
        """Debit the key's buckets; return seconds the caller must wait before sending."""
        now = time.monotonic() if now is None else now
        with self._lock:
            limits = self._key(key)
            limits.reservations += 1
            rps, tps = self._rates(limits, now)
            wait = max(0.0, limits.blocked_until - now)
            if limits.requests is not None and rps and requests:
                wait = max(wait, limits.requests.reserve(requests, now, rps))
            if limits.tokens is not None and tps and tokens:
                wait = max(wait, limits.tokens.reserve(tokens, now, tps))
            return wait

    def report(self, key: str, rate_limited: bool = False, retry_after: float | None = None, *,
               tokens_delta: float = 0, announced_rpm: float | None = None,
               now: float | None = None) -> None:  # fmt: skip
        """Tell the limiter what a response said.

        Args:
            rate_limited: the server answered 429 (penalty: rate x `backoff`, slow recovery).
            retry_after: seconds the server asked to wait (Retry-After, or a reset header).
            tokens_delta: tokens used beyond (positive) or below (negative) what was reserved.
            announced_rpm: a limit the server announced in headers; adopted if stricter.
        """
        now = time.monotonic() if now is None else now
        with self._lock:
            limits = self._key(key)
            if announced_rpm and (limits.rpm is None or announced_rpm < limits.rpm):
                limits.rpm = announced_rpm
                cap = max(1.0, announced_rpm / 60.0 * limits.burst_seconds)
                if limits.requests is None:
                    limits.requests = TokenBucket(cap, cap, now)
                limits.requests.capacity = cap
                limits.requests.level = min(limits.requests.level, cap)
            pause = None if retry_after is None else min(max(retry_after, 0.0), self.max_pause)
            if rate_limited:
                limits.rate_limited_reports += 1
                recent = limits.penalized_at is not None and now - limits.penalized_at < self.coalesce_seconds
                if not recent:
                    current = limits.current_factor(now, self.recovery_seconds)
                    limits.factor = max(self.min_factor, current * self.backoff)
                    limits.penalized_at = now
                if pause is None:
                    pause = self.default_penalty
            rps, tps = self._rates(limits, now)
            if pause:
                limits.blocked_until = max(limits.blocked_until, now + pause)
                if limits.requests is not None and rps:
                    limits.requests.push_back(pause, now, rps)
            if tokens_delta and limits.tokens is not None and tps:
                limits.tokens.refill(now, tps)
                limits.tokens.level -= tokens_delta

    def snapshot(self, key: str, now: float | None = None) -> dict[str, Any]:
        """The key's configured and effective limits, for logs and tests."""
        now = time.monotonic() if now is None else now
        with self._lock:
            limits = self._key(key)
            rps, tps = self._rates(limits, now)
            return {
                "key": key,
                "rpm": limits.rpm,
                "tpm": limits.tpm,
                "effective_rpm": None if rps is None else rps * 60.0,
                "effective_tpm": None if tps is None else tps * 60.0,
                "factor": max(self.min_factor, limits.current_factor(now, self.recovery_seconds)),
                "headroom": self.headroom,
                "blocked_for": max(0.0, limits.blocked_until - now),
                "rate_limited_reports": limits.rate_limited_reports,
                "reservations": limits.reservations,
            }


class RateLimiterActor:
    """The cluster's limiter: one `LimiterState` behind an async Ray actor (never sleeps)."""

    def __init__(self, **settings: Any) -> None:
        self.state = LimiterState(**settings)

    async def reserve(self, key: str, requests: float = 1, tokens: float = 0) -> float:
        return self.state.reserve(key, requests, tokens)

    async def reserve_at(self, key: str, requests: float = 1, tokens: float = 0) -> tuple[float, float]:
        """(wait, wall-clock time the reservation is due): callers sleep until the absolute time,
        so the reply's own latency does not shift (and bunch) their slot."""
        wait = self.state.reserve(key, requests, tokens)
        return wait, time.time() + wait

    async def report(self, key: str, rate_limited: bool = False, retry_after: float | None = None,
                     tokens_delta: float = 0, announced_rpm: float | None = None) -> None:  # fmt: skip
        self.state.report(key, rate_limited, retry_after, tokens_delta=tokens_delta,
                          announced_rpm=announced_rpm)  # fmt: skip

    async def configure(self, key: str, rpm: float | None, tpm: float | None, burst_seconds: float,
                        if_unset: bool = False) -> None:  # fmt: skip
        self.state.configure(key, rpm, tpm, burst_seconds, if_unset=if_unset)

    async def snapshot(self, key: str) -> dict[str, Any]:
        return self.state.snapshot(key)


_LOCAL_LOCK = threading.Lock()


def _ray_initialized() -> bool:
    ray = sys.modules.get("ray")
    return bool(ray is not None and ray.is_initialized())


HEAD_RESOURCE = "node:__internal_head__"


def _actor_handle(name: str, namespace: str, settings: dict[str, Any]) -> Any:
    import ray

    remote_cls = ray.remote(RateLimiterActor)
    # On the head node: a worker host that vanishes (spot) must not take the limiter with it.
    placement = {"resources": {HEAD_RESOURCE: 0.001}} if ray.cluster_resources().get(HEAD_RESOURCE) else {}
    return remote_cls.options(
        name=name, namespace=namespace, get_if_exists=True, lifetime="detached", num_cpus=0, **placement,
    ).remote(**settings)  # fmt: skip


class LimiterClient:
    """What callers hold. Picklable: ship it to Ray workers; each resolves the actor itself.

    Args:
        name: the actor's name (one limiter per name across the cluster).
        namespace: the Ray namespace the actor lives in.
        local: force the in-process state (True) or the actor (False); None decides at first use
            (the actor when Ray is initialized in this process).
        settings: `LimiterState` settings, used only by whoever creates the state first
            (`headroom` defaults to DEFAULT_HEADROOM here).
    """

    def __init__(self, name: str = DEFAULT_NAME, namespace: str = NAMESPACE, *,
                 local: bool | None = None, late_tolerance: float = 0.1, **settings: Any) -> None:  # fmt: skip
        self.name = name
        self.namespace = namespace
        self.local = local
        self.late_tolerance = late_tolerance
        self.settings = {"headroom": DEFAULT_HEADROOM, **settings}
        self.missed_slots = 0
        self._handle: Any = None
        self._state: LimiterState | None = None
        self._configured: dict[str, tuple[float | None, float | None, float, bool]] = {}
        """Limits this client (or the driver it was copied from) set: replayed on a new actor."""

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_handle": None, "_state": None}

    def _resolve(self) -> tuple[LimiterState | None, Any]:
        if self._state is None and self._handle is None:
            use_local = (not _ray_initialized()) if self.local is None else self.local
            if use_local:
                with _LOCAL_LOCK:
                    state = PROCESS_STATE.limiter_states.get(self.name)
                    if state is None:
                        state = PROCESS_STATE.limiter_states[self.name] = LimiterState(**self.settings)
                self._state = state
            else:
                self._handle = _actor_handle(self.name, self.namespace, self.settings)
        return self._state, self._handle

    async def reserve(self, key: str, requests: float = 1, tokens: float = 0) -> float:
        """Reserve capacity and return the wait, without sleeping."""
        state, _ = self._resolve()
        if state is not None:
            return state.reserve(key, requests, tokens)
        return await self._remote("reserve", key, requests, tokens)

    async def _reserve_at(self, key: str, requests: float, tokens: float) -> tuple[float, float]:
        state, _ = self._resolve()
        if state is not None:
            wait = state.reserve(key, requests, tokens)
            return wait, time.time() + wait
        return await self._remote("reserve_at", key, requests, tokens)

    async def acquire(self, key: str, requests: float = 1, tokens: float = 0) -> float:
        """Reserve, then sleep locally until the reservation is due; return seconds slept.

        A caller that wakes more than `late_tolerance` after a queued slot (a stalled process, a
        slow reply) takes a fresh slot instead of firing late beside the next on-time caller
        (twice at most; the missed slot is simply lost, which errs on the safe side).
        """
        slept = 0.0
        for attempt in range(3):
            wait, due = await self._reserve_at(key, requests, tokens)
            delay = due - time.time()
            if delay > 0:
                await asyncio.sleep(delay)
                slept += delay
            if wait <= 0 or time.time() - due <= self.late_tolerance or attempt == 2:
                break
            self.missed_slots += 1
        return slept

    async def report(self, key: str, rate_limited: bool = False, retry_after: float | None = None, *,
                     tokens_delta: float = 0, announced_rpm: float | None = None) -> None:  # fmt: skip
        """Tell the limiter about a 429 / rate-limit header / actual token use (see LimiterState)."""
        state, _ = self._resolve()
        if state is not None:
            state.report(key, rate_limited, retry_after, tokens_delta=tokens_delta,
                         announced_rpm=announced_rpm)  # fmt: skip
            return
        await self._remote("report", key, rate_limited, retry_after, tokens_delta, announced_rpm)

    async def configure(self, key: str, rpm: float | None = None, tpm: float | None = None, *,
                        burst_seconds: float = DEFAULT_BURST_SECONDS, if_unset: bool = False) -> None:  # fmt: skip
        """Set a key's limits (None: unlimited). New limits reset its buckets; the same ones keep
        them. `if_unset`: only if the key has no limits yet (defaults that never override).
        `burst_seconds`: the bucket's size in seconds of the rate (see DEFAULT_BURST_SECONDS)."""
        if not (if_unset and key in self._configured):
            self._configured[key] = (rpm, tpm, burst_seconds, if_unset)
        state, _ = self._resolve()
        if state is not None:
            state.configure(key, rpm, tpm, burst_seconds, if_unset=if_unset)
            return
        await self._remote("configure", key, rpm, tpm, burst_seconds, if_unset)

    async def snapshot(self, key: str) -> dict[str, Any]:
        """The key's configured and effective limits."""
        state, _ = self._resolve()
        if state is not None:
            return state.snapshot(key)
        return await self._remote("snapshot", key)

    async def _remote(self, method: str, *args: Any) -> Any:
        """Call the actor; if it died (its node lost, or killed), get-or-create it again and give
        it back the limits this client knows of, then call once more."""
        from ray.exceptions import RayActorError

        for attempt in range(2):
            _, handle = self._resolve()
            try:
                return await getattr(handle, method).remote(*args)
            except RayActorError:
                if attempt:
                    raise
                self._handle = None
                _, handle = self._resolve()
                ordered = sorted(self._configured.items(), key=lambda kv: kv[1][3])  # explicit limits first
                for key, (rpm, tpm, burst, if_unset) in ordered:
                    await handle.configure.remote(key, rpm, tpm, burst, if_unset)
        raise AssertionError("unreachable")
