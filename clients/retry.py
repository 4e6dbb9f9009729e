"""The one retry policy for every client: tenacity, jittered exponential backoff.

Retries `TransientError` (timeouts, 5xx, connection errors, and its subclass `RateLimitedError`);
never retries `FatalError`, `SourceOutageError`, `CacheMissError` or `ParseError`. A server's
`Retry-After` is honoured up to `retry_after_cap` (a provider that says "come back in an hour" gets
the cap, then the error surfaces), so a caller is never parked unboundedly.

Adapters classify errors (`clients/errors.py`); only this module decides to try again. Use:

    policy = RetryPolicy(max_attempts=5)
    record = await policy.call(fetch_once, url)          # fetch_once raises ClientError types
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
)

from clients.errors import RateLimitedError, TransientError

__all__ = ["RetryPolicy", "backoff_seconds"]

T = TypeVar("T")


def backoff_seconds(
    attempt: int,
    error: BaseException | None,
    *,
    base_wait: float,
    max_wait: float,
    retry_after_cap: float,
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait before retry number `attempt` (1 = first retry) after `error`.

    `RateLimitedError` with `retry_after`: that many seconds (capped) plus up to 10% jitter, so
    workers told the same Retry-After do not return in lockstep. Otherwise "full jitter"
    exponential: uniform in [0, min(max_wait, base_wait * 2**(attempt-1))].
    """
    rnd = rng or random
    if isinstance(error, RateLimitedError) and error.retry_after is not None:
        wait = min(max(error.retry_after, 0.0), retry_after_cap)
        return wait + rnd.uniform(0.0, 0.1 * max(wait, base_wait))
    ceiling = min(max_wait, base_wait * (2 ** max(attempt - 1, 0)))
    return rnd.uniform(0.0, ceiling)


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try a request that failed transiently."""

    max_attempts: int = 5
    """Total attempts including the first; 1 disables retries."""
    base_wait: float = 0.5
    """Ceiling of the first backoff, seconds; doubles per attempt (full jitter)."""
    max_wait: float = 30.0
    """Largest backoff ceiling, seconds."""
    retry_after_cap: float = 60.0
    """Longest wait honoured from a server's Retry-After, seconds."""
    deadline: float | None = None
    """Give up after this many seconds in total (None: only `max_attempts` bounds it)."""

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        return backoff_seconds(
            state.attempt_number, error,
            base_wait=self.base_wait, max_wait=self.max_wait, retry_after_cap=self.retry_after_cap,
        )  # fmt: skip

    def retrying(self, sleep: Callable[[float], Awaitable[Any]] | None = None) -> AsyncRetrying:
        """A fresh tenacity `AsyncRetrying` implementing this policy (re-raises the last error)."""
        stop = stop_after_attempt(self.max_attempts)
        if self.deadline is not None:
            stop = stop | stop_after_delay(self.deadline)
        kwargs: dict[str, Any] = {}
        if sleep is not None:
            kwargs["sleep"] = sleep
        return AsyncRetrying(
            retry=retry_if_exception_type(TransientError),
            wait=self._wait,
            stop=stop,
            reraise=True,
            **kwargs,
        )

    async def call(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """Await `fn(*args, **kwargs)` under this policy; the last error propagates unchanged."""
        return await self.retrying()(fn, *args, **kwargs)
