"""What the HTTP layer and the LLM gateway need from a rate limiter.

`cluster.rate_limiter.LimiterClient` implements it (clients/ does not import cluster/; whoever
wires a run passes one in). `None` where a limiter is accepted means: no client-side limit.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["Limiter"]


@runtime_checkable
class Limiter(Protocol):
    """A cluster-wide limiter keyed by source / API key / model."""

    async def acquire(self, key: str, requests: float = 1, tokens: float = 0) -> float:
        """Wait (locally) until the request may be sent; return seconds waited."""
        ...

    async def report(self, key: str, rate_limited: bool = False, retry_after: float | None = None, *,
                     tokens_delta: float = 0, announced_rpm: float | None = None) -> None:  # fmt: skip
        """Tell the limiter what the response said."""
        ...

    async def configure(self, key: str, rpm: float | None = None, tpm: float | None = None, *,
                        burst_seconds: float = 1.0, if_unset: bool = False) -> None:  # fmt: skip
        """Set a key's limits."""
        ...
