"""Fair sharing of a checker replica's workers between clients (no Ray: `checkers.service` uses it
in its Serve deployment; kept apart so it is importable and testable without Ray Serve)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from checkers.request_limits import RequestRejected


class QueueWaitExceeded(RequestRejected):
    """A check waited longer than `max_queue_wait_s` for a worker: answered 429 with Retry-After."""

    def __init__(self, waited_s: float, limit_s: float, retry_after_s: int) -> None:
        super().__init__(429, f"waited {waited_s:.1f}s for a worker, over the limit of {limit_s:g}s "
                              f"(max_queue_wait_s); retry after {retry_after_s}s")  # fmt: skip
        self.limit = "max_queue_wait_s"
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class ClientId:
    """Who a check belongs to, for fairness: the API key if one was sent, else the peer address.

    Keys are not authenticated, so a client could mint one per request; `address` keeps such a
    client's requests together when the scheduler decides whose turn it is. The key is held only
    as a short hash, so it never reaches stats or logs."""

    address: str
    key_hash: str | None = None

    @property
    def name(self) -> str:
        return f"key:{self.key_hash}" if self.key_hash else f"addr:{self.address}"

    @classmethod
    def from_headers(cls, address: str, headers: Any) -> ClientId:
        key = headers.get("x-api-key") or headers.get("authorization")
        if not key:
            return cls(address)
        return cls(address, hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:16])


HANDLE_CLIENT = ClientId("handle")
"""Callers through a deployment handle (inside the cluster) share one identity."""


@dataclass
class _ClientState:
    running: int = 0
    waiting: deque[tuple[int, asyncio.Future[None]]] = field(default_factory=deque)


class FairScheduler:
    """Worker slots shared fairly between clients: `slots` in all, at most `per_client` per client.

    A slot that frees goes to the waiting client with the fewest running checks from its address,
    then the fewest of its own, then the one that asked first. A client's surplus checks therefore
    wait behind its own, never in front of another client's; a flood of one client cannot hold
    a newcomer back by more than one running check. A check that waits longer than `max_wait`
    is refused (`QueueWaitExceeded`) so a flood sheds load instead of growing a queue."""

    def __init__(self, slots: int, per_client: int, retry_after_s: int) -> None:
        self.slots = slots
        self.free = slots
        self.per_client = per_client
        self.retry_after_s = retry_after_s
        self.rejected = 0
        self._clients: dict[ClientId, _ClientState] = {}
        self._sequence = itertools.count()

    def _running_at(self, address: str) -> int:
        return sum(state.running for client, state in self._clients.items() if client.address == address)

    def _dispatch(self) -> None:
        while self.free > 0:
            ready = [(self._running_at(c.address), s.running, s.waiting[0][0], c)
                     for c, s in self._clients.items() if s.waiting and s.running < self.per_client]  # fmt: skip
            if not ready:
                return
            client = min(ready, key=lambda row: row[:3])[3]
            state = self._clients[client]
            _, granted = state.waiting.popleft()
            granted.set_result(None)
            state.running += 1
            self.free -= 1

    def _forget_if_idle(self, client: ClientId) -> None:
        state = self._clients.get(client)
        if state is not None and state.running == 0 and not state.waiting:
            del self._clients[client]  # bounded state however many identities a client invents

    def release(self, client: ClientId) -> None:
        self._clients[client].running -= 1
        self.free += 1
        self._forget_if_idle(client)
        self._dispatch()

    async def acquire(self, client: ClientId, max_wait: float | None) -> None:
        """Wait for a slot; QueueWaitExceeded after `max_wait` seconds (None: wait as long as it takes)."""
        state = self._clients.setdefault(client, _ClientState())
        entry = (next(self._sequence), asyncio.get_running_loop().create_future())
        state.waiting.append(entry)
        self._dispatch()
        granted = entry[1]
        started = time.monotonic()
        try:
            await asyncio.wait([granted], timeout=max_wait)
        except asyncio.CancelledError:
            self._give_up(client, entry)
            raise
        if not granted.done():
            self._give_up(client, entry)
            self.rejected += 1
            raise QueueWaitExceeded(time.monotonic() - started, max_wait or 0.0, self.retry_after_s)

    def _give_up(self, client: ClientId, entry: tuple[int, asyncio.Future[None]]) -> None:
        """Leave the queue; a slot granted in the meantime is handed on."""
        state = self._clients[client]
        if entry[1].done():
            self.release(client)
            return
        entry[1].cancel()
        state.waiting.remove(entry)
        self._forget_if_idle(client)

    @contextlib.asynccontextmanager
    async def slot(self, client: ClientId, max_wait: float | None) -> AsyncIterator[None]:
        await self.acquire(client, max_wait)
        try:
            yield
        finally:
            self.release(client)

    def snapshot(self) -> dict[str, Any]:
        """Counts only: /health is unauthenticated, so no addresses or key hashes."""
        return {"free": self.free, "clients": len(self._clients),
                "waiting": sum(len(s.waiting) for s in self._clients.values())}  # fmt: skip
